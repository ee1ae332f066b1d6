"""The driver's share of iterations (slaq.live.driver_share) and how the loop acts on it: pure functions
and the epoch loop over scripted pool messages."""

from __future__ import annotations

import logging

import pytest

from slaq.live.driver_share import (
    DRIVER_BOUND,
    HEADROOM,
    MIN_ITERATIONS,
    DriverShare,
    IterationSplit,
    cap_driver_bound,
    driver_bound,
    driver_caps,
    driver_fraction,
    executor_cores,
)


def _share(wall: float, stage: float, core_seconds: float, n: int = MIN_ITERATIONS) -> DriverShare:
    share = DriverShare()
    for _ in range(n):
        share.add(wall, stage, core_seconds)
    return share


def test_the_split_needs_a_few_iterations_and_is_the_time_without_a_stage():
    rows = [IterationSplit(2.0, 0.44, 0.88)] * MIN_ITERATIONS
    assert driver_fraction(rows[:-1]) is None
    assert driver_fraction(rows) == pytest.approx(0.78)
    assert executor_cores(rows) == pytest.approx(0.44)
    assert driver_fraction([IterationSplit(1.0, 1.0, 2.0)] * MIN_ITERATIONS) == 0.0


def test_the_figures_read_between_samples_are_those_of_the_window_at_that_moment():
    share = DriverShare()
    for wall, stage, used in [(1.0, 0.2, 0.4), (2.0, 0.1, 0.2), (1.5, 1.4, 3.0), (1.0, 0.0, 0.0), (0.8, 0.5, 1.0), (1.2, 0.3, 0.9),
                              (0.0, 0.5, 1.0)]:  # the last is no sample (no wall time): the figures stay
        share.add(wall, stage, used)
        for _ in range(2):  # a second read gives the figures worked out by the first
            assert (share.fraction(), share.executor_cores()) == (driver_fraction(share.samples), executor_cores(share.samples))


def test_samples_are_clipped_to_their_wall_time_and_only_the_latest_count():
    share = _share(1.0, 5.0, -1.0, n=10)  # stage seconds above the wall time (clock skew) count as all of it
    assert share.fraction() == 0.0 and share.executor_cores() == 0.0
    share.add(0.0, 1.0, 1.0)  # no wall time: nothing to split
    assert len(share.samples) < 10
    for _ in range(len(share.samples)):
        share.add(2.0, 0.2, 0.4)
    assert share.fraction() == pytest.approx(0.9)


def test_driver_bound_above_the_threshold_only():
    assert not driver_bound(None)
    assert not driver_bound(DRIVER_BOUND)
    assert driver_bound(DRIVER_BOUND + 0.01)


def test_caps_hold_driver_bound_jobs_and_give_the_freed_cores_to_the_others():
    out = cap_driver_bound({"cv": 1.2, "a": 0.6, "b": 0.2}, {"cv": 0.2})
    assert out["cv"] == 0.2
    assert out["a"] == pytest.approx(0.6 + 1.0 * 0.75) and out["b"] == pytest.approx(0.2 + 1.0 * 0.25)
    assert sum(out.values()) == pytest.approx(2.0)
    assert cap_driver_bound({"cv": 0.1, "a": 1.9}, {"cv": 0.2}) == {"cv": 0.1, "a": 1.9}  # under its cap: unchanged
    assert cap_driver_bound({"cv": 2.0}, {"cv": 0.5}) == {"cv": 0.5}  # alone: the rest stays idle (work-conserving uses it)
    even = cap_driver_bound({"cv": 2.0, "a": 0.0, "b": 0.0}, {"cv": 1.0})
    assert even == {"cv": 1.0, "a": 0.5, "b": 0.5}


def test_driver_caps_name_only_driver_bound_jobs_and_respect_the_minimum():
    caps = driver_caps({"cv": _share(2.0, 0.44, 0.88), "lr": _share(1.0, 0.9, 1.8), "new": DriverShare()}, minimum=0.25)
    assert set(caps) == {"cv"}
    fraction, cap = caps["cv"]
    assert fraction == pytest.approx(0.78) and cap == pytest.approx(HEADROOM * 0.44)
    assert driver_caps({"cv": _share(2.0, 0.1, 0.01)}, minimum=0.25)["cv"][1] == 0.25


def _loop(policy: str):
    """An epoch loop (4 cores) that drained two jobs with the same losses: ``cv`` 2 s per iteration with a
    stage in the scheduler for 0.44 s of it (4 cores busy meanwhile), ``lr`` with a stage all the time."""
    from slaq.live.job import LiveJob
    from slaq.live.loop import EpochLoop
    from slaq.messages import Iteration
    from tests.fixtures import FakePools

    class ScriptedPools(FakePools):
        script: list = []

        def drain(self):
            return self.script.pop(0) if self.script else ([], {})

    pools = ScriptedPools()
    loop = EpochLoop(pools, policy=policy, epoch=1.0)
    loop.add(LiveJob("cv", 1.0))
    loop.add(LiveJob("lr", 1.0))
    script = []
    for k in range(MIN_ITERATIONS + 1):
        script += [Iteration("cv", 1.0 / (k + 1), 2.0 * k, 1.76 * k, 0.44 * k, "mllib"),
                   Iteration("lr", 1.0 / (k + 1), 2.0 * k, 2.0 * k, 2.0 * k, "mllib")]
    pools.script = [(script, {})]
    return loop


def test_the_slaq_policy_caps_a_driver_bound_job_and_warns_once(caplog):
    loop = _loop("slaq")
    with caplog.at_level(logging.WARNING, logger="slaq.loop"):
        alloc = loop.step()
        loop.step()
    assert alloc["cv"] == pytest.approx(HEADROOM * 0.88)  # above the minimum share (1 core); uncapped: 2, like lr
    assert alloc["lr"] == pytest.approx(4.0 - HEADROOM * 0.88)
    warnings = [r.getMessage() for r in caplog.records if "bottleneck" in r.getMessage()]
    assert len(warnings) == 1 and "cv (driver 78% of each iteration, executors 22%" in warnings[0]
    shown = {j.job: j.driver_fraction for j in loop.status.jobs}
    assert shown["cv"] == pytest.approx(0.78) and shown["lr"] == 0.0  # the status JSON's field per job


def test_the_replays_allocator_caps_the_same_and_warns_nothing(caplog):
    """``slaq simulate --check`` on a user's trace showed this WARN, about a simulated run, before its verdict."""
    from slaq.live.allocation import Allocator

    loop = _loop("slaq")
    with caplog.at_level(logging.WARNING, logger="slaq.loop"):
        live = loop.step()
        assert [r for r in caplog.records if "bottleneck" in r.getMessage()]  # the live loop's, once
        caplog.clear()
        replayed = Allocator("slaq", 1.0, status=False).decide(loop.jobs.running(), sum(live.values()), [], 0.0).alloc
    assert replayed == pytest.approx(live) and replayed["cv"] < replayed["lr"]
    assert not [r for r in caplog.records if "bottleneck" in r.getMessage()]


def test_a_job_not_measured_yet_shows_no_driver_fraction():
    from slaq.live.job import LiveJob
    from slaq.live.loop import EpochLoop
    from tests.fixtures import FakePools

    loop = EpochLoop(FakePools(), policy="fair", epoch=1.0)
    loop.add(LiveJob("new", 1.0))
    loop.step()
    assert [j.driver_fraction for j in loop.status.jobs] == [-1.0]


def test_a_policy_that_does_not_steer_by_gain_keeps_its_shares():
    loop = _loop("fair")
    assert loop.step() == pytest.approx({"cv": 2.0, "lr": 2.0})
    assert {j.job: j.driver_fraction for j in loop.status.jobs}["cv"] == pytest.approx(0.78)  # still measured and shown
