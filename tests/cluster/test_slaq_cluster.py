"""SLAQ on a three-node standalone cluster through ``spark-submit --conf`` only: the start-up hook
attaches it, and the allocation is enforced with executors on all three nodes (two saturating jobs,
weights 3:1 under the fair policy in strict mode: the heavy job gets about three quarters of the
core-time the pools measured)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WARMUP, WINDOW = 4, 20  # epochs of 0.5 s: the allocation settles, then the core-seconds each job used are compared

APP = """
import json, sys, threading, time
from pyspark.sql import SparkSession
import slaq
from slaq.live.observer import LoopObserver

spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
scheduler = slaq.attach(sc)  # already attached by the start-up hook from the confs: returns it
warmup, window = int(sys.argv[1]), int(sys.argv[2])

def burn(_):
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:
        pass
    return 1

class Consumed(LoopObserver):
    \"\"\"Each job's core-seconds at every epoch's drain since both jobs run (the loop's thread, after the deposit).\"\"\"
    def __init__(self, epochs):
        self.rows, self.epochs, self.done = [], epochs, threading.Event()
    def before_status(self):
        jobs = scheduler.loop.jobs
        if "heavy" in jobs and "light" in jobs and not self.done.is_set():
            self.rows.append({n: jobs[n].consumed for n in ("heavy", "light")})
            if len(self.rows) > self.epochs:
                self.done.set()

stop = threading.Event()

def work(name, weight):
    with slaq.job(name, weight=weight):
        while not stop.is_set():
            sc.parallelize(range(12), 12).map(burn).count()

sc.parallelize(range(6), 6).map(burn).count()  # every executor and Python worker up
consumed = Consumed(warmup + window)
scheduler.loop.observers.append(consumed)
threads = [threading.Thread(target=work, args=(n, w)) for n, w in (("heavy", 3.0), ("light", 1.0)) for _ in range(2)]
for t in threads:
    t.start()
finished = consumed.done.wait(120)
stop.set()
for t in threads:
    t.join(60)
start, end = (consumed.rows[warmup], consumed.rows[warmup + window]) if finished else ({}, {})  # not finished: reported
hosts = sorted({h.split(":")[0] for h in sc._jsc.sc().getExecutorMemoryStatus().keySet().toString().strip("Set()").split(", ")})
print("RESULT " + json.dumps({"enabled": scheduler.enabled, "finished": finished, "used": {n: end[n] - start[n] for n in end},
                              "hosts": hosts, "epochs": scheduler.loop.epochs}))
spark.stop()
"""


def test_spark_submit_conf_only_attaches_and_enforces(cluster, shared_app, tmp_path):
    shared_app.stop()  # the cluster's cores for this application
    app = tmp_path / "app.py"
    app.write_text(APP)
    submit = Path(sys.executable).parent / "spark-submit"
    confs = cluster.layout.driver_conf(riffle=False) | {
        "spark.ui.enabled": "false", "spark.scheduler.mode": "FAIR", "spark.slaq.enabled": "true", "spark.slaq.policy": "fair",
        "spark.slaq.workConserving": "false", "spark.slaq.epoch": "0.5s"}
    master = confs.pop("spark.master")
    args = [str(submit), "--master", master]
    for k, v in confs.items():
        args += ["--conf", f"{k}={v}"]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run(args + [str(app), str(WARMUP), str(WINDOW)], capture_output=True, text=True, timeout=300, env=env)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stderr[-4000:]
    out = json.loads(line[len("RESULT "):])
    assert out["enabled"] and out["finished"] and out["epochs"] > WARMUP + WINDOW
    assert set(out["hosts"]) >= {n.host for n in cluster.layout.nodes}, out["hosts"]
    used = out["used"]
    share = used["heavy"] / (used["heavy"] + used["light"])
    assert 0.65 <= share <= 0.85, used  # target 0.75
