"""Riffle on a three-node standalone cluster, driver configured by confs only (token + TLS to every
merger): results identical to vanilla Spark with Spark's default shuffle writer settings, merges
committed on more than one node; with the external shuffle service and dynamic allocation, merged outputs
outlive the executors that wrote them. (One node's merger down from the application's start, only that node
unmerged: test_node_failures.py, in its application before it kills nodes.)"""

from __future__ import annotations

import time
from operator import add

import pytest

import riffle
from srsupport.riffle_watch import mark_all_up
from tests.cluster.support import cluster_session, compare, run, sql_ops


def key_ordered(pairs: list) -> list:
    """A sortByKey result, checked for key order; values of equal keys come in fetch order, which Spark
    does not define (merging changes it, as would any other fetch timing), so they are compared as a set."""
    assert [k for k, _ in pairs] == sorted(k for k, _ in pairs)
    return sorted(pairs)


RDD_OPS = {
    "reduceByKey": lambda sc: sorted(sc.parallelize(range(6000), 12).map(lambda x: (x % 37, x)).reduceByKey(add, 7).collect()),
    "groupByKey": lambda sc: sorted((k, sorted(v)) for k, v in sc.parallelize(range(6000), 12).map(lambda x: (x % 11, x)).groupByKey(5).collect()),
    "sortByKey": lambda sc: key_ordered(sc.parallelize(range(6000), 12).map(lambda x: ((x * 7919) % 3001, x)).sortByKey(numPartitions=6).collect()),
    "join": lambda sc: sorted(sc.parallelize(range(6000), 12).map(lambda x: (x % 50, x))
                              .join(sc.parallelize([(k, f"v{k}") for k in range(0, 60, 2)], 12), 5).collect()),
}


class TestTokenAndTls:
    """Default shuffle writer settings (no bypassMergeThreshold override), token + TLS to every merger; in the
    package's shared application (after the fault matrix's cases when they ran: tests/cluster/conftest.py)."""

    @pytest.fixture(scope="class")
    @classmethod
    def session(cls, shared_app):
        spark, scheduler = shared_app.get()
        mark_all_up(scheduler.fleet)  # every merger serves again (restarted after the fault matrix's cases)
        return spark, scheduler

    @pytest.mark.parametrize("op", sorted(RDD_OPS))
    def test_rdd(self, cluster, session, op):
        spark, scheduler = session
        _, hosts = compare(cluster, scheduler, lambda: RDD_OPS[op](spark.sparkContext))
        assert len(hosts) > 1, f"merges committed only on {hosts}"

    @pytest.mark.parametrize("aqe", ["true", "false"])
    def test_sql(self, cluster, session, aqe):
        spark, scheduler = session
        with sql_ops(spark, aqe) as ops:
            for name, fn in ops.items():
                _, hosts = compare(cluster, scheduler, fn)
                assert len(hosts) > 1, f"{name}: merges committed only on {hosts}"


class TestShuffleServiceDynamicAllocation:
    """External shuffle service and dynamic allocation: idle executors are removed after 2 s while the
    merged outputs they wrote are still to be read."""

    @pytest.fixture(scope="class")
    @classmethod
    def session(cls, cluster, shared_app):
        shared_app.stop()  # the cluster's cores for this application
        conf = {"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.minExecutors": "0",
                "spark.dynamicAllocation.initialExecutors": "3", "spark.dynamicAllocation.executorIdleTimeout": "2s",
                "spark.dynamicAllocation.shuffleTracking.enabled": "false"}
        with cluster_session(cluster, "riffle-cluster-dynamic", conf) as spark:
            scheduler = riffle.attach(spark).scheduler
            assert scheduler is not None
            yield spark, scheduler

    def test_merged_outputs_outlive_removed_executors(self, cluster, session):
        spark, scheduler = session
        sc = spark.sparkContext
        rdd = sc.parallelize(range(6000), 12).map(lambda x: (x % 43, x)).reduceByKey(add, 6)
        # 12 maps on at most three executors: one of them writes >= 3 outputs, a full 3-way group
        first, stats = run(scheduler, lambda: sorted(rdd.collect()), True)
        assert any(s.merges_committed > 0 for s in stats)
        deadline = time.monotonic() + 60  # idle executors are removed; the shuffle service keeps their files
        while sc._jsc.sc().getExecutorMemoryStatus().size() > 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sc._jsc.sc().getExecutorMemoryStatus().size() == 1, "dynamic allocation did not remove the idle executors"
        assert sorted(rdd.collect()) == first  # map stage skipped: reducers read merged files through the shuffle services
