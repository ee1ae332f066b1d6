"""Nodes failing on a three-node cluster, in one application. First node 3's merger is down from the application's
start: only node 3 stays unmerged, and results equal vanilla's (the merger then comes back). Then a whole node
(worker, its executors, its merger and shuffle service) SIGKILLed, after the merged statuses were committed and
during the map stage: every job still returns vanilla's result (Spark reschedules or recomputes; Riffle never
loses data)."""

from __future__ import annotations

import threading
import time
from operator import add
from pathlib import Path

import pytest

import riffle
from srsupport.riffle_watch import mark_all_up, set_merging, wait_idle
from tests.cluster.support import cluster_session, compare, sql_ops, wait_executors

KEYS = 41


def expected(n: int) -> list[tuple[int, int]]:
    return sorted({k: sum(x for x in range(n) if x % KEYS == k) for k in range(KEYS)}.items())


@pytest.fixture(scope="module")
def session(cluster, shared_app):
    shared_app.stop()  # the cluster's cores for this application
    conf = {"spark.deploy.maxExecutorRetries": "-1", "spark.task.maxFailures": "8", "spark.stage.maxConsecutiveAttempts": "8",
            "spark.network.timeout": "30s", "spark.network.timeoutInterval": "10s", "spark.executor.heartbeatInterval": "3s"}
    cluster.stop_role("merger-3")  # down from the application's start: the node failures start it again (serving)
    with cluster_session(cluster, "riffle-cluster-failures", conf) as spark:
        assert spark.sparkContext.getConf().get("spark.shuffle.service.enabled") == "true"
        wait_executors(spark.sparkContext, 3)
        scheduler = riffle.attach(spark).scheduler
        assert scheduler is not None
        yield spark, scheduler


def test_only_the_node_without_merger_stays_unmerged(cluster, session):
    """With the external shuffle service, node 3's merger down since before the application started."""
    spark, scheduler = session
    node = cluster.layout.nodes[2]
    assert not cluster.merger_healthy(node)
    with sql_ops(spark, "true") as sql:
        for fn in (lambda: sorted(spark.sparkContext.parallelize(range(6000), 12).map(lambda x: (x % 37, x)).reduceByKey(add, 7).collect()),
                   sql["join"]):
            _, hosts = compare(cluster, scheduler, fn)
            assert node.host not in hosts and len(hosts) >= 1, hosts


@pytest.fixture
def serving(cluster, session):
    """The session, with node 3's merger serving again (stopped for the test above, whether or not that one ran)."""
    node = cluster.layout.nodes[2]
    if not cluster.merger_healthy(node):
        cluster.restart_merger(node)  # returns once it serves
        mark_all_up(session[1].fleet)
    return session


def test_node_killed_after_commit(cluster, serving):
    spark, scheduler = serving
    rdd = spark.sparkContext.parallelize(range(9000), 12).map(lambda x: (x % KEYS, x)).reduceByKey(add, 6)
    set_merging(scheduler, True)
    before = set(scheduler.settled)
    assert sorted(rdd.collect()) == expected(9000)
    assert wait_idle(scheduler, 60)
    assert any(v.merges_committed > 0 for k, v in scheduler.settled.items() if k not in before)
    cluster.kill_node(2)  # its merged files and map outputs are gone with it
    assert sorted(rdd.collect()) == expected(9000)  # fetch failure -> the lost outputs are recomputed elsewhere


def test_node_killed_during_map_stage(cluster, serving):
    spark, scheduler = serving
    sc = spark.sparkContext

    def slow(x):
        time.sleep(0.001)  # 0.5 s a map task: most of the 24 still to run when the kill below comes
        return (x % KEYS, x)

    def map_outputs() -> set:
        return {p for n in cluster.layout.nodes for p in Path(n.local_dir).rglob("shuffle_*.data")}

    box: dict = {}
    before = map_outputs()
    job = threading.Thread(target=lambda: box.update(result=sorted(sc.parallelize(range(12000), 24).map(slow).reduceByKey(add, 6).collect())))
    job.start()
    deadline = time.monotonic() + 60  # kill once several map outputs exist (merges may be under way)
    while time.monotonic() < deadline and len(map_outputs() - before) < 6:
        time.sleep(0.05)
    assert len(map_outputs() - before) >= 6, "the map stage wrote no outputs"
    cluster.kill_node(3)
    job.join(240)
    assert not job.is_alive(), "the job did not finish after a node died"
    assert box["result"] == expected(12000)
