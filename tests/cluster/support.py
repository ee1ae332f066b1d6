"""Helpers of the multi-node cluster tests: a driver session on the cluster, merged files per node, a job run
vanilla then merged, the SQL jobs."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from srlab.cluster import Cluster
from srlab.cluster.harness import wait_executors
from srsupport.riffle_watch import set_merging, wait_idle

__all__ = ["cluster_session", "compare", "merged_files_by_node", "run", "sql_ops", "wait_executors"]


@contextmanager
def cluster_session(cluster: Cluster, name: str, conf: dict[str, str] | None = None, riffle: bool = True):
    """A SparkSession of a driver on 127.0.0.1 using ``cluster``; Riffle attaches from the confs alone
    (the start-up hook), with the token file and TLS CA the harness made."""
    from pyspark import SparkContext

    from srsupport.session import shutdown_gateway, spark_session

    if SparkContext._active_spark_context is not None:
        pytest.fail("another SparkContext is active in this process: cluster tests must run first (see tests/conftest.py)")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver names and binds loopback only
    settings = cluster.layout.driver_conf(riffle=riffle) | {"spark.scheduler.mode": "FAIR"}
    if riffle:
        settings |= {"spark.riffle.enabled": "true", "spark.riffle.nway": "3", "spark.riffle.bestEffort": "1.0",
                     "spark.riffle.cost.enabled": "false"}  # merge every group: the tests' shuffles are too small to pay
    master = settings.pop("spark.master")
    try:
        with spark_session(name, master, settings | (conf or {})) as spark:
            spark.sparkContext.setLogLevel("WARN")
            yield spark
    finally:
        shutdown_gateway()  # later sessions in this process get a JVM of their own (see its docstring)


def merged_files_by_node(cluster: Cluster, shuffle_ids: set[int] | None = None) -> dict[str, int]:
    """Merged files (synthetic map id) of the given shuffles on each node's disk."""
    out = {}
    for node in cluster.layout.nodes:
        n = 0
        for p in Path(node.local_dir).rglob("shuffle_*_*_0.data"):
            _, sid, mid, _ = p.name.split("_")
            if int(mid) >= SYNTHETIC_MAP_ID_BASE and (shuffle_ids is None or int(sid) in shuffle_ids):
                n += 1
        out[node.host] = n
    return out


def run(scheduler, fn: Callable[[], object], merging: bool) -> tuple[object, list]:
    """``fn()`` with merging on or off, once every shuffle settled: its result and its shuffles' settled stats."""
    set_merging(scheduler, merging)
    before = set(scheduler.settled)
    result = fn()
    assert wait_idle(scheduler, 60)
    return result, [v for k, v in scheduler.settled.items() if k not in before]


def compare(cluster: Cluster, scheduler, fn: Callable[[], object]) -> tuple[object, set[str]]:
    """``fn()`` vanilla then merged; equal results, and the merged run committed merges on the nodes it returns."""
    vanilla, _ = run(scheduler, fn, False)
    merged, stats = run(scheduler, fn, True)
    assert merged == vanilla
    ids = {s.shuffle_id for s in stats if s.merges_committed > 0}
    assert ids, stats
    return merged, {host for host, n in merged_files_by_node(cluster, ids).items() if n > 0}


SQL_CONF = {"spark.sql.autoBroadcastJoinThreshold": "-1",  # sort-merge joins: two shuffles to merge
            # 12 reduce partitions, not the default 200: still at most spark.shuffle.sort.bypassMergeThreshold (200), so the
            # exchanges keep the writer of Spark's default settings (bypass merge sort), with a sixteenth of the reduce tasks
            "spark.sql.shuffle.partitions": "12"}


@contextmanager
def sql_ops(spark, aqe: str) -> Iterator[dict[str, Callable[[], list]]]:
    """A group-by and a join (sort-merge: two shuffles, then the group-by's) with AQE on or off: their confs set for
    the block, unset after it."""
    confs = SQL_CONF | {"spark.sql.adaptive.enabled": aqe}
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        left = spark.range(0, 30000, 1, 12).selectExpr("id % 97 as k", "id as v")
        right = spark.range(0, 600, 1, 12).selectExpr("id % 97 as k", "id * 2 as w")
        yield {
            "group-by": lambda: sorted(left.groupBy("k").agg({"v": "sum", "*": "count"}).collect()),
            "join": lambda: sorted(left.join(right, "k").groupBy("k").agg({"w": "sum", "v": "max"}).collect()),
        }
    finally:
        for key in confs:
            spark.conf.unset(key)
