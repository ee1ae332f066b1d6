"""SLAQ on a real local-cluster Spark: pools, tokens, debt, fail-open, loss capture, the user API."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from pyspark import InheritableThread

import slaq
from slaq.enforce.pools import POOL_PREFIX, PoolBridge, enter_thread, restore_thread
from slaq.live.loop import LOOP_THREAD
from srlab.slaq_bench.enforce import _burn, measure
from srsupport.slaq_watch import loop_history
from tests.fixtures import linear_labels


@pytest.fixture(scope="module")
def sc(spark):
    ctx = spark.sparkContext
    ctx.parallelize(range(4), 4).map(lambda _: _burn(5)).count()
    return ctx


@pytest.fixture(scope="module")
def scheduler(sc):
    s = slaq.attach(sc)
    assert s.enabled and s.loop is not None and LOOP_THREAD in {t.name for t in threading.enumerate()}
    return s


@pytest.fixture
def strict_pools(sc, scheduler):
    """The shim in strict mode for one test (the loop keeps running for SLAQ jobs)."""
    pools = PoolBridge(sc)
    pools.configure(work_conserving=False, stale_after=30.0)
    yield pools
    pools.configure(work_conserving=True, stale_after=scheduler.config.fail_open_epochs * scheduler.config.epoch)


def _run_tasks(sc, pools, job, results, tasks=2, task_ms=200.0):
    previous = enter_thread(sc, job, POOL_PREFIX + job)
    try:
        t0 = time.monotonic()
        sc.parallelize(range(tasks), tasks).map(lambda _: _burn(task_ms)).count()
        results[job] = time.monotonic() - t0
    finally:
        restore_thread(sc, previous)  # the calling thread (the main one, in some tests) leaves no pool behind


@pytest.mark.parametrize("work_conserving", [False, True])
def test_shares_are_enforced(sc, scheduler, work_conserving):
    run = measure(sc, [0.75, 0.25], seconds=8.0, work_conserving=work_conserving, epoch=0.5, warmup=1.5, tasks=8, task_ms=40.0)
    assert run["within_10pp"], run
    assert abs(run["achieved_shares_by_finished_tasks"][0] - 0.75) <= 0.12, run


def test_strict_pool_without_tokens_gets_no_cores_until_fail_open(sc, strict_pools):
    pools = strict_pools
    pools.register("starved", 1.0)
    pools.deposit({"starved": 0.0}, 1.0)  # a fresh allocation of nothing
    done: dict[str, float] = {}
    t = threading.Thread(target=_run_tasks, args=(sc, pools, "starved", done), daemon=True)
    t.start()
    t.join(3.0)
    assert t.is_alive(), "a strict pool with no tokens must not run"
    pools.open_all("test: the loop died")  # what the loop does on failure
    t.join(30)
    assert "starved" in done
    pools.resume()
    pools.close("starved")


def test_a_closed_pool_without_tokens_stays_throttled_in_strict_mode(sc, scheduler, strict_pools):
    """Work a finished job's block keeps submitting (a pool closed by should_stop()) runs only on
    tokens in strict mode: closing a pool never ranks it as one that has tokens."""
    pools = strict_pools
    scheduler.loop.stop()  # no deposits but the test's own (stale_after is 30 s: no fail-open either)
    try:
        pools.register("closed-early", 1.0)
        pools.deposit({"closed-early": 0.0}, 1.0)
        pools.close("closed-early")
        done: dict[str, float] = {}
        t = threading.Thread(target=_run_tasks, args=(sc, pools, "closed-early", done), daemon=True)
        t.start()
        t.join(3.0)
        assert t.is_alive() and not pools.is_open(), "a closed strict pool with no tokens must not run"
        pools.deposit({"closed-early": 2.0}, 1.0)  # what the loop deposits for a closed pool with work
        t.join(30)
        assert "closed-early" in done
    finally:
        scheduler.loop.start()


def test_dead_loop_opens_pools_by_themselves(sc, scheduler, strict_pools):
    """If the epoch loop stops depositing (dead thread, hung driver), the shim opens the pools itself."""
    pools = PoolBridge(sc)
    pools.configure(work_conserving=False, stale_after=2.0)
    scheduler.loop.stop()
    try:
        pools.register("orphan", 1.0)
        pools.deposit({"orphan": 0.0}, 1.0)
        done: dict[str, float] = {}
        t0 = time.monotonic()
        t = threading.Thread(target=_run_tasks, args=(sc, pools, "orphan", done), daemon=True)
        t.start()
        t.join(30)
        assert "orphan" in done and time.monotonic() - t0 >= 1.5
        assert pools.is_open()
    finally:
        pools.close("orphan")
        scheduler.loop.start()


def test_work_conserving_pool_uses_idle_cores(sc, scheduler):
    pools = PoolBridge(sc)
    pools.configure(work_conserving=True, stale_after=30.0)
    pools.register("borrower", 1.0)
    pools.deposit({"borrower": 0.0}, 1.0)
    done: dict[str, float] = {}
    _run_tasks(sc, pools, "borrower", done)
    assert done["borrower"] < 5.0
    pools.close("borrower")


def test_overshoot_becomes_debt_paid_by_the_next_deposit(sc, strict_pools):
    pools = strict_pools
    pools.register("debtor", 1.0)
    pools.deposit({"debtor": 0.1}, 1.0)  # 0.1 core-seconds, then two 1.5 s tasks start
    done: dict[str, float] = {}
    _run_tasks(sc, pools, "debtor", done, tasks=2, task_ms=1500.0)
    state = pools.drain()[1]["debtor"]
    assert state.tokens < -2.0 and state.consumed > 2.9
    pools.deposit({"debtor": 1.0}, 1.0)
    assert pools.drain()[1]["debtor"].tokens == pytest.approx(state.tokens + 1.0, abs=0.05)
    pools.close("debtor")


def test_loop_failure_opens_every_pool_and_recovers(sc, scheduler, strict_pools, monkeypatch):
    loop = scheduler.loop

    def broken(table, capacity):
        raise RuntimeError("injected policy failure")

    monkeypatch.setattr(loop.allocator.policy, "allocate", broken)
    with slaq.job("during-failure"):
        deadline = time.monotonic() + 10
        while not (loop.failures and strict_pools.is_open()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert loop.failures > 0 and "injected" in loop.last_error
        assert strict_pools.is_open()
        assert sc.parallelize(range(4), 4).map(lambda x: x).count() == 4
    monkeypatch.undo()
    epochs = loop.epochs
    deadline = time.monotonic() + 10
    while loop.epochs <= epochs + 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not strict_pools.is_open()


def test_logistic_regression_fit_reports_every_iteration(spark, scheduler):
    from pyspark.ml.classification import LogisticRegression

    df = linear_labels(spark, 400, [1.0, -2.0, 0.5], seed=3)
    with slaq.job("mllib-lr") as job:
        model = LogisticRegression(maxIter=15, regParam=0.01).fit(df)
        deadline = time.monotonic() + 10
        expected = model.summary.objectiveHistory
        while time.monotonic() < deadline:
            history = loop_history(scheduler.loop, job.name)
            if history is not None and history.iterations >= len(expected) - 1:
                break
            time.sleep(0.2)
    captured = history.losses
    # breeze logs every iteration after the initial point, at 6 significant digits
    assert len(captured) == len(expected) - 1
    np.testing.assert_allclose(captured, expected[1:], rtol=1e-5)


def test_fit_outside_any_job_is_not_attributed(spark, scheduler):
    from pyspark.ml.linalg import Vectors
    from pyspark.ml.regression import LinearRegression

    df = spark.createDataFrame([(float(i % 5), Vectors.dense([i, i % 3])) for i in range(50)], ["label", "features"])
    with slaq.job("bystander"):
        pass
    LinearRegression(solver="l-bfgs", maxIter=5).fit(df)
    assert loop_history(scheduler.loop, "bystander") is None


def test_inheritable_threads_are_in_the_job_plain_threads_are_not(sc, scheduler):
    """pyspark.InheritableThread copies the JVM local properties that name the job; a plain
    threading.Thread starts with none, so its work is outside every job (no process-wide patch)."""
    seen: dict[str, object] = {}

    def work(tag):
        seen[tag] = (sc.getLocalProperty("spark.scheduler.pool"), getattr(slaq.current_job(), "name", None))
        sc.parallelize(range(2), 2).count()
        try:
            slaq.report_loss(0.5)
        except slaq.NoActiveJob as exc:
            seen[tag + "-error"] = str(exc)

    with slaq.job("threads") as job:
        for tag, cls in (("plain", threading.Thread), ("inheritable", InheritableThread)):
            t = cls(target=work, args=(tag,))
            t.start()
            t.join(60)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (loop_history(scheduler.loop, "threads") is None or loop_history(scheduler.loop, "threads").iterations < 1):
            time.sleep(0.1)
        assert loop_history(scheduler.loop, "threads").losses == [0.5]
    assert seen["plain"] == (None, None) and "InheritableThread" in seen["plain-error"]
    assert seen["inheritable"] == ("slaq.threads", "threads") and "inheritable-error" not in seen
    assert job.losses == [0.5]


def test_a_slaq_jobs_spark_jobs_carry_its_name_as_group_and_description(sc, scheduler):
    """Spark's Jobs page ties each Spark job to its SLAQ job; a group the application set itself wins."""
    with slaq.job("named"):
        sc.parallelize(range(2), 2).count()
        described = sc.getLocalProperty("spark.job.description")
    sc.setJobGroup("mine", "my own group")
    try:
        with slaq.job("grouped"):
            sc.parallelize(range(2), 2).count()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    tracker = sc.statusTracker()
    assert described == "SLAQ job named" and sc.getLocalProperty("spark.job.description") is None
    assert len(tracker.getJobIdsForGroup("slaq:named")) == 1
    assert tracker.getJobIdsForGroup("slaq:grouped") == [] and len(tracker.getJobIdsForGroup("mine")) == 1


def test_bad_reports_are_rejected_without_disturbing_other_jobs(scheduler):
    with slaq.job("good") as good, slaq.job("victim") as victim:
        good.report(2.0)
        for bad in ("0.3", None, [1.0], True):
            with pytest.raises(slaq.InvalidReport):
                victim.report(bad)
        for diverged in (float("nan"), float("inf"), -float("inf")):
            victim.report(diverged)  # skipped (one WARN), the loop goes on
        victim.report(1.0)
        good.report(1.5)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (loop_history(scheduler.loop, "good") is None or loop_history(scheduler.loop, "good").iterations < 2):
            time.sleep(0.1)
        assert loop_history(scheduler.loop, "good").losses == [2.0, 1.5]
        assert loop_history(scheduler.loop, "victim").losses == [1.0] and victim.skipped_losses == 3
    with pytest.raises(slaq.NoActiveJob, match="outside any"):
        slaq.report_loss(0.5)
    with pytest.raises(ValueError, match="already running"):
        with slaq.job("dup"), slaq.job("dup"):
            pass


def test_a_job_that_crashes_mid_iteration_releases_its_pool(sc, scheduler):
    def crash(_):
        raise ValueError("boom")

    before = sc.getLocalProperty("spark.scheduler.pool")
    with pytest.raises(Exception, match="boom"):
        with slaq.job("crasher") as job:
            job.report(1.0)
            sc.parallelize(range(2), 2).map(crash).count()
    assert "crasher" not in scheduler.running_jobs()
    assert sc.getLocalProperty("spark.scheduler.pool") == before
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "crasher" in scheduler.pools.drain()[1]:
        time.sleep(0.2)
    assert "crasher" not in scheduler.pools.drain()[1]
    with slaq.job("crasher") as again:  # the name is free again
        again.report(1.0)
        assert sc.parallelize(range(3), 3).count() == 3


def _started_tasks(sc, pools, job, tasks, hold_s=0.0, release=None):
    """Runs ``tasks`` tasks in ``job``'s pool; each returns when it started, then holds its core ``hold_s`` seconds or
    until ``release`` exists (at most 60 s)."""
    def task(_):
        import os
        import time as clock

        started = clock.time()
        deadline = started + 60.0
        while release is not None and not os.path.exists(release) and clock.time() < deadline:
            clock.sleep(0.02)
        clock.sleep(hold_s)
        return started

    previous = enter_thread(sc, job, POOL_PREFIX + job)
    try:
        return sc.parallelize(range(tasks), tasks).map(task).collect()
    finally:
        restore_thread(sc, previous)


def _until(condition, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_ranking_deposit_offers_freed_cores_to_the_least_rank_first(sc, scheduler, tmp_path):
    """The ``order`` policy's path on the driver's real pools: an allocation with ranks (``PoolBridge.deposit``, as the
    epoch loop sends it) and Spark's own task scheduler giving the cores the blocker frees to the lesser rank's tasks,
    though the other pool submitted first; without ranks the pools go back to their tokens' order."""
    release, started = tmp_path / "release", {}
    pools = PoolBridge(sc)
    scheduler.stop()  # its loop would deposit an unranked allocation every epoch
    try:
        pools.configure(work_conserving=True, stale_after=120.0)
        pools.resume()
        for job in ("rank-blocker", "rank-second", "rank-first"):
            assert pools.register(job, 1.0)
        pools.deposit(dict.fromkeys(("rank-blocker", "rank-second", "rank-first"), 1.0), 120.0,
                      ranks={"rank-blocker": 0.0, "rank-first": 1.0, "rank-second": 2.0})
        tracker = sc.statusTracker()

        def run(job, tasks, **kw):
            started[job] = _started_tasks(sc, pools, job, tasks, **kw)

        def tasks_running_or_waiting(stages):
            return len(tracker.getActiveStageIds()) >= stages

        threads = [threading.Thread(target=run, args=("rank-blocker", 2), kwargs={"release": str(release)})]
        threads[0].start()
        _until(lambda: sum(tracker.getStageInfo(s).numActiveTasks for s in tracker.getActiveStageIds() if tracker.getStageInfo(s)) >= 2)
        for job, stages in (("rank-second", 2), ("rank-first", 3)):  # each waits behind the blocker's two tasks
            threads.append(threading.Thread(target=run, args=(job, 2), kwargs={"hold_s": 0.5}))
            threads[-1].start()
            _until(lambda stages=stages: tasks_running_or_waiting(stages))
        release.touch()
        for t in threads:
            t.join(120)
        assert max(started["rank-first"]) < min(started["rank-second"]), started
    finally:
        release.touch()
        pools.deposit({}, 1.0)  # unranked again
        for job in ("rank-blocker", "rank-second", "rank-first"):
            pools.close(job)
        scheduler.start()


def test_slaq_ml_trainers_report_each_iteration(sc, scheduler):
    from slaq.ml import boosted_stumps, kmeans, logistic_regression, svm, synthetic_blocks

    cls = synthetic_blocks(sc, 2, 500, 4, seed=1)
    reg = synthetic_blocks(sc, 2, 500, 4, seed=2, kind="regression")
    clu = synthetic_blocks(sc, 2, 500, 4, seed=3, kind="clusters")
    for name, train in (("lr", lambda: logistic_regression(cls, 8, step=2.0)), ("svm", lambda: svm(cls, 8)),
                        ("km", lambda: kmeans(clu, 4, 8)), ("gb", lambda: boosted_stumps(reg, 8))):
        with slaq.job(f"ml-{name}") as job:
            result = train()
        assert job.losses == result.losses and len(result.losses) == 8
        assert result.losses[-1] < result.losses[0], name


def test_target_stops_a_trainer_early(sc, scheduler):
    from slaq.ml import logistic_regression, synthetic_blocks

    blocks = synthetic_blocks(sc, 2, 500, 4, seed=1)
    with slaq.job("early", target_loss=0.45) as job:
        result = logistic_regression(blocks, 50, step=2.0)
    assert result.stopped_early and len(result.losses) < 50 and job.losses[-1] <= 0.45


def test_the_tab_and_the_summary_give_every_job_the_same_time_to_target(sc, scheduler):
    """The tab said 49.7 s to target where the application-end summary said "not reached": a job that missed its
    target has none, in the tab's JSON and in the summary, which carries the tab's figures for every job."""
    from slaq.ml import logistic_regression, synthetic_blocks

    blocks = synthetic_blocks(sc, 2, 300, 4, seed=5)
    for name, target in (("to-target-met", 0.6), ("to-target-missed", 1e-9)):
        with slaq.job(name, target_loss=target):
            logistic_regression(blocks, 6, step=2.0)
    deadline = time.monotonic() + 20
    while True:
        report = scheduler.pools.status_report()
        final = {j.job: j for j in report.finished}
        if {"to-target-met", "to-target-missed"} <= set(final):
            break
        assert time.monotonic() < deadline, f"the jobs' final rows were not published: {report.finished}"
        time.sleep(0.1)
    met, missed = final["to-target-met"], final["to-target-missed"]
    assert missed.seconds_to_target == -1.0 and met.seconds_to_target >= 0
    assert (met.why, met.target, missed.why, missed.target) == ("target reached", "loss <= 0.6", "ended", "loss <= 1e-09")
    assert missed.seconds_to_ninety >= 0  # it did make 90% of its own loss reduction
    latest = {j.job: j for e in report.history for j in e.jobs} | final  # each job's latest row, as the tab lists it
    for j in report.summary.jobs:
        assert (j.target, j.seconds_to_target, j.seconds_to_ninety) == (latest[j.job].target, latest[j.job].seconds_to_target,
                                                                       latest[j.job].seconds_to_ninety), j.job


def test_the_sweep_demo_runs_end_to_end(spark, scheduler):
    from srlab.slaq_bench.sweep import _run_sweep, make_sweep

    sweep = make_sweep(4, 0.3, seed=2, iterations=5)
    out = _run_sweep(spark, "slaq", sweep, 0.5, 2, 500, 4, bucket=1.0)
    assert set(out["jobs"]) == {s.name for s in sweep}
    for j in out["jobs"].values():
        assert j["iterations"] == 5 and 0 <= j["time_to_90pct_s"] <= j["time_to_95pct_s"]
    assert out["mean_time_to_90pct_s"] > 0 and 0 <= out["mean_normalized_loss"] <= 1
