"""The benchmarks' per-fit tags hold in a CrossValidator's threads: pyspark's ``inheritable_thread_target`` hands
every thread of a pool one local-properties object, so a job group or stock pool set in place by one fit named its
sibling fits' Spark jobs too (their work was recorded as the last-tagged fit's, and they shared its FAIR pool)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from multiprocessing.pool import ThreadPool
from typing import Any

from srlab.slaq_bench.configs import POOL_PROPERTY, stock_pool, stock_pool_name
from srlab.slaq_bench.fit_timing import restore_tag, tag_thread


def _siblings(spark: Any, fit: Callable[[int, threading.Barrier, threading.Barrier], Any]) -> list[Any]:
    """``fit(i, tagged, read)`` in two threads of one ``inheritable_thread_target`` (one properties object for
    both, as CrossValidator's): ``tagged`` holds each until both have set their tags, ``read`` until both have
    read them and submitted, so neither can put its tags back while the other still uses them."""
    from pyspark import inheritable_thread_target

    tagged, read = threading.Barrier(2, timeout=60), threading.Barrier(2, timeout=60)
    wrapped = inheritable_thread_target(spark)
    with ThreadPool(2) as pool:
        return pool.map(lambda i: wrapped(fit)(i, tagged, read), [0, 1], chunksize=1)


def test_sibling_threads_of_a_pool_each_keep_their_own_fit_tag(spark):
    sc = spark.sparkContext

    def fit(i: int, tagged: threading.Barrier, read: threading.Barrier) -> str | None:
        previous = tag_thread(sc, f"sibling-{i}")
        try:
            tagged.wait()
            sc.parallelize(range(2), 2).count()
            group = sc.getLocalProperty("spark.jobGroup.id")
            read.wait()
            return group
        finally:
            restore_tag(sc, previous)

    assert _siblings(spark, fit) == ["sibling-0", "sibling-1"]
    tracker = sc.statusTracker()
    assert [len(tracker.getJobIdsForGroup(f"sibling-{i}")) for i in (0, 1)] == [1, 1]


def test_sibling_threads_of_a_pool_each_keep_their_own_stock_pool(spark):
    sc = spark.sparkContext

    def fit(i: int, tagged: threading.Barrier, read: threading.Barrier) -> str | None:
        with stock_pool(sc, i):
            tagged.wait()
            pool = sc.getLocalProperty(POOL_PROPERTY)
            read.wait()
            return pool

    assert _siblings(spark, fit) == [stock_pool_name(0), stock_pool_name(1)]
