"""``spark-submit --conf spark.riffle.enabled=true app.py`` merges with no change to the app (the
start-up hook from scripts/setup.sh attaches Riffle when the SparkContext starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkshim.starthook import PTH_NAME
from srsupport.daemons import DaemonProcess

APP = """
from operator import add
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
rdd = sorted(sc.parallelize(range(4000), 12).map(lambda x: (x % 41, x)).reduceByKey(add, 6).collect())
spark.conf.set("spark.sql.adaptive.enabled", "false")
sql = sorted(tuple(r) for r in spark.range(0, 20000, 1, 12).selectExpr("id % 53 as k").groupBy("k").count().collect())
import riffle.runtime  # only to read what happened; the app never calls riffle
from srsupport.riffle_watch import wait_idle
scheduler = riffle.runtime.current().scheduler
wait_idle(scheduler, 60)
committed = sum(s.merges_committed for s in scheduler.settled.values())
print("RESULT " + __import__("json").dumps({"rdd": rdd, "sql": sql, "committed": committed}))
spark.stop()
"""


def test_spark_submit_with_only_confs(tmp_path):
    import sysconfig

    if not (Path(sysconfig.get_paths()["purelib"]) / PTH_NAME).exists():
        pytest.fail("the start-up hook is not installed; scripts/setup.sh installs it (python -m sparkshim.autoload install)")
    local = tmp_path / "local"
    local.mkdir()
    app = tmp_path / "app.py"
    app.write_text(APP)
    merger = DaemonProcess([local])
    try:
        submit = Path(sys.executable).parent / "spark-submit"
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        proc = subprocess.run([str(submit), "--master", "local-cluster[2,1,1024]", "--conf", f"spark.local.dir={local}",
                               "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=12",  # not 200 (still the bypass writer)
                               "--conf", "spark.riffle.enabled=true",
                               "--conf", f"spark.riffle.mergers={merger.address}", "--conf", "spark.riffle.nway=3",
                               "--conf", "spark.riffle.cost.enabled=false",
                               # not Spark's default 64: the mergers must find and place files where these executors hash them
                               "--conf", "spark.diskStore.subDirectories=16", str(app)],
                              capture_output=True, text=True, timeout=300, env=env)
    finally:
        merger.stop()
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stderr[-3000:]
    out = json.loads(line[len("RESULT "):])
    assert dict(out["rdd"]) == {k: sum(x for x in range(4000) if x % 41 == k) for k in range(41)}
    assert sorted(map(tuple, out["sql"])) == sorted((k, len(range(k, 20000, 53))) for k in range(53))
    assert out["committed"] > 0
