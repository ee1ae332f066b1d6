"""The token-bucket pools' ordering and accounting, driven through py4j on the real Java classes
with a manual clock (in the spirit of Spark's PoolSuite): no wall time, no timing luck."""

from __future__ import annotations

import pytest

from sparkshim.bridge import new_instance


@pytest.fixture
def clock(gateway):
    return new_instance(gateway, "seam.ShimClock$Manual", 0)


@pytest.fixture
def mode(gateway):
    return new_instance(gateway, "slaq.PoolMode")


def pool(gateway, clock, name, weight=1.0, cpus_per_task=1.0):
    return new_instance(gateway, "slaq.TokenPool", name, float(weight), float(cpus_per_task), clock)


def admitted(parent, clock):
    """The pools ``parent`` offers cores to this round, in order, by name."""
    return [p.name() for p in parent.admitted(clock.nanoTime())]


def jobs_pool(gateway, mode, clock, *pools):
    parent = new_instance(gateway, "slaq.JobsPool", "slaq", mode, clock)
    for p in pools:
        parent.addSchedulable(p)
    return parent


def test_running_tasks_draw_tokens_down_exactly_and_overshoot_is_debt(gateway, clock):
    p = pool(gateway, clock, "a", cpus_per_task=2.0)
    p.grant(3.0, 1.0, 1, clock.nanoTime())
    p.increaseRunningTasks(1)
    clock.advanceSeconds(1.0)
    assert p.tokens() == pytest.approx(1.0) and p.consumedCoreSeconds() == pytest.approx(2.0)
    p.increaseRunningTasks(1)  # settles at 1 task first, then 2 run
    clock.advanceSeconds(0.5)
    assert p.tokens() == pytest.approx(-1.0)  # 2 tasks x 2 cpus x 0.5 s overshoot the bucket: debt
    p.decreaseRunningTasks(2)
    clock.advanceSeconds(10.0)  # nothing runs: nothing is drawn
    assert p.tokens() == pytest.approx(-1.0) and p.consumedCoreSeconds() == pytest.approx(4.0)
    p.grant(1.5, 1.0, 2, clock.nanoTime())
    assert p.tokens() == pytest.approx(0.5)  # the deposit pays the debt first
    p.grant(2.0, 1.0, 3, clock.nanoTime())
    assert p.tokens() == pytest.approx(2.0)  # an unspent surplus is not carried over


def test_a_grant_within_the_epoch_changes_only_the_rest_of_it(gateway, clock, mode):
    """A decision between epochs (a job arrived) regrants the rest of the epoch at the new rate: a pool
    that keeps its rate gains nothing, one whose rate falls gives back its share of the rest, and a new
    pool gets its rate for the rest. Before, each decision deposited a whole epoch again, so at a few
    arrivals per epoch no pool ever ran out and the allocation held no more."""
    old, new = pool(gateway, clock, "old"), pool(gateway, clock, "new")
    parent = jobs_pool(gateway, mode, clock, old, new)
    old.grant(2.0, 1.0, 1, clock.nanoTime())  # 2 cores for a 1 s epoch
    mode.deposited(clock.nanoTime())
    old.increaseRunningTasks(2)
    clock.advanceSeconds(0.5)  # spent 1.0 of 2.0
    for _ in range(3):  # the same decision again and again: nothing more
        old.grant(2.0, 0.5, 1, clock.nanoTime())
    assert old.tokens() == pytest.approx(1.0)
    old.grant(1.0, 0.5, 1, clock.nanoTime())  # a job arrived: 1 core each for the 0.5 s left
    new.grant(1.0, 0.5, 1, clock.nanoTime())  # its first grant: the rest of the epoch
    assert old.tokens() == pytest.approx(0.5) and new.tokens() == pytest.approx(0.5)
    clock.advanceSeconds(0.25)
    assert old.tokens() == pytest.approx(0.0)  # 2 tasks for 0.25 s: it has used its share of the rest
    assert admitted(parent, clock) == ["new", "old"]  # new: all of its grant left; old: none
    old.grant(1.0, 1.0, 2, clock.nanoTime())  # the next epoch: a whole epoch, the surplus lost as before
    new.grant(1.0, 1.0, 2, clock.nanoTime())
    assert old.tokens() == pytest.approx(1.0) and new.tokens() == pytest.approx(1.0)
    stray = pool(gateway, clock, "stray")
    stray.grant(3.0, 1.0, 1, clock.nanoTime())  # epoch 1's rate; epoch 2's first allocation left it out
    stray.grant(1.0, 0.5, 2, clock.nanoTime())  # its first grant of epoch 2, mid-way: the rest only, at its rate
    assert stray.tokens() == pytest.approx(0.5)
    stray.grant(4.0, float("nan"), 2, clock.nanoTime())  # seconds that are not a time grant nothing
    stray.grant(9.0, -1.0, 2, clock.nanoTime())
    assert stray.tokens() == pytest.approx(0.5)


def test_pools_with_tokens_go_first_by_fraction_left(gateway, clock, mode):
    a, b, c = (pool(gateway, clock, n) for n in "abc")
    parent = jobs_pool(gateway, mode, clock, a, b, c)
    now = clock.nanoTime()
    a.grant(4.0, 1.0, 1, now)
    b.grant(1.0, 1.0, 1, now)
    c.grant(2.0, 1.0, 1, now)
    mode.deposited(now)
    a.increaseRunningTasks(2)  # a: 4 core-seconds, 2 running for 1.5 s -> 1.0 left (25%)
    clock.advanceSeconds(1.5)
    assert admitted(parent, clock) == ["b", "c", "a"]  # b 100%, c 100% (stable), a 25%
    clock.advanceSeconds(1.0)  # a is now 1 core-second in debt
    assert admitted(parent, clock) == ["b", "c", "a"]


def test_strict_mode_leaves_throttled_pools_out_work_conserving_puts_them_last(gateway, clock, mode):
    rich, broke, indebted = (pool(gateway, clock, n) for n in ("rich", "broke", "indebted"))
    parent = jobs_pool(gateway, mode, clock, broke, indebted, rich)
    now = clock.nanoTime()
    rich.grant(5.0, 1.0, 1, now)
    broke.grant(0.0, 1.0, 1, now)
    indebted.grant(1.0, 1.0, 1, now)
    indebted.increaseRunningTasks(1)
    clock.advanceSeconds(3.0)  # indebted: -2 core-seconds
    mode.deposited(clock.nanoTime())
    mode.configure(True, 30.0)
    # throttled pools after every pool with tokens, ranked by the fraction of their deposit left:
    # indebted (-2 of 1) before broke (given nothing this epoch ranks last)
    assert admitted(parent, clock) == ["rich", "indebted", "broke"]
    mode.configure(False, 30.0)
    assert admitted(parent, clock) == ["rich"]
    broke.close()  # a closed job's pool is not unthrottled: without tokens it waits in strict mode...
    assert admitted(parent, clock) == ["rich"]
    mode.configure(True, 30.0)  # ...and comes last when work-conserving
    assert admitted(parent, clock) == ["rich", "indebted", "broke"]
    mode.configure(False, 30.0)
    broke.grant(0.5, 1.0, 2, clock.nanoTime())  # the loop's minimum share for a closed pool with work
    assert admitted(parent, clock) == ["broke", "rich"]
    broke.increaseRunningTasks(1)
    clock.advanceSeconds(0.6)
    assert admitted(parent, clock) == ["rich"]  # spent: held again until the next deposit


def test_fail_open_before_first_deposit_after_open_all_and_when_deposits_stop(gateway, clock, mode):
    a, b = pool(gateway, clock, "a", weight=1.0), pool(gateway, clock, "b", weight=2.0)
    parent = jobs_pool(gateway, mode, clock, a, b)
    mode.configure(False, 3.0)
    a.increaseRunningTasks(2)
    b.increaseRunningTasks(2)
    assert admitted(parent, clock) == ["b", "a"]  # open before any allocation: fair order (running / weight)
    mode.deposited(clock.nanoTime())  # allocations of nothing: strict mode holds both
    assert admitted(parent, clock) == []
    clock.advanceSeconds(2.9)
    assert not mode.isOpen(clock.nanoTime()) and admitted(parent, clock) == []
    clock.advanceSeconds(0.2)  # no allocation for more than 3 s: the loop is presumed dead
    assert mode.isOpen(clock.nanoTime()) and sorted(admitted(parent, clock)) == ["a", "b"]
    mode.deposited(clock.nanoTime())
    assert admitted(parent, clock) == []
    mode.openAll("test: the loop failed")
    assert sorted(admitted(parent, clock)) == ["a", "b"]
    mode.resume()
    assert admitted(parent, clock) == []


def test_stage_seconds_count_wall_time_with_a_task_set_in_the_pool(gateway, clock):
    """The executor side of a job's iteration time (slaq.live.driver_share): a stage queued or running."""
    p = pool(gateway, clock, "a")
    stage = pool(gateway, clock, "a-stage")  # any schedulable stands for a task set here
    clock.advanceSeconds(1.0)  # the driver alone: not counted
    p.addSchedulable(stage)
    clock.advanceSeconds(0.5)  # queued, waiting for cores: counted
    p.increaseRunningTasks(1)
    clock.advanceSeconds(0.25)
    p.decreaseRunningTasks(1)
    p.removeSchedulable(stage)
    clock.advanceSeconds(2.0)
    assert p.stageSeconds() == pytest.approx(0.75)
