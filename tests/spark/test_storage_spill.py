"""On real Spark: cached blocks that do not fit storage memory go to disk, memory_blocks_on_disk sees
them, and a SLAQ runtime with two jobs running logs the spill warning once.

Its own subprocess and session: storage memory is made tiny (``spark.memory.fraction``) so a few MB of
cached random doubles cannot fit, which the suite's shared session must not be."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.fixtures import ends

SCRIPT = r"""
import json, logging, threading, time
from pyspark import StorageLevel
import slaq
from srsupport.session import spark_session
from slaq.live.storage import memory_blocks_on_disk

logging.basicConfig(level=logging.WARNING)
conf = {"spark.scheduler.mode": "FAIR", "spark.slaq.enabled": "true", "spark.slaq.epoch": "0.1s", "spark.memory.fraction": "0.02"}
with spark_session("slaq-storage-spill", "local-cluster[1,1,1024]", conf) as spark:
    runtime = slaq.attach(spark)
    out = {"before": memory_blocks_on_disk(spark.sparkContext)}
    big = spark.range(3_000_000, numPartitions=3).selectExpr("rand(1) AS a", "rand(2) AS b").persist(StorageLevel.MEMORY_AND_DISK)
    big.count()
    out["on_disk"] = memory_blocks_on_disk(spark.sparkContext)
    release = threading.Event()

    def hold(name):
        with slaq.job(name):
            release.wait(60)

    threads = [threading.Thread(target=hold, args=(f"spill-{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while runtime.storage.warned is None and time.monotonic() < deadline:
        time.sleep(0.1)
    release.set()
    for t in threads:
        t.join()
    out["warned"] = runtime.storage.warned
    runtime.stop()
print(json.dumps(out))
"""


def test_a_real_spill_is_seen_and_warned_about_once():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, ends(proc.stderr)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["before"] == 0
    assert out["on_disk"] > 8 * 1024 * 1024, out  # ~48 MB of doubles vs ~14 MB of storage memory
    assert out["warned"] is not None and "2 SLAQ jobs" in out["warned"], out
    assert proc.stderr.count("cached data no longer fits") == 1, proc.stderr[-3000:]
