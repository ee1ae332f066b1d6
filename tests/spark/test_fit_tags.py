"""The benchmarks' per-fit tags hold in a CrossValidator's threads: pyspark's ``inheritable_thread_target`` hands
every thread of a pool one local-properties object, so a job group or stock pool set in place by one fit named its
sibling fits' Spark jobs too (their work was recorded as the last-tagged fit's, and they shared its FAIR pool)."""

from __future__ import annotations

import threading
from multiprocessing.pool import ThreadPool

from srlab.slaq_bench.configs import POOL_PROPERTY, stock_pool, stock_pool_name
from srlab.slaq_bench.fit_timing import restore_tag, tag_thread


def test_sibling_threads_of_a_pool_each_keep_their_own_fit_tag_and_stock_pool(spark):
    from pyspark import inheritable_thread_target

    sc = spark.sparkContext
    both_tagged = threading.Barrier(2, timeout=60)

    def fit(i: int) -> tuple[str | None, str | None]:
        previous = tag_thread(sc, f"sibling-{i}")
        try:
            with stock_pool(sc, i):
                both_tagged.wait()  # the other thread has set its tags too, before either submits
                sc.parallelize(range(2), 2).count()
                return sc.getLocalProperty("spark.jobGroup.id"), sc.getLocalProperty(POOL_PROPERTY)
        finally:
            restore_tag(sc, previous)

    wrapped = inheritable_thread_target(spark)  # one properties object for both threads, as CrossValidator's
    with ThreadPool(2) as pool:
        seen = pool.map(lambda i: wrapped(fit)(i), [0, 1], chunksize=1)
    assert seen == [("sibling-0", stock_pool_name(0)), ("sibling-1", stock_pool_name(1))]
    tracker = sc.statusTracker()
    assert [len(tracker.getJobIdsForGroup(f"sibling-{i}")) for i in (0, 1)] == [1, 1]
    assert sc.getLocalProperty("spark.jobGroup.id") is None and sc.getLocalProperty(POOL_PROPERTY) is None
