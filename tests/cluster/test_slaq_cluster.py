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

APP = """
import json, threading, time
from pyspark.sql import SparkSession
import slaq

spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
scheduler = slaq.attach(sc)  # already attached by the start-up hook from the confs: returns it

def burn(_):
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:
        pass
    return 1

stop = threading.Event()

def work(name, weight):
    with slaq.job(name, weight=weight):
        while not stop.is_set():
            sc.parallelize(range(12), 12).map(burn).count()

sc.parallelize(range(6), 6).map(burn).count()  # every executor and Python worker up
threads = [threading.Thread(target=work, args=(n, w)) for n, w in (("heavy", 3.0), ("light", 1.0)) for _ in range(2)]
for t in threads:
    t.start()
time.sleep(6)
jobs = scheduler.loop.jobs
start = {n: jobs[n].consumed for n in ("heavy", "light")}
time.sleep(12)
end = {n: jobs[n].consumed for n in ("heavy", "light")}
stop.set()
for t in threads:
    t.join(60)
hosts = sorted({h.split(":")[0] for h in sc._jsc.sc().getExecutorMemoryStatus().keySet().toString().strip("Set()").split(", ")})
print("RESULT " + json.dumps({"enabled": scheduler.enabled, "used": {n: end[n] - start[n] for n in end}, "hosts": hosts,
                              "epochs": scheduler.loop.epochs}))
spark.stop()
"""


def test_spark_submit_conf_only_attaches_and_enforces(cluster, tmp_path):
    app = tmp_path / "app.py"
    app.write_text(APP)
    submit = Path(sys.executable).parent / "spark-submit"
    confs = cluster.layout.driver_conf(riffle=False) | {
        "spark.ui.enabled": "false", "spark.scheduler.mode": "FAIR", "spark.slaq.enabled": "true", "spark.slaq.policy": "fair",
        "spark.slaq.workConserving": "false", "spark.slaq.epoch": "1s"}
    master = confs.pop("spark.master")
    args = [str(submit), "--master", master]
    for k, v in confs.items():
        args += ["--conf", f"{k}={v}"]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run(args + [str(app)], capture_output=True, text=True, timeout=300, env=env)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stderr[-4000:]
    out = json.loads(line[len("RESULT "):])
    assert out["enabled"] and out["epochs"] > 5
    assert set(out["hosts"]) >= {n.host for n in cluster.layout.nodes}, out["hosts"]
    used = out["used"]
    share = used["heavy"] / (used["heavy"] + used["light"])
    assert 0.65 <= share <= 0.85, used  # target 0.75
