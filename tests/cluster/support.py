"""Helpers of the multi-node cluster tests: a driver session on the cluster, merged files per node."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from srlab.cluster import Cluster
from srlab.cluster.harness import wait_executors

__all__ = ["cluster_session", "merged_files_by_node", "wait_executors"]


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
