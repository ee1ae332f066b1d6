"""One rule, one behaviour: the replay's token buckets and offer order (``slaq.sim.pools``: ``PoolArrays.settle``,
``PoolArrays.grant``, ``offer_order``) are a hand copy of the JVM's (``TokenPool``, ``JobsPool``, ``PoolMode``), so
this feeds both one script in lock step on one time line and compares their choices: which pools are offered cores
at each offer, in what order (and the replay's first ``free`` of them, its fast path), and every pool's tokens
after each settle and each step (debt carried, surplus dropped, a mid-epoch grant's change), work-conserving and
strict, by the pools' tokens and by a ranking policy's ranks.

The JVM side is the product's classes in the test session's driver JVM, driven through py4j on a
``ShimClock.Manual`` (the clock the pools already take): no wall time. The boundary: Spark's task sets are not
built (a ``TaskSetManager`` needs a live ``TaskSchedulerImpl`` and serialized tasks), so each pool's waiting tasks
are the script's count, and the JVM's order is ``JobsPool.admitted`` (the ranking over the pools' snapshots whose
task sets ``getSortedTaskSetQueue`` concatenates) kept to the pools with tasks waiting, as the replay ranks only
those. Launches follow the replay's ``_offer`` (Spark's ``resourceOffers``): in that order each pool takes every
free core it has tasks for; they reach the JVM as ``increaseRunningTasks``, as a task set's launch does.
Ranks reach both as ``SlaqPools.deposit`` hands them on (every pool's, one not ranked last). Not compared:
``SlaqPools.deposit`` itself (it counts the epochs, here the script's ``epoch``, and needs the
live scheduler and the system clock), fail-open (the replay has no loop to fail), cpus per task other than 1 (a
replayed task takes one core), Spark's default pool beside SLAQ's at the root.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pytest

from slaq.sim.pools import PoolArrays, offer_order
from sparkshim.bridge import new_instance


@dataclass(frozen=True)
class Grant:
    """An allocation: ``cores`` per listed pool for the next ``seconds`` of epoch ``epoch`` (a pool's first grant of an epoch starts it)."""

    at: float
    cores: dict[str, float]
    seconds: float
    epoch: int


@dataclass(frozen=True)
class Submit:
    at: float
    pool: str
    tasks: int


@dataclass(frozen=True)
class Finish:
    at: float
    pool: str
    tasks: int


@dataclass(frozen=True)
class Offer:
    """``free`` cores offered. ``expect``: the order (names, space-separated) work-conserving and strict, where a
    scenario pins it, so a script that stopped reaching what it is about fails."""

    at: float
    free: int
    expect: tuple[str, str] | None = None


@dataclass(frozen=True)
class Tokens:
    """A pinned balance, as ``Offer.expect``."""

    at: float
    pool: str
    tokens: float


@dataclass(frozen=True)
class Rank:
    """A ranking policy's ranks (empty: by tokens again); a pool not listed is last."""

    at: float
    ranks: dict[str, float]


Step = Grant | Submit | Finish | Offer | Tokens | Rank


@dataclass(frozen=True)
class Scenario:
    name: str
    pools: tuple[str, ...]  # by arrival: the replay's rows, the JVM's registration order (ties go to the earlier)
    steps: tuple[Step, ...]


class Side(Protocol):
    def advance(self, t: float) -> None: ...
    def grant(self, cores: dict[str, float], seconds: float, epoch: int) -> None: ...
    def launch(self, pool: str, tasks: int) -> None: ...
    def finish(self, pool: str, tasks: int) -> None: ...
    def order(self, waiting: list[str], free: int) -> tuple[list[str], list[str]]: ...
    def tokens(self) -> dict[str, float]: ...
    def rank(self, ranks: dict[str, float]) -> None: ...


class ReplaySide:
    """The replay's pool model, through the functions ``replay`` itself calls."""

    def __init__(self, names: tuple[str, ...], work_conserving: bool):
        self.names, self.row = names, {n: i for i, n in enumerate(names)}
        self.pools = PoolArrays([1.0] * len(names))
        self.work_conserving = work_conserving

    def advance(self, t: float) -> None:
        self.pools.settle(t, len(self.names))

    def grant(self, cores: dict[str, float], seconds: float, epoch: int) -> None:
        rows = np.array([self.row[p] for p in cores], dtype=np.int64)
        self.pools.grant(rows, np.array(list(cores.values()), dtype=float), seconds, epoch)

    def launch(self, pool: str, tasks: int) -> None:
        self.pools.running[self.row[pool]] += tasks

    def finish(self, pool: str, tasks: int) -> None:
        self.pools.running[self.row[pool]] -= tasks

    def order(self, waiting: list[str], free: int) -> tuple[list[str], list[str]]:
        rows = np.array(sorted(self.row[p] for p in waiting), dtype=np.int64)
        full, first = (offer_order(self.pools, rows, False, self.work_conserving, k).tolist() for k in (rows.size, free))
        return [self.names[i] for i in full], [self.names[i] for i in first]

    def tokens(self) -> dict[str, float]:
        return {n: float(self.pools.tokens[i]) for n, i in self.row.items()}

    def rank(self, ranks: dict[str, float]) -> None:  # as replay's step
        self.pools.ranked = bool(ranks)
        self.pools.rank[:] = [ranks.get(n, math.inf) for n in self.names]


class JvmSide:
    """``TokenPool``s under a ``JobsPool`` in the driver JVM, on a manual clock, never attached to Spark's scheduler."""

    def __init__(self, gateway: Any, names: tuple[str, ...], work_conserving: bool):
        self.clock = new_instance(gateway, "seam.ShimClock$Manual", 0)
        self.mode = new_instance(gateway, "slaq.PoolMode")
        self.mode.configure(work_conserving, 1e9)  # deposits never go stale here: fail-open is out of the contract
        self.parent = new_instance(gateway, "slaq.JobsPool", "slaq", self.mode, self.clock)
        self.pools = {n: new_instance(gateway, "slaq.TokenPool", n, 1.0, 1.0, self.clock) for n in names}
        for p in self.pools.values():
            self.parent.addSchedulable(p)
        self.now = 0.0

    def advance(self, t: float) -> None:
        if t > self.now:
            self.clock.advanceSeconds(t - self.now)  # the scripts' times are binary fractions: exact in nanoseconds
            self.now = t

    def grant(self, cores: dict[str, float], seconds: float, epoch: int) -> None:
        now = self.clock.nanoTime()  # as SlaqPools.deposit: one time for the whole batch
        for p, c in cores.items():
            self.pools[p].grant(float(c), float(seconds), epoch, now)
        self.mode.deposited(now)

    def launch(self, pool: str, tasks: int) -> None:
        self.pools[pool].increaseRunningTasks(tasks)

    def finish(self, pool: str, tasks: int) -> None:
        self.pools[pool].decreaseRunningTasks(tasks)

    def order(self, waiting: list[str], free: int) -> tuple[list[str], list[str]]:
        full = [n for n in (p.name() for p in self.parent.admitted(self.clock.nanoTime())) if n in waiting]
        return full, full[:free]

    def tokens(self) -> dict[str, float]:
        return {n: p.tokens() for n, p in self.pools.items()}

    def rank(self, ranks: dict[str, float]) -> None:  # as SlaqPools.deposit
        for n, p in self.pools.items():
            p.rank(ranks.get(n, math.inf))
        self.parent.ranked(bool(ranks))


def same_tokens(replay: Side, jvm: Side, where: str) -> dict[str, float]:
    """Both sides' balances, equal to the last nanosecond's worth; the JVM's returned."""
    mine, theirs = replay.tokens(), jvm.tokens()
    assert mine == pytest.approx(theirs, abs=1e-9), f"{where}: tokens, replay {mine} != JVM {theirs}"
    return theirs


def run(scenario: Scenario, replay: Side, jvm: Side, work_conserving: bool) -> None:
    pending = dict.fromkeys(scenario.pools, 0)
    for n, step in enumerate(scenario.steps):
        where = f"{scenario.name} ({'work-conserving' if work_conserving else 'strict'}), step {n} {step}"
        for side in (replay, jvm):
            side.advance(step.at)
        same_tokens(replay, jvm, where + " settled")
        if isinstance(step, Grant):
            for side in (replay, jvm):
                side.grant(step.cores, step.seconds, step.epoch)
        elif isinstance(step, Rank):
            for side in (replay, jvm):
                side.rank(step.ranks)
        elif isinstance(step, Submit):
            pending[step.pool] += step.tasks
        elif isinstance(step, Finish):
            for side in (replay, jvm):
                side.finish(step.pool, step.tasks)
        elif isinstance(step, Offer):
            waiting = [p for p in scenario.pools if pending[p] > 0]
            (full, first), (jvm_full, jvm_first) = replay.order(waiting, step.free), jvm.order(waiting, step.free)
            assert (full, first) == (jvm_full, jvm_first), f"{where}: offer order, replay {full} (first {first}) != JVM {jvm_full}"
            if step.expect is not None:
                assert " ".join(jvm_full) == step.expect[0 if work_conserving else 1], where
            free = step.free
            for p in first:
                launched = min(free, pending[p])
                pending[p] -= launched
                free -= launched
                for side in (replay, jvm):
                    side.launch(p, launched)
        tokens = same_tokens(replay, jvm, where)
        if isinstance(step, Tokens):
            assert tokens[step.pool] == pytest.approx(step.tokens, abs=1e-9), where


SCENARIOS = [
    Scenario("equal grants", ("a", "b", "c"), (
        Grant(0.0, {"a": 2.0, "b": 2.0, "c": 2.0}, 1.0, 1),
        Submit(0.0, "a", 4), Submit(0.0, "b", 4), Submit(0.0, "c", 4),
        Offer(0.0, 2, ("a b c", "a b c")),  # all have their whole grant left: ties go to the earliest
        Offer(0.25, 2, ("b c a", "b c a")),  # a spent a quarter
        Finish(0.5, "a", 1),
        Offer(0.5, 1, ("c b a", "c b a")),
        Offer(0.75, 1),
        Grant(1.0, {"a": 2.0, "b": 2.0, "c": 2.0}, 1.0, 2),  # surplus dropped: equal again
        Tokens(1.0, "a", 2.0),
        Offer(1.0, 1, ("a b c", "a b c")),
        Offer(1.5, 3),
    )),
    Scenario("one pool in debt", ("a", "b"), (
        Grant(0.0, {"a": 1.0, "b": 2.0}, 1.0, 1),
        Submit(0.0, "a", 4), Submit(0.0, "b", 1),
        Offer(0.0, 3, ("a b", "a b")),  # a takes all three cores: it overshoots its 1 core-second
        Finish(0.5, "a", 1),
        Tokens(0.5, "a", -0.5),
        Offer(0.5, 1, ("b a", "b")),
        Grant(1.0, {"a": 2.0, "b": 2.0}, 1.0, 2),
        Tokens(1.0, "a", 0.5),  # -1.5 of debt carried into 2 core-seconds
        Submit(1.0, "a", 2), Submit(1.0, "b", 2),
        Offer(1.0, 1, ("b a", "b a")),
        Offer(1.25, 1, ("b a", "b")),  # a's tokens are exactly 0: throttled
        Finish(1.5, "a", 2),
        Offer(1.5, 2),
        Grant(2.0, {"a": 1.0, "b": 1.0}, 1.0, 3),
        Offer(2.0, 2),
    )),
    Scenario("a mid-epoch arrival", ("a", "b", "c"), (
        Grant(0.0, {"a": 2.0, "b": 2.0}, 1.0, 1),
        Submit(0.0, "a", 4), Submit(0.0, "b", 4),
        Offer(0.0, 2, ("a b", "a b")),
        Offer(0.25, 2, ("b a", "b a")),
        Grant(0.5, {"a": 1.0, "b": 1.0, "c": 2.0}, 0.5, 1),  # c arrived: each gains or gives back its change for the rest
        Tokens(0.5, "a", 0.5), Tokens(0.5, "c", 1.0),
        Grant(0.5, {"a": 1.0, "b": 1.0, "c": 2.0}, 0.5, 1),  # the same decision again grants nothing more
        Submit(0.5, "c", 2),
        Finish(0.5, "a", 2),
        Offer(0.5, 2, ("c b a", "c b a")),
        Grant(0.75, {"a": 1.0, "b": 2.0, "c": 1.0}, 0.25, 1),
        Finish(0.75, "b", 2),
        Offer(0.75, 2),
        Grant(1.0, {"a": 1.0, "b": 1.0, "c": 2.0}, 1.0, 2),
        Offer(1.0, 2),
    )),
    Scenario("a pool the epoch's first allocation left out", ("a", "b"), (
        Grant(0.0, {"a": 2.0, "b": 2.0}, 1.0, 1),
        Submit(0.0, "a", 6), Submit(0.0, "b", 2),
        Offer(0.0, 2, ("a b", "a b")),
        Grant(1.0, {"a": 2.0}, 1.0, 2),  # b left out: it keeps epoch 1's unspent 2 core-seconds and rate for now
        Finish(1.0, "a", 2),
        Offer(1.0, 2, ("a b", "a b")),
        Offer(1.25, 2, ("b a", "b a")),  # b runs on its stale surplus
        Grant(1.5, {"a": 1.0, "b": 1.0}, 0.5, 2),  # b's first grant of epoch 2: a new epoch for it, not a change of its old rate
        Tokens(1.5, "b", 0.5),
        Grant(1.625, {"a": 1.0, "b": 3.0}, math.nan, 2),  # seconds that are no time grant nothing (the rate is still taken)
        Finish(1.75, "b", 1),
        Offer(1.75, 1),
        Grant(2.0, {"a": 1.0, "b": 1.0}, 1.0, 3),
        Offer(2.0, 2),
    )),
    Scenario("strict mode with an empty pool", ("broke", "indebted", "rich", "idle"), (
        Grant(0.0, {"broke": 0.0, "indebted": 1.0, "rich": 4.0, "idle": 2.0}, 1.0, 1),  # idle: tokens, no task set
        Submit(0.0, "broke", 2), Submit(0.0, "indebted", 3), Submit(0.0, "rich", 1),
        Offer(0.0, 3, ("indebted rich broke", "indebted rich")),  # broke: granted nothing, an empty bucket
        Submit(0.5, "indebted", 2),
        Tokens(0.5, "indebted", -0.5),
        Offer(0.5, 1, ("rich indebted broke", "rich")),
        Offer(0.75, 1, ("indebted broke", "")),  # only throttled pools wait: strict offers nothing
        Grant(1.0, {"broke": 0.5, "indebted": 1.0, "rich": 4.0, "idle": 2.0}, 1.0, 2),
        Offer(1.0, 2),
        Finish(1.25, "indebted", 3),
        Offer(1.25, 2),
    )),
    Scenario("ranked pools", ("a", "b", "c", "d"), (
        Grant(0.0, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, 1.0, 1),
        Rank(0.0, {"a": 30.0, "b": 2e9 + 1.0, "c": 4.0}),  # d is not ranked: last
        Submit(0.0, "a", 4), Submit(0.0, "b", 4), Submit(0.0, "c", 2), Submit(0.0, "d", 4),
        Offer(0.0, 2, ("c a b d", "c a b d")),  # the ranks, not the tokens
        Finish(0.5, "c", 2), Submit(0.5, "c", 2),
        Offer(0.5, 1, ("c a b d", "a b d")),  # c spent its core-second: strict leaves it out, work-conserving keeps its rank
        Rank(1.0, {"a": 30.0, "b": 1.0, "c": 4.0, "d": 4.0}),  # re-ranked at a decision; a tie goes to the earlier pool
        Offer(1.0, 2, ("b c d a", "b d a")),
        Rank(1.25, {}),  # no ranks: by the tokens again
        Offer(1.25, 2),
        Grant(2.0, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, 1.0, 2),
        Offer(2.0, 2),
    )),
]


@pytest.mark.parametrize("work_conserving", [True, False], ids=["work-conserving", "strict"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_replay_and_the_jvm_make_the_same_choices(gateway, scenario, work_conserving):
    run(scenario, ReplaySide(scenario.pools, work_conserving), JvmSide(gateway, scenario.pools, work_conserving), work_conserving)
