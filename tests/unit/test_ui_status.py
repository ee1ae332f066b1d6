"""The per-epoch status behind the SLAQ UI tab, the driver log line and the console table: built by
the real epoch loop from shim-format messages (a fake clock, a scripted stand-in for the JVM pools)."""

from __future__ import annotations

import io
import time

import pytest

from slaq import messages
from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.live.observer import LoopObserver
from slaq.live.status import ENDED, EXPLORING, FAILED, GAIN, MINIMUM, NO_LOSS, POLICY, RANKED, TARGET, CoreSample, Tuning, share_reason, used_cores
from slaq.live.target import Target
from slaq.progress import ConsoleProgress, console, format_table
from srsupport.slaq_watch import Statuses
from tests.fixtures import FakeClock, FakePools


class ScriptedPools(FakePools):
    """Stands in for the JVM pools in these unit tests only: each drain returns the next scripted batch."""

    def __init__(self, batches):
        super().__init__()
        self.batches = list(batches)

    def drain(self):
        iterations, consumed = self.batches.pop(0) if self.batches else ([], {})
        return iterations, {job: messages.PoolState(job, c, 0.0, 0, False) for job, c in consumed.items()}

    def capacity(self):
        return 2.0


def row(job, state, iterations, loss, normalized, gain, cores, used, to_target=-1.0):
    """A ``job_status`` with the figures these tests do not look at left at their defaults."""
    return messages.JobStatus(job, state, iterations, loss, normalized, gain, cores, used, POLICY, 0.0, 0.0, to_target, "", -1, -1, False, -1.0,
                              -1.0, "", 1.0, 0.0)


def it(job, loss, t, core_seconds):
    return messages.Iteration(job, loss, t, core_seconds, 0.0, "python")


def run_epochs(batches, step_seconds=0.5):
    clock = FakeClock(100.0)
    statuses = Statuses()
    published = statuses.published
    loop = EpochLoop(ScriptedPools(batches), "slaq", 0.5, observers=[statuses], clock=clock)
    loop.add(LiveJob("a", 1.0))
    loop.add(LiveJob("b", 1.0))
    for _ in batches:
        clock.now += step_seconds
        loop.step()
    return loop, published


def test_each_epoch_publishes_one_status_with_losses_gains_and_cores():
    loop, published = run_epochs([
        ([it("a", 1.0, 0.1, 0.0)], {"a": 0.0}),
        ([it("a", 0.5, 0.6, 0.5), it("a", 0.3, 1.1, 1.0)], {"a": 1.0, "b": 0.25}),
        ([it("a", 0.2, 1.6, 1.25), it("a", 0.15, 2.1, 1.75)], {"a": 1.75, "b": 0.5}),
    ])
    assert [s.epoch for s in published] == [1, 2, 3]
    assert [s.t for s in published] == pytest.approx([0.5, 1.0, 1.5])  # seconds since the loop started, by its clock
    assert loop.status is published[-1]
    last = {j.job: j for j in published[-1].jobs}
    a, b = last["a"], last["b"]
    assert (a.state, a.iterations, a.loss) == ("running", 5, 0.15)
    assert 0.0 <= a.normalized_loss < published[1].jobs[0].normalized_loss <= 1.0  # falls as the job converges
    assert a.predicted_gain >= 0.0 and a.predicted_gain <= a.normalized_loss
    assert a.used_cores == pytest.approx(1.5)  # 0.75 core-seconds in 0.5 s
    assert (b.state, b.iterations, b.loss, b.normalized_loss) == ("waiting", 0, 0.0, 1.0)
    assert b.used_cores == pytest.approx(0.5)
    assert a.cores + b.cores == pytest.approx(2.0)
    assert b.cores > 0  # a new job is explored (§4.2: arrivals get cores first)
    assert messages.decode(messages.encode(published[-1])) == published[-1]  # finite, schema-valid: what crosses py4j


def test_a_failing_publisher_never_fails_the_epoch(caplog):
    class Broken(LoopObserver):
        def on_status(self, status):
            raise RuntimeError("JVM gone")

    loop = EpochLoop(ScriptedPools([([], {})]), "fair", 0.5, clock=FakeClock(100.0), observers=[Broken()])
    loop.add(LiveJob("a", 1.0))
    assert loop.step() == {"a": pytest.approx(2.0)}
    assert "could not publish epoch 1" in caplog.text and loop.status is not None


def test_used_cores_from_cumulative_core_seconds():
    before = CoreSample(10.0, {"a": 1.0})
    assert used_cores(CoreSample(12.0, {"a": 3.0, "b": 1.0}), before, 2.0) == {"a": 1.0, "b": 0.5}
    assert used_cores(CoreSample(11.0, {"a": 0.5}), before, 2.0) == {"a": 0.0}  # a reopened pool restarts its count
    assert used_cores(CoreSample(10.0, {"a": 3.0}), before, 2.0) == {"a": 0.0}  # no time between the drains
    jitter = used_cores(CoreSample(11.0, {"a": 2.0, "b": 1.05}), before, 2.0)  # 2.05 cores of 2: clock jitter between pools
    assert sum(jitter.values()) == pytest.approx(2.0)


class SlowDepositPools(ScriptedPools):
    """Two pools that together keep both cores busy (1 core-second per second each); each deposit takes
    the scripted time on the loop's clock, as a slow curve fit or a busy py4j call would."""

    def __init__(self, clock, deposit_seconds):
        super().__init__([])
        self.clock, self.delays = clock, list(deposit_seconds)

    def drain(self):
        c = self.clock.now - 100.0
        return [], {job: messages.PoolState(job, c, 0.0, 1, False) for job in ("a", "b")}

    def deposit(self, alloc, seconds, new_epoch=True, ranks=None):
        self.clock.now += self.delays.pop(0)


def test_cores_used_never_exceed_capacity_when_publishing_lags_the_drain():
    """Cores used were once the core-seconds between two drains over the time between two *publishes*:
    an epoch that published late followed by one woken early (a job arrived) read 8.33 of 2 cores."""
    clock = FakeClock(100.0)
    statuses = Statuses()
    published = statuses.published
    loop = EpochLoop(SlowDepositPools(clock, [1.0, 0.1, 0.1]), "slaq", 0.5, observers=[statuses], clock=clock)
    loop.add(LiveJob("a", 1.0))
    loop.add(LiveJob("b", 1.0))
    for _ in range(3):
        loop.step()
    for status in published[1:]:
        assert sum(j.used_cores for j in status.jobs) == pytest.approx(2.0)  # both cores busy, never more
        assert {j.job: j.used_cores for j in status.jobs} == pytest.approx({"a": 1.0, "b": 1.0})


def test_share_reason_names_the_rule_or_decision_behind_each_share():
    assert share_reason(9, True, True, 0.25, 0.25, True) == TARGET
    assert share_reason(0, False, True, 1.0, 0.25, True) == NO_LOSS
    assert share_reason(1, False, False, 1.5, 0.25, True) == EXPLORING
    assert share_reason(5, False, False, 1.5, 0.25, True) == GAIN
    assert share_reason(5, False, False, 0.25, 0.25, True) == MINIMUM
    assert share_reason(5, False, False, 1.0, 0.0, False) == POLICY
    # under a ranking policy the rank decides, whatever the share, for a new job and one that reports no loss too
    assert [share_reason(n, False, fixed, 1.0, 0.0, False, ranked=True) for n, fixed in ((0, True), (1, False), (5, False))] == [RANKED] * 3
    assert share_reason(9, True, False, 0.25, 0.0, False, ranked=True) == TARGET


def test_a_finished_job_carries_its_final_figures_from_its_whole_history():
    """The last epoch's row misses losses ingested as the job closed: its final row comes from its history."""
    clock = FakeClock(100.0)
    statuses = Statuses()
    published = statuses.published
    tuning = Tuning("CrossValidator_1", 1, -1, True)
    loop = EpochLoop(ScriptedPools([([it("a", 1.0, 0.1, 0.0)], {"a": 0.0}),
                                    ([it("a", 0.5, 0.6, 0.5), it("a", 0.2, 1.1, 1.0)], {"a": 1.0})]),
                     "slaq", 0.5, observers=[statuses], clock=clock, clock_offset=100.0)
    loop.add(LiveJob("a", 1.0, tuning=tuning))
    clock.now += 0.5
    loop.step()
    clock.now += 0.5
    loop.poll()  # the job's close brings in its last losses...
    loop.remove("a")  # ...and ends it before the next epoch
    loop.step()
    assert [j.job for j in published[-2].jobs] == ["a"] and published[-2].jobs[0].iterations == 1
    (row,) = published[-1].finished
    assert (row.state, row.iterations, row.loss, row.why) == ("finished", 3, 0.2, ENDED)
    assert row.wall_seconds == pytest.approx(1.0) and row.core_seconds == pytest.approx(1.0)
    assert row.seconds_to_ninety == pytest.approx(1.1)  # 0.2 is the first loss at 90% of the drop, at 1.1 s
    assert (row.seconds_to_target, row.target) == (-1.0, "")  # no target, none reached
    assert (row.group, row.candidate, row.fold, row.refit) == ("CrossValidator_1", 1, -1, True)
    assert published[-1].jobs == () and messages.decode(messages.encode(published[-1])) == published[-1]


def test_a_job_ending_between_a_decision_and_its_status_gets_its_final_row_in_the_next_status():
    """The status shows the decision, which still lists a job that ended after it: were the job's final row handed
    to that status too, the tab would skip it (the job is listed as running) and, the job gone from the next status,
    take its last running row for the final one (iterations 1 of 2)."""

    class EndsAfterTheDecision(LoopObserver):
        def on_allocated(self, jobs, decision):
            if [j.name for j in jobs] == ["a"]:
                loop.poll()  # the job's close brings in its last loss...
                loop.remove("a")  # ...and ends it while the epoch's status is yet to be built

    clock = FakeClock(100.0)
    statuses = Statuses()
    loop = EpochLoop(ScriptedPools([([it("a", 1.0, 0.1, 0.0)], {"a": 0.0}), ([it("a", 0.5, 0.6, 0.5)], {"a": 0.5})]),
                     "slaq", 0.5, observers=[statuses, EndsAfterTheDecision()], clock=clock, clock_offset=100.0)
    loop.add(LiveJob("a", 1.0))
    clock.now += 0.5
    loop.step()
    clock.now += 0.5
    loop.step()
    ending, after = statuses.published
    assert [(j.job, j.iterations) for j in ending.jobs] == [("a", 1)] and not ending.finished
    assert not after.jobs and [(j.job, j.state, j.iterations) for j in after.finished] == [("a", "finished", 2)]


class WindowPools(FakePools):
    """The fake shim (4 cores), keeping each deposit with its window: (grants, seconds, new epoch)."""

    def __init__(self):
        super().__init__()
        self.windows: list[tuple[dict[str, float], float, bool]] = []

    def deposit(self, alloc, seconds, new_epoch=True, ranks=None):
        super().deposit(alloc, seconds, new_epoch)
        self.windows.append((dict(alloc), seconds, new_epoch))


def test_many_arrivals_and_ends_between_epochs_publish_one_status_per_epoch():
    """1,500 short trials in 51 epochs once published 1,705 statuses (one per decision: each arrival and end woke
    the loop), so the tab's 600-epoch window held 9 s. Decisions between epochs still grant the rest of the epoch;
    only the epoch's is published, and every job that came and went has its final row in the next status."""
    clock = FakeClock(100.0)
    statuses = Statuses()
    pools = WindowPools()
    loop = EpochLoop(pools, "fair", 0.5, observers=[statuses], clock=clock)
    loop.add(LiveJob("steady", reports=False))
    epochs, per_epoch = 5, 12
    ended: list[str] = []
    decisions = 0
    for e in range(epochs):
        clock.now += 0.5
        loop.step()
        for k in range(per_epoch):
            name = f"trial-{e}-{k}"
            loop.add(LiveJob(name, reports=False))
            if k % 3:  # most end after a decision granted them cores, the others before any decision saw them
                loop.step(0.4)  # woken by the arrival
                grants, seconds, new_epoch = pools.windows[-1]
                assert not new_epoch and seconds <= 0.4 and grants[name] == pytest.approx(2.0)  # 4 cores: steady and it
                decisions += 1
            loop.remove(name)
            ended.append(name)
            loop.step(0.3)  # woken by the end
            decisions += 1
            assert name not in pools.windows[-1][0]
    clock.now += 0.5
    loop.step()
    published = statuses.published
    assert len(published) == loop.epochs == epochs + 1
    assert [s.epoch for s in published] == list(range(1, epochs + 2))
    finished = [(r.job, r.state) for s in published for r in s.finished]
    assert finished == [(name, "finished") for name in ended]  # each once, in the order they ended
    assert all([j.job for j in s.jobs] == ["steady"] for s in published)
    assert sum(not new_epoch for _, _, new_epoch in pools.windows) == decisions  # every decision deposited


def test_a_job_ending_in_the_last_epoch_before_stop_gets_its_final_row():
    """Statuses are published per epoch, so a job that ended after the latest one had its final row nowhere when the
    loop stopped before the next epoch (the application-end summary showed its last running row: 'time to 90% not
    reached' for a job that reached it). Stopping the loop publishes a last status."""
    statuses = Statuses()
    loop = EpochLoop(WindowPools(), "fair", 3600.0, observers=[statuses])  # no second epoch before the stop
    loop.start()
    try:
        deadline = time.monotonic() + 30
        while not statuses.published:  # the first epoch's status, published before the job arrives
            assert time.monotonic() < deadline, "the loop published no first status"
            time.sleep(0.01)
        loop.add(LiveJob("short", reports=False))
        loop.remove("short")
    finally:
        loop.stop()
    assert [r.job for s in statuses.published for r in s.finished] == ["short"]
    assert len(statuses.published) == loop.epochs == 2


def test_normalized_loss_falls_with_the_raw_loss_and_is_no_floor_fit_to_two_points():
    """A job's second loss read exactly 0.500 (a floor fitted through two points), its third 0.902, while the raw
    loss fell. Each row's normalized loss is the loss against the row's own reference, the loss over the first
    loss before a floor can be fitted, and the whole series drawn against the latest reference (as the tab's
    chart draws it) falls wherever the raw loss falls."""
    losses = [0.6931, 0.6779, 0.6650, 0.6540, 0.6447, 0.6368, 0.6301, 0.6244, 0.6196]
    batches = [([it("a", v, 0.1 + 0.5 * k, 0.5 * k)], {"a": 0.5 * k}) for k, v in enumerate(losses)]
    _, published = run_epochs(batches)
    rows = [next(j for j in s.jobs if j.job == "a") for s in published]
    assert [r.loss for r in rows] == losses
    assert rows[1].normalized_loss == pytest.approx(0.6779 / 0.6931)  # not 0.500
    assert rows[2].normalized_loss == pytest.approx(0.6650 / 0.6931)
    for r in rows:
        assert r.normalized_loss == pytest.approx((r.loss - r.loss_floor) / (r.first_loss - r.loss_floor))
        assert r.first_loss == losses[0]
    assert rows[-1].loss_floor > 0  # fitted: below the losses, above 0
    drawn = [(r.loss - rows[-1].loss_floor) / (rows[-1].first_loss - rows[-1].loss_floor) for r in rows]
    assert drawn == sorted(drawn, reverse=True) and drawn[0] == pytest.approx(1.0)


def test_time_to_target_is_only_for_a_target_reached_and_time_to_ninety_for_a_finished_job():
    """A job that missed its target showed a time to target (90% of its reduction stood in for it)."""
    clock = FakeClock(100.0)
    statuses = Statuses()
    losses = [1.0, 0.5, 0.3, 0.2]
    batches = [([it(j, v, 0.5 * (k + 1), 0.5 * k) for j in ("met", "missed", "none", "raised")], {}) for k, v in enumerate(losses)]
    loop = EpochLoop(ScriptedPools(batches), "slaq", 0.5, observers=[statuses], clock=clock, clock_offset=100.0)
    loop.add(LiveJob("met", target=Target(loss=0.35)))
    loop.add(raised := LiveJob("raised", target=Target(loss=0.35)))
    loop.add(LiveJob("missed", target=Target(loss=0.01)))
    loop.add(LiveJob("none"))
    for _ in losses:
        clock.now += 0.5
        loop.step()
    running = {j.job: j for j in statuses.published[-1].jobs}
    assert running["met"].seconds_to_target == pytest.approx(1.5) and running["met"].target == "loss <= 0.35"
    assert running["missed"].seconds_to_target == -1.0 and running["missed"].seconds_to_ninety == -1.0  # not known while it runs
    raised.failed = True  # its block raised after it reached its target (slaq.jobs.Job.__exit__)
    for name in running:
        loop.remove(name)
    clock.now += 0.5
    loop.step()
    final = {j.job: j for j in statuses.published[-1].finished}
    assert (final["met"].seconds_to_target, final["met"].why) == (pytest.approx(1.5), TARGET)
    assert final["raised"].why == FAILED  # failing beats the target reached before
    assert (final["missed"].seconds_to_target, final["missed"].target, final["missed"].why) == (-1.0, "loss <= 0.01", ENDED)
    assert (final["none"].seconds_to_target, final["none"].target) == (-1.0, "")
    assert all(j.seconds_to_ninety == pytest.approx(2.0) for j in final.values())  # 0.2: 90% of the drop 1.0 -> 0.2, at 2.0 s


def test_console_table_lists_jobs_by_cores_and_folds_the_rest():
    jobs = [row(f"job-{i}", "running", i + 1, 1.0 / (i + 1), 0.5, 0.01, float(i), 0.5) for i in range(15)]
    jobs.append(row("new", "waiting", 0, 0.0, 1.0, 1.0, 0.0, 0.0))
    text = format_table(messages.EpochStatus(7, 12.0, "slaq", 16.0, jobs, []), rows=12)
    lines = text.splitlines()
    assert lines[0].startswith("SLAQ epoch 7 t=12s policy=slaq: 16 jobs, cores allocated 105.0 / used 7.5 of 16")
    assert lines[2].split()[0] == "job-14" and len(lines) == 2 + 12 + 1
    assert lines[-1] == "  ... 4 more jobs with 3.00 cores"


def test_console_progress_prints_each_new_epoch_once():
    current = {"status": None}
    out = io.StringIO()
    progress = ConsoleProgress(lambda: current["status"], out)
    assert not progress.tick()
    current["status"] = messages.EpochStatus(1, 0.5, "fair", 2.0, [row("a", "running", 3, 0.5, 0.4, 0.1, 2.0, 1.5)], [])
    assert progress.tick() and not progress.tick()
    current["status"] = messages.EpochStatus(2, 1.0, "fair", 2.0, [], [])
    assert not progress.tick()  # no job registered: no table
    current["status"] = messages.EpochStatus(3, 1.5, "fair", 2.0, [row("a", "running", 4, 0.4, 0.3, 0.1, 2.0, 2.0, to_target=1.25)], [])
    assert progress.tick()
    assert out.getvalue().count("SLAQ epoch") == 2
    assert "\n  a   running      3        0.5  0.400  0.100  2.00/1.50         -\n" in out.getvalue()
    assert "\n  a   running      4        0.4  0.300  0.100  2.00/2.00      1.2s\n" in out.getvalue()  # the status's own time to target


def test_console_off_prints_nothing_and_bad_period_is_refused():
    out = io.StringIO()
    with console(enabled=False, stream=out) as progress:
        assert progress is None
    assert out.getvalue() == ""
    with pytest.raises(ValueError, match="every must be > 0"), console(every=0):
        pass
