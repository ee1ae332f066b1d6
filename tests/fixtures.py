"""Shared fakes and helpers of the tests (imported by test modules; fixtures stay in conftest files)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from riffle.shuffle.layout import DEFAULT_SUB_DIRS, block_file_path, data_file_name, encode_index, index_file_name

# The JVMs the tests start (a driver and its executors, a History Server, javac) live for seconds to minutes and spend
# most of their start-up CPU in the C2 JIT compiler, for code they then barely run. Stopping at C1 halves their CPU (a
# spark-sql query on local-cluster: 42 -> 20 s user; the small mllib bench's executors: 193 -> 146 s wall) and on a
# 2-core machine the wall time with it; what they do is the same. tests/conftest.py puts it in SPARK_SUBMIT_OPTS (every
# driver spark-submit starts, pyspark's gateway among them) and, as QUICK_DEFAULTS, in the spark-defaults.conf of the
# run's SPARK_CONF_DIR (every application's executors); a test with a conf dir of its own writes QUICK_DEFAULTS there.
QUICK_JVM = "-XX:TieredStopAtLevel=1"
QUICK_DEFAULTS = f"spark.executor.extraJavaOptions {QUICK_JVM}\n"


def ends(stderr: str, each: int = 1500) -> str:
    """A failed command's stderr for an assertion message: its start, where spark-submit and the JVM say why they
    stopped (a gateway that "exited before sending its port number" says nothing more), and its end, the traceback."""
    return stderr if len(stderr) <= 2 * each else f"{stderr[:each]}\n[...]\n{stderr[-each:]}"


def stop_child(proc: subprocess.Popen, timeout: float = 60) -> None:
    """Ends a child driver the tests started with a stdin pipe: closing stdin is its cue to stop; killed past ``timeout``."""
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def write_map_output(local_dirs: list[str], shuffle_id: int, map_id: int, blocks: list[bytes], sub_dirs: int = DEFAULT_SUB_DIRS) -> tuple[Path, Path]:
    """Write a map output in Spark's format at Spark's path, as a map task does."""
    data = block_file_path(local_dirs, data_file_name(shuffle_id, map_id), sub_dirs)
    index = block_file_path(local_dirs, index_file_name(shuffle_id, map_id), sub_dirs)
    for path in (data, index):
        path.parent.mkdir(parents=True, exist_ok=True)
    with open(data, "wb") as fh:
        for block in blocks:
            fh.write(block)
    index.write_bytes(encode_index([len(b) for b in blocks]))
    return data, index


def make_outputs(dirs, shuffle_id, maps, partitions, seed=0, sizes=(0, 1, 17, 300, 4096, 70000)):
    """Random map outputs (block sizes drawn from ``sizes``); returns {map_id: [block bytes]}."""
    import random

    rng = random.Random(seed)
    blocks = {}
    for m in maps:
        blocks[m] = [os.urandom(rng.choice(sizes)) for _ in range(partitions)]
        write_map_output(dirs, shuffle_id, m, blocks[m])
    return blocks


def all_files(root: Path) -> set[str]:
    """Files under ``root`` except the daemon's own state and logs."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.relative_to(root).parts[0].startswith((".riffle", ".merger-"))}


class FakeClock:
    """A clock the test moves by hand (``clock.now``), for anything that takes a ``clock`` callable."""

    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakePools:
    """The shim's pools as the epoch loop sees them (4 cores, nothing drained), for unit tests only; the Spark tests use the real shim."""

    def __init__(self):
        self.deposits = []

    def drain(self):
        return [], {}

    def deposit(self, alloc, seconds, new_epoch=True, ranks=None):
        self.deposits.append(dict(alloc))

    def open_all(self, reason):
        pass

    def resume(self):
        pass

    def capacity(self):
        return 4.0


def linear_labels(spark, rows: int, weights, seed: int, partitions: int | None = None):
    """A (label, features) DataFrame for spark.ml classifiers: ``rows`` standard-normal feature vectors, labelled 1
    where ``features @ weights`` plus unit noise is positive (learnable, never perfectly)."""
    import numpy as np
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, len(weights)))
    y = (X @ weights + rng.normal(size=rows) > 0).astype(float)
    df = spark.createDataFrame([(float(label), Vectors.dense(x)) for x, label in zip(X, y)], ["label", "features"])
    return df.repartition(partitions) if partitions else df
