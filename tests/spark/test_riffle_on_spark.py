"""Riffle on real local-cluster Spark with real merger daemons on loopback: every result must equal
vanilla Spark's, with merges actually committed, under faults too."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import threading
import time
from operator import add
from pathlib import Path

import pytest

import riffle
from riffle.driver.config import RiffleConfig
from riffle.driver.cost import CostConfig
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from srsupport.daemons import DaemonInProcess, DaemonProcess
from srsupport.riffle_watch import forget_refusals, mark_all_up, on_events, set_merging, use_config, wait_idle


def merged_files(root: Path, shuffle_id: int | None = None) -> list[Path]:
    out = []
    for p in root.rglob("shuffle_*_*_0.*"):
        parts = p.name.split("_")
        if int(parts[2]) >= SYNTHETIC_MAP_ID_BASE and (shuffle_id is None or int(parts[1]) == shuffle_id):
            out.append(p)
    return out


@pytest.fixture(scope="module")
def base_config(merger):
    return RiffleConfig(enabled=True, mergers=(merger.address,), nway=3, best_effort=1.0, hold_timeout=30.0, rpc_timeout=30.0, cost=CostConfig(enabled=False))


@pytest.fixture(scope="module")
def scheduler(spark, base_config, spark_local_root):
    s = riffle.attach(spark, base_config).scheduler
    assert s is not None
    yield s
    riffle.detach(spark)
    assert merged_files(spark_local_root) == [], "detach must delete every merged file"


@pytest.fixture(autouse=True)
def fresh_config(scheduler, base_config):
    use_config(scheduler, base_config)
    mark_all_up(scheduler.fleet)
    set_merging(scheduler, True)
    yield
    use_config(scheduler, base_config)
    mark_all_up(scheduler.fleet)
    set_merging(scheduler, True)


def run_merged(scheduler, fn):
    """``fn()`` with merging on; returns (result, stats of the shuffles it created)."""
    before = set(scheduler.settled)
    result = fn()
    assert wait_idle(scheduler, 60)
    return result, [v for k, v in scheduler.settled.items() if k not in before]


def compare(scheduler, fn, expect_merge: bool = True):
    set_merging(scheduler, False)
    vanilla = fn()
    set_merging(scheduler, True)
    merged, stats = run_merged(scheduler, fn)
    assert merged == vanilla
    if expect_merge:
        assert sum(s.merges_committed for s in stats) > 0, stats
    return merged, stats


def test_reduce_by_key(sc_rdd_data, scheduler):
    fn = lambda: sorted(sc_rdd_data.map(lambda x: (x % 37, x)).reduceByKey(add, 7).collect())
    result, _ = compare(scheduler, fn)
    assert dict(result) == {k: sum(x for x in range(3000) if x % 37 == k) for k in range(37)}


def test_group_by_key(sc_rdd_data, scheduler):
    compare(scheduler, lambda: sorted((k, sorted(v)) for k, v in sc_rdd_data.map(lambda x: (x % 11, x)).groupByKey(5).collect()))


def test_sort_by_key(sc_rdd_data, scheduler):
    result, _ = compare(scheduler, lambda: sc_rdd_data.map(lambda x: ((x * 7919) % 3001, x)).sortByKey(numPartitions=6).collect())
    assert [k for k, _ in result] == sorted(k for k, _ in result)


def test_rdd_join(spark, sc_rdd_data, scheduler):
    other = spark.sparkContext.parallelize([(k, f"v{k}") for k in range(0, 60, 2)], 12)
    compare(scheduler, lambda: sorted(sc_rdd_data.map(lambda x: (x % 50, x)).join(other, 5).collect()))


def test_more_than_2000_reduce_partitions(spark, scheduler):
    """Above 2000 partitions Spark switches to HighlyCompressedMapStatus; zero-size blocks must stay exact.
    A SQL shuffle (AQE off, so nothing coalesces): its 2,100 reduce tasks run in the JVM, where a Python
    RDD's would each pass through a Python worker at several times the cost."""
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    spark.conf.set("spark.sql.shuffle.partitions", "2100")
    try:
        rows = spark.range(0, 3000, 1, 12).selectExpr("id * 7 as k", "id as v")
        result, stats = compare(scheduler, lambda: sorted(tuple(r) for r in rows.groupBy("k").agg({"v": "sum"}).collect()))
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
        spark.conf.unset("spark.sql.shuffle.partitions")
    assert result == [(7 * i, i) for i in range(3000)] and any(s.partitions == 2100 for s in stats)


def test_each_executors_local_dirs_come_with_its_map_output_not_a_lookup(spark, scheduler, monkeypatch):
    """The shim sends an executor's local dirs once, with its first map output (again after the scheduler configures it,
    as a scheduler attached afresh does): merges need no py4j lookup, and use the dirs Spark recorded."""
    real = scheduler.local_dirs.tracker
    asked: list[str] = []

    class CountingTracker:
        def localDirs(self, executor):
            asked.append(executor)
            return real.localDirs(executor)

    monkeypatch.setattr(scheduler.local_dirs, "tracker", CountingTracker())
    scheduler.local_dirs.known.clear()  # forgotten, as by a scheduler attached afresh
    set_merging(scheduler, True)  # configures the shim: each executor's dirs come again with its next output
    rdd = spark.sparkContext.parallelize(range(3000), 6).map(lambda x: (x % 11, x))
    _, stats = run_merged(scheduler, lambda: sorted(rdd.reduceByKey(add, 3).collect()))
    assert sum(s.merges_committed for s in stats) > 0 and asked == [], (stats, asked)
    known = dict(scheduler.local_dirs.known)
    assert known and all(dirs == [str(d) for d in real.localDirs(e)] for e, dirs in known.items()), known


def test_mostly_empty_map_tasks_merge_every_group_with_data(spark, scheduler, base_config):
    """8 of 12 map tasks write no rows (no ``.data`` file): groups are formed from the 4 that have bytes, and
    none fails; before, a group holding an empty output was refused whole with NOT_FOUND."""
    use_config(scheduler, dataclasses.replace(base_config, nway=2))
    rows = spark.sparkContext.parallelize(range(12), 12).flatMap(lambda i: [(k, i) for k in range(40)] if i % 3 == 0 else [])
    result, stats = compare(scheduler, lambda: sorted(rows.reduceByKey(add, 4).collect()))
    assert dict(result) == {k: 0 + 3 + 6 + 9 for k in range(40)}
    assert sum(s.merges_failed for s in stats) == 0, stats
    assert sum(s.merges_committed for s in stats) >= 1, stats  # 4 outputs with data on 2 executors, 2 per group


def test_the_default_cost_model_tells_a_sql_exchange_from_an_rdd_shuffle(spark, scheduler, base_config):
    """The cost model on, as by default, with this disk's costs. An RDD shuffle of 400 reducers pays for 3-way merges: it is
    held and merged. A SQL exchange of the same 400 partitions, which adaptive execution coalesces to a reduce task or two,
    cannot pay: the shim is never asked to hold it (nothing waits for it) and it counts as unmerged, not worth it."""
    use_config(scheduler, dataclasses.replace(base_config, cost=CostConfig()))
    spark.conf.set("spark.sql.shuffle.partitions", "400")
    try:
        before = set(scheduler.shuffles)
        rdd = spark.sparkContext.parallelize(range(6000), 6).map(lambda x: (x % 400, 1))
        result, stats = compare(scheduler, lambda: sorted(rdd.reduceByKey(add, 400).collect()))
        assert dict(result) == {k: 15 for k in range(400)}
        rdd_shuffles = [s for sid, s in scheduler.shuffles.items() if sid not in before and s.policy is not None]
        assert rdd_shuffles and all(s.held and not s.cost.coalesce for s in rdd_shuffles)
        before = set(scheduler.shuffles)
        rows = spark.range(0, 20000, 1, 12).selectExpr("id % 400 as k", "id as v")
        result, stats = compare(scheduler, lambda: sorted(tuple(r) for r in rows.groupBy("k").count().collect()), expect_merge=False)
        assert result == [(k, 50) for k in range(400)]
        sql = [s for sid, s in scheduler.shuffles.items() if sid not in before and s.policy is not None]
        assert sql and all(s.cost.coalesce and not s.held and s.merges == [] for s in sql), sql
        assert all(s.hold_seconds is None and s.merges_requested == 0 and "not worth merging" in s.reason for s in stats), stats
        assert scheduler.status().totals.unmerged.get("not_worth_it", 0) >= len(sql)
    finally:
        spark.conf.unset("spark.sql.shuffle.partitions")


@pytest.mark.parametrize("aqe", ["true", "false"])
def test_sql_group_by_and_join(spark, scheduler, aqe):
    spark.conf.set("spark.sql.adaptive.enabled", aqe)
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        left = spark.range(0, 20000, 1, 12).selectExpr("id % 97 as k", "id as v")
        right = spark.range(0, 500, 1, 12).selectExpr("id % 97 as k", "id * 2 as w")
        compare(scheduler, lambda: sorted(left.groupBy("k").agg({"v": "sum", "*": "count"}).collect()))
        compare(scheduler, lambda: sorted(left.join(right, "k").groupBy("k").agg({"w": "sum", "v": "max"}).collect()))
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def test_sql_skew_join_splitting(spark, scheduler):
    """AQE splits the skewed partition by map-index ranges; merged groups must still be read exactly once."""
    settings = {"spark.sql.adaptive.enabled": "true", "spark.sql.autoBroadcastJoinThreshold": "-1",
                "spark.sql.adaptive.skewJoin.enabled": "true", "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "1",
                "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "100", "spark.sql.adaptive.advisoryPartitionSizeInBytes": "200",
                "spark.sql.adaptive.coalescePartitions.enabled": "false", "spark.sql.shuffle.partitions": "8"}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        skewed = spark.range(0, 30000, 1, 12).selectExpr("case when id % 10 < 8 then 0 else id % 40 end as k", "id as v")
        small = spark.range(0, 40, 1, 12).selectExpr("id as k", "id * 3 as w")
        last: list = []

        def fn():  # a new DataFrame per run: a reused one would reuse its shuffle files
            last[:] = [skewed.join(small, "k")]  # no aggregate on top: its distribution would veto the split
            return sorted(last[0].collect())

        compare(scheduler, fn)
        plan = last[0]._jdf.queryExecution().executedPlan().toString()
        assert "SortMergeJoin(skew=true)" in plan and "AQEShuffleRead skewed" in plan, plan
    finally:
        for k in settings:
            spark.conf.unset(k)


@pytest.fixture(scope="module")
def sc_rdd_data(spark):
    return spark.sparkContext.parallelize(range(3000), 12)


def test_a_stalled_scheduler_costs_one_hold_then_later_shuffles_are_not_held_until_it_answers(sc_rdd_data, scheduler, base_config):
    """The scheduler's thread stops deciding (blocked in an event hook) while the process lives on, the cost model off
    (every mergeable shuffle held from its map stage's submission by the JVM). The first shuffle waits out its hold
    (hold timeout + 5 s); a later one is not held at all but left unmerged, the scheduler's stall its reason (before, each
    waited out a hold of its own: 0.3 s queries took 10.2 s); once it answers again, results equal plain Spark's."""
    use_config(scheduler, dataclasses.replace(base_config, hold_timeout=0.2))
    fn = lambda: sorted(sc_rdd_data.map(lambda x: (x % 41, x)).reduceByKey(add, 5).collect())
    set_merging(scheduler, False)
    vanilla = fn()
    set_merging(scheduler, True)
    before = shuffle_ids(scheduler.status())
    stalled, resumed = threading.Event(), threading.Event()

    def stall(event):
        stalled.set()
        resumed.wait(120)

    with on_events(scheduler, stall):
        try:
            first = fn()  # held until the JVM's own deadline passes: the scheduler decides nothing
            assert stalled.is_set()
            second = fn()
        finally:
            resumed.set()
    assert first == second == vanilla
    assert wait_idle(scheduler, 60)
    deadline = time.monotonic() + 30  # the second, never held, keeps nothing waiting: it is counted at the scheduler's next drain
    while len(new := sorted(set(never_held(status := scheduler.status())) - before)) < 2:
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    assert len(new) == 2 and not {r.shuffle for r in status.shuffles} & set(new), status  # both never held: no row, a summary
    second = next(u for u in status.unmerged if u.latest and u.latest[-1] == new[1])  # its cause's summary names it the latest
    assert "stalled" in second.reason, status  # was: held to its deadline, then "a stage reading the shuffle was already running"
    assert fn() == vanilla  # it decides again: later shuffles are merged


def test_unsafe_shuffle_is_left_unmerged(spark, scheduler):
    """A shuffle of JVM objects under Spark's default JavaSerializer cannot be concatenated safely."""
    sc = spark.sparkContext
    before = shuffle_ids(scheduler.status())
    items = sc._jvm.java.util.ArrayList()
    for i in range(300):
        items.add(f"s{i}")
    assert sc._jsc.parallelize(items, 12).repartition(4).count() == 300
    assert wait_idle(scheduler, 30)
    time.sleep(0.5)  # the listener's events reach the scheduler asynchronously
    status = scheduler.status()
    new = {sid: cause for sid, cause in never_held(status).items() if sid not in before}
    unsafe = next((u for u in status.unmerged if u.cause == "unsafe"), None)
    assert new and set(new.values()) == {"unsafe"} and unsafe is not None and "serializer" in unsafe.reason, status
    assert all(merged_files_for(spark, scheduler, sid) == [] for sid in new)


def never_held(status) -> dict[int, str]:
    """The never-held shuffles the Riffle tab's summaries name (the latest few of each cause), each with its cause."""
    return {sid: u.cause for u in status.unmerged for sid in u.latest}


def shuffle_ids(status) -> set[int]:
    """Every shuffle the tab's model names: its rows' and its summaries' latest."""
    return {r.shuffle for r in status.shuffles} | set(never_held(status))


def merged_files_for(spark, scheduler, sid):
    root = Path(spark.sparkContext.getConf().get("spark.local.dir"))
    return merged_files(root, sid)


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_unreachable_merger(sc_rdd_data, scheduler, base_config):
    use_config(scheduler, dataclasses.replace(base_config, mergers=(closed_port(),)))
    fn = lambda: sorted(sc_rdd_data.map(lambda x: (x % 13, x)).reduceByKey(add, 5).collect())
    _, stats = compare(scheduler, fn, expect_merge=False)
    assert all(s.merges_committed == 0 for s in stats)


def test_merger_killed_mid_merge(sc_rdd_data, scheduler, base_config, spark_local_root, tmp_path):
    victim = DaemonProcess([spark_local_root], "--state-dir", str(tmp_path / "victim-state"))
    use_config(scheduler, dataclasses.replace(base_config, mergers=(victim.address,)))
    os.kill(victim.proc.pid, signal.SIGSTOP)  # requests arrive and hang: the merges are in flight
    fn = lambda: sorted(sc_rdd_data.map(lambda x: (x % 17, x)).reduceByKey(add, 5).collect())
    expected = sorted({k: sum(x for x in range(3000) if x % 17 == k) for k in range(17)}.items())
    box: dict = {}
    t = threading.Thread(target=lambda: box.update(result=fn()))
    t.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(m.merger == victim.address for s in scheduler.shuffles.values() for m in s.merges):
        time.sleep(0.05)
    os.kill(victim.proc.pid, signal.SIGKILL)
    t.join(120)
    assert box["result"] == expected
    victim.proc.wait(10)


def test_merge_timeout(sc_rdd_data, scheduler, base_config, spark_local_root, tmp_path):
    hung = DaemonProcess([spark_local_root], "--state-dir", str(tmp_path / "hung-state"))
    os.kill(hung.proc.pid, signal.SIGSTOP)
    try:
        use_config(scheduler, dataclasses.replace(base_config, mergers=(hung.address,), hold_timeout=2.0, rpc_timeout=60.0))
        t0 = time.monotonic()
        result, stats = run_merged(scheduler, lambda: sorted(sc_rdd_data.map(lambda x: (x % 19, 1)).reduceByKey(add, 5).collect()))
        assert dict(result) == {k: len(range(k, 3000, 19)) for k in range(19)}
        assert any("timeout" in s.reason for s in stats) and all(s.merges_committed == 0 for s in stats)
        assert time.monotonic() - t0 < 30
    finally:
        os.kill(hung.proc.pid, signal.SIGKILL)
        hung.proc.wait(10)


def test_merged_file_deleted_after_commit(spark, scheduler, spark_local_root):
    rdd = spark.sparkContext.parallelize(range(3000), 12).map(lambda x: (x % 23, x)).reduceByKey(add, 6)
    first, stats = run_merged(scheduler, lambda: sorted(rdd.collect()))
    committed = [s for s in stats if s.merges_committed > 0]
    assert committed
    files = merged_files(spark_local_root, committed[0].shuffle_id)
    assert files
    for f in files:
        f.unlink()
    assert sorted(rdd.collect()) == first  # fetch failure -> Spark recomputes the lost map outputs


def test_cleanup_deletes_merged_files(spark, scheduler, spark_local_root):
    rdd = spark.sparkContext.parallelize(range(3000), 12).map(lambda x: (x % 29, x)).reduceByKey(add, 4)
    _, stats = run_merged(scheduler, lambda: rdd.collect())
    sid = next(s.shuffle_id for s in stats if s.merges_committed > 0)
    assert merged_files(spark_local_root, sid)
    spark.sparkContext._jsc.sc().cleaner().get().doCleanupShuffle(sid, True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and merged_files(spark_local_root, sid):
        time.sleep(0.1)
    assert merged_files(spark_local_root, sid) == []


def test_executor_killed_after_commit(spark, scheduler):
    sc = spark.sparkContext
    rdd = sc.parallelize(range(3000), 12).map(lambda x: (x % 31, x)).reduceByKey(add, 6)
    first, stats = run_merged(scheduler, lambda: sorted(rdd.collect()))
    assert any(s.merges_committed > 0 for s in stats)
    app = sc.applicationId
    victim = subprocess.run(["pgrep", "-f", f"CoarseGrainedExecutorBackend.*--executor-id 0 .*{app}"], capture_output=True, text=True)
    pids = [int(p) for p in victim.stdout.split()]
    assert pids, "executor 0's JVM not found"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert sorted(rdd.collect()) == first
    deadline = time.monotonic() + 60  # the standalone master replaces the executor; later tests need two
    while time.monotonic() < deadline and sc._jsc.sc().getExecutorMemoryStatus().size() < 3:
        time.sleep(0.5)
    assert sc._jsc.sc().getExecutorMemoryStatus().size() >= 3


def test_merger_refusing_the_driver_is_a_warning_with_its_cause(sc_rdd_data, scheduler, base_config, spark_local_root, caplog, tmp_path):
    """A token mismatch fails every merge on that merger: one WARN naming the merger and the cause, and
    none more when the shuffles' merged files are cleaned up (that merger wrote none)."""
    guarded = DaemonProcess([spark_local_root], "--state-dir", str(tmp_path / "guarded-state"), token="the-mergers-secret")
    try:
        use_config(scheduler, dataclasses.replace(base_config, mergers=(guarded.address,), token=None))
        before = set(scheduler.settled)
        with caplog.at_level("WARNING", logger="riffle.driver"):
            _, stats = compare(scheduler, lambda: sorted(sc_rdd_data.map(lambda x: (x % 7, x)).reduceByKey(add, 3).collect()),
                               expect_merge=False)
            refused = [sid for sid in scheduler.settled if sid not in before]
            assert any(address == guarded.address for sid in refused for address, _ in scheduler.fleet.merged_where.get(sid, ()))
            for sid in refused:
                scheduler.fleet.cleanup(sid)
        assert all(s.merges_committed == 0 for s in stats)
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and guarded.address in r.getMessage()]
        assert len(warnings) == 1 and "UNAUTHENTICATED" in warnings[0], warnings
    finally:
        guarded.stop()


def test_executor_dirs_outside_the_mergers_roots_are_one_warning_naming_both_and_the_conf(sc_rdd_data, scheduler, base_config,
                                                                                          caplog, tmp_path):
    """A merger started with a --local-dir that does not hold the executors' spark.local.dir refuses every merge:
    one WARN names the executors' dirs, the merger's dirs and the conf that fixes it."""
    elsewhere = tmp_path / "merger-root"
    elsewhere.mkdir()
    merger = DaemonProcess([elsewhere], "--state-dir", str(tmp_path / "elsewhere-state"))
    try:
        use_config(scheduler, dataclasses.replace(base_config, mergers=(merger.address,)))
        with caplog.at_level("WARNING", logger="riffle.driver"):
            _, stats = compare(scheduler, lambda: sorted(sc_rdd_data.map(lambda x: (x % 5, x)).reduceByKey(add, 3).collect()),
                               expect_merge=False)
        assert all(s.merges_committed == 0 for s in stats)
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and merger.address in r.getMessage()]
        assert len(warnings) == 1, warnings
        executor_dirs = {d for s in scheduler.fleet.merged_where.values() for address, dirs in s if address == merger.address for d in dirs}
        assert any(d in warnings[0] for d in executor_dirs) and str(elsewhere) in warnings[0], warnings
        assert "spark.local.dir" in warnings[0] and "--local-dir" in warnings[0], warnings
    finally:
        merger.stop()


def test_executor_dirs_outside_the_mergers_dirs_are_one_warning_even_when_nothing_pays_to_merge(spark, scheduler, base_config,
                                                                                                  caplog, tmp_path):
    """The cost model on, as by default, and a SQL exchange that cannot pay: no merge is sent, so no merger refused one, and
    nothing said that spark.local.dir lay outside the merger's --local-dir. The executors' dirs are checked against the dirs
    each merger serves (its Status says them) whatever the cost model decides: one WARN naming both."""
    elsewhere = tmp_path / "merger-root"
    elsewhere.mkdir()
    merger = DaemonInProcess([elsewhere], "--state-dir", str(tmp_path / "state"))
    try:
        use_config(scheduler, dataclasses.replace(base_config, mergers=(merger.address,), cost=CostConfig()))
        forget_refusals(scheduler.fleet)  # an earlier test's WARN of this kind is not this one
        rows = spark.range(0, 20000, 1, 12).selectExpr("id % 97 as k", "id as v")
        with caplog.at_level("WARNING", logger="riffle.driver"):
            _, stats = run_merged(scheduler, lambda: sorted(tuple(r) for r in rows.groupBy("k").count().collect()))
        assert stats and all(s.merges_requested == 0 and "not worth merging" in s.reason for s in stats), stats
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and merger.address in r.getMessage()]
        assert len(warnings) == 1, warnings
        assert str(elsewhere) in warnings[0] and str(Path(spark.sparkContext.getConf().get("spark.local.dir"))) in warnings[0], warnings
        assert "spark.local.dir" in warnings[0] and "--local-dir" in warnings[0], warnings
    finally:
        merger.stop()
