"""Riffle on a three-node standalone cluster, driver configured by confs only (token + TLS to every
merger): results identical to vanilla Spark with Spark's default shuffle writer settings, merges
committed on more than one node; with one node's merger down from the start only that node stays
unmerged; with the external shuffle service and dynamic allocation, merged outputs outlive the
executors that wrote them."""

from __future__ import annotations

import time
from operator import add

import pytest

import riffle
from srsupport.riffle_watch import set_merging, wait_idle
from tests.cluster.support import cluster_session, merged_files_by_node, wait_executors


def run(scheduler, fn, merging: bool):
    set_merging(scheduler, merging)
    before = set(scheduler.settled)
    result = fn()
    assert wait_idle(scheduler, 60)
    return result, [v for k, v in scheduler.settled.items() if k not in before]


def compare(cluster, scheduler, fn):
    """``fn()`` vanilla then merged; equal results, and the merged run committed merges on the nodes it returns."""
    vanilla, _ = run(scheduler, fn, False)
    merged, stats = run(scheduler, fn, True)
    assert merged == vanilla
    ids = {s.shuffle_id for s in stats if s.merges_committed > 0}
    assert ids, stats
    return merged, {host for host, n in merged_files_by_node(cluster, ids).items() if n > 0}


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


def sql_ops(spark, aqe: str):
    spark.conf.set("spark.sql.adaptive.enabled", aqe)
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    left = spark.range(0, 30000, 1, 12).selectExpr("id % 97 as k", "id as v")
    right = spark.range(0, 600, 1, 12).selectExpr("id % 97 as k", "id * 2 as w")
    return {
        "group-by": lambda: sorted(left.groupBy("k").agg({"v": "sum", "*": "count"}).collect()),
        "join": lambda: sorted(left.join(right, "k").groupBy("k").agg({"w": "sum", "v": "max"}).collect()),
    }


class TestTokenAndTls:
    """Default shuffle writer settings (no bypassMergeThreshold override), token + TLS to every merger."""

    @pytest.fixture(scope="class")
    @classmethod
    def session(cls, cluster):
        with cluster_session(cluster, "riffle-cluster") as spark:
            wait_executors(spark.sparkContext, 3)
            scheduler = riffle.attach(spark).scheduler
            assert scheduler is not None, "spark.riffle.enabled=true did not attach Riffle"
            yield spark, scheduler

    @pytest.mark.parametrize("op", sorted(RDD_OPS))
    def test_rdd(self, cluster, session, op):
        spark, scheduler = session
        _, hosts = compare(cluster, scheduler, lambda: RDD_OPS[op](spark.sparkContext))
        assert len(hosts) > 1, f"merges committed only on {hosts}"

    @pytest.mark.parametrize("aqe", ["true", "false"])
    def test_sql(self, cluster, session, aqe):
        spark, scheduler = session
        try:
            for name, fn in sql_ops(spark, aqe).items():
                _, hosts = compare(cluster, scheduler, fn)
                assert len(hosts) > 1, f"{name}: merges committed only on {hosts}"
        finally:
            spark.conf.unset("spark.sql.adaptive.enabled")
            spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


class TestShuffleServiceOneMergerDown:
    """External shuffle service on, node 3's merger down from the app's start."""

    @pytest.fixture(scope="class")
    @classmethod
    def session(cls, cluster):
        cluster.stop_role("merger-3")
        try:
            with cluster_session(cluster, "riffle-cluster-ess") as spark:
                assert spark.sparkContext.getConf().get("spark.shuffle.service.enabled") == "true"
                wait_executors(spark.sparkContext, 3)
                scheduler = riffle.attach(spark).scheduler
                assert scheduler is not None
                yield spark, scheduler
        finally:
            cluster.start_merger(cluster.layout.nodes[2])

    def test_only_the_node_without_merger_stays_unmerged(self, cluster, session):
        spark, scheduler = session
        down = cluster.layout.nodes[2].host
        for fn in (lambda: RDD_OPS["reduceByKey"](spark.sparkContext), sql_ops(spark, "true")["join"]):
            _, hosts = compare(cluster, scheduler, fn)
            assert down not in hosts and len(hosts) >= 1, hosts


class TestShuffleServiceDynamicAllocation:
    """External shuffle service and dynamic allocation: idle executors are removed after 2 s while the
    merged outputs they wrote are still to be read."""

    @pytest.fixture(scope="class")
    @classmethod
    def session(cls, cluster):
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
            time.sleep(0.5)
        assert sc._jsc.sc().getExecutorMemoryStatus().size() == 1, "dynamic allocation did not remove the idle executors"
        assert sorted(rdd.collect()) == first  # map stage skipped: reducers read merged files through the shuffle services
