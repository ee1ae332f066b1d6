"""A long-running application: more shuffles than the driver keeps, round after round, must leave its Riffle
state (Java tracker and Python merge scheduler) bounded, not growing with the number of shuffles."""

from __future__ import annotations

import gc
import time
from operator import add

import pytest

import riffle
from riffle.driver.config import RiffleConfig
from riffle.driver.cost import CostConfig
from riffle.driver.scheduler import MAX_SETTLED_SHUFFLES
from srsupport.daemons import DaemonProcess
from srsupport.riffle_watch import jvm_state_sizes, state_sizes, wait_idle

# two rounds, together over the cap on the shuffles the driver tracks (MAX_SETTLED_SHUFFLES) by 48, so the second
# must push the first round's out (the first round's RDDs stay referenced meanwhile: Spark cannot clean its shuffles
# first); more rounds or shuffles only repeat that (it was two rounds each over the cap alone: the same property at
# twice the Spark stages). The Python shuffles are the merged ones, whose files stay tracked until Spark cleans them up.
ROUNDS, PYTHON_SHUFFLES = 2, 4
JVM_SHUFFLES = MAX_SETTLED_SHUFFLES // 2 + 20
assert ROUNDS * (JVM_SHUFFLES + PYTHON_SHUFFLES) >= MAX_SETTLED_SHUFFLES + 48


@pytest.fixture(scope="module")
def scheduler(spark, spark_local_root):
    daemon = DaemonProcess([spark_local_root])
    s = riffle.attach(spark, RiffleConfig(enabled=True, mergers=(daemon.address,), nway=2, best_effort=1.0, hold_timeout=30.0,
                                            cost=CostConfig(enabled=False))).scheduler
    yield s
    riffle.detach(spark)
    daemon.stop()


def one_round(spark) -> list:
    """JVM_SHUFFLES shuffles in one job (JVM objects: reported unsafe, never held) plus PYTHON_SHUFFLES merged ones;
    returns their RDDs (while they are referenced, Spark keeps their shuffles)."""
    sc = spark.sparkContext
    gw = sc._gateway
    rdds = gw.new_array(gw.jvm.org.apache.spark.api.java.JavaRDD, JVM_SHUFFLES)
    for i in range(JVM_SHUFFLES):
        items = gw.jvm.java.util.ArrayList()
        items.add(i)
        rdds[i] = sc._jsc.parallelize(items, 1).repartition(1)
    assert sc._jsc.union(rdds).count() == JVM_SHUFFLES
    kept = [rdds]
    for _ in range(PYTHON_SHUFFLES):
        kept.append(sc.parallelize(range(8), 4).map(lambda x: (x % 3, x)).reduceByKey(add, 2))
        assert sorted(kept[-1].collect()) == [(0, 9), (1, 12), (2, 7)]
    return kept


def test_many_shuffles_leave_bounded_driver_state(spark, scheduler):
    sizes, kept = [], []
    for _ in range(ROUNDS):
        kept.append(one_round(spark))
        assert wait_idle(scheduler, 60)
        time.sleep(0.5)  # the last events reach the scheduler
        sizes.append((jvm_state_sizes(scheduler), state_sizes(scheduler)))
    del kept  # now Spark may clean every round's shuffles
    assert scheduler.status().unmerged and any(s.merges_committed > 0 for s in scheduler.settled.values())
    for java, python in sizes:
        # nothing held or mid-job survives a finished job; per-shuffle history is capped
        assert java["stage_graph"] == 0 and java["held_shuffles"] == 0 and java["held_partitions"] == 0, sizes
        assert java["pending_events"] < 100, sizes
        assert max(python["shuffles"], python["settled"], python["rows"]) <= MAX_SETTLED_SHUFFLES, sizes
        assert python["local_dirs"] <= 3, sizes
    # the cap was reached, with every shuffle still Spark's: the first round's oldest went; the tab lists the merged
    # shuffles only (the JVM ones, unsafe, are one summary line)
    assert sizes[-1][1]["shuffles"] == MAX_SETTLED_SHUFFLES and sizes[-1][1]["rows"] == ROUNDS * PYTHON_SHUFFLES, sizes
    # merged files stay tracked (for deletion) only for shuffles Spark still has
    assert sizes[-1][1]["merged_where"] <= ROUNDS * PYTHON_SHUFFLES
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and state_sizes(scheduler)["merged_where"] >= sizes[-1][1]["merged_where"] > 0:
        # Spark cleans a shuffle once its dependency is garbage: Python's RDD proxies must be collected first (py4j
        # then drops their JVM references), then the JVM's; one JVM GC alone can run before py4j let go
        gc.collect()
        spark.sparkContext._jvm.System.gc()
        time.sleep(0.5)
    assert state_sizes(scheduler)["merged_where"] < max(sizes[-1][1]["merged_where"], 1), "cleaned shuffles must be forgotten"


def test_closing_a_job_among_a_hundred_reads_no_pool_states(spark, monkeypatch):
    """Closing a slaq.job drained every pool's state first (10,000 jobs open: 2 closes a second, issue #47, 2); now it
    drains only the losses, and every loss reported before the close is still the job's."""
    import threading

    import slaq

    pools = slaq.attach(spark).pools
    closing_thread, full_drains = threading.get_ident(), []
    drain = pools.drain

    def counted():
        if threading.get_ident() == closing_thread:  # the epoch loop drains on its own thread meanwhile
            full_drains.append(1)
        return drain()

    jobs = [slaq.job(f"bounded-{i}") for i in range(100)]
    for j in jobs:
        j.__enter__()
    try:
        jobs[-1].report(0.5)
        monkeypatch.setattr(pools, "drain", counted)
        jobs[-1].__exit__(None, None, None)
        assert full_drains == [] and jobs[-1].losses == [0.5]
    finally:
        for j in reversed(jobs):
            j.__exit__(None, None, None)
