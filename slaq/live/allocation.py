"""One epoch's allocation: the shares by rule, the policy's choice for the rest (pure given the histories).

This is the simulator's code path: the same ``forecast``/``ForecastTable``/``Policy`` objects over
plain data.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from slaq.live.config import ORDER
from slaq.live.driver_share import DriverShare, cap_driver_bound, driver_bound_warning, driver_caps
from slaq.live.job import LiveJob
from slaq.live.registry import NO_LOSS_EPOCHS
from slaq.live.setup_order import SetupOrder
from slaq.live.status import MAX_STATUS_JOBS, JobFigures, share_reason
from slaq.policy import make_policy
from slaq.policy.base import unit
from slaq.predict.forecast import ForecastTable, job_forecast

log = logging.getLogger("slaq.loop")


def fixed_shares(jobs: list[LiveJob], closed: Iterable[str], capacity: float) -> dict[str, float]:
    """The cores of jobs the policy does not steer, by rule (pure):

    * a job that reached its target, and a closed job's pool that still has work, get the minimum
      share (:func:`~slaq.policy.base.unit`), so work a finished block keeps submitting runs throttled;
    * a job known to report no loss (spark.ml KMeans, trees, ALS, ...), and one not known either way
      that reported none for :data:`NO_LOSS_EPOCHS` epochs, gets its even, weighted share: with no
      curve to predict from, it is treated as fair sharing would. A job known to report (an iterative
      spark.ml fit) stays with the policy, as a new job, until its first loss.
    """
    closed = list(closed)
    n = len(jobs) + len(closed)
    if n == 0 or capacity <= 0:
        return {}
    minimum = unit(capacity, n)
    total_weight = sum(j.weight for j in jobs) + len(closed)
    out = {name: minimum for name in closed}
    for j in jobs:
        if j.satisfied:
            out[j.name] = minimum
        elif not j.history.losses and (j.reports is False or (j.reports is None and j.silent_epochs >= NO_LOSS_EPOCHS)):
            out[j.name] = capacity * j.weight / total_weight
    used = sum(out.values())
    if used > capacity:
        out = {k: v * capacity / used for k, v in out.items()}
    return out


@dataclass(frozen=True)
class Decision:
    """One allocation: ``alloc`` (cores per job and closed pool, what is deposited), ``ranks`` (the order the pools
    are offered cores, least first, for a policy that orders them; a pool without one last) and, per job in
    ``jobs`` order, its forecast row, cores, losses so far and figures (what the status shows)."""

    alloc: dict[str, float]
    ranks: dict[str, float] | None = None
    jobs: tuple[str, ...] = ()
    table: ForecastTable | None = None
    cores: tuple[float, ...] = ()
    iterations: tuple[int, ...] = ()
    figures: tuple[JobFigures, ...] = ()


NOTHING = Decision({})


class Allocator:
    """The policy and what it decides with: the reserve and the epoch length. ``status``: whether a
    :class:`Decision` carries what the status shows (its table and figures) and the driver log says why (the WARN
    about driver-bound jobs); the replay (:mod:`slaq.sim.replay`) reads only the cores, which are the same either
    way, and its runs are not the application's."""

    def __init__(self, policy: str = "slaq", epoch: float = 2.0, reserve: float = 0.0, status: bool = True):
        self.policy_name = policy
        self.epoch = float(epoch)
        self.order = SetupOrder() if policy == ORDER else None  # ranks the pools while a job is short of its 90% point
        self.policy = make_policy("slaq" if self.order else policy)  # the tokens, and the cores once there are no ranks
        self.reserve = float(reserve)
        self.status = status
        self.driver_warned = False  # the one WARN per application about driver-bound jobs was logged

    def decide(self, jobs: Sequence[LiveJob], capacity: float, closed: Iterable[str], now: float) -> Decision:
        """Cores per job in ``jobs`` (and per closed pool in ``closed``) for ``capacity`` cores: the
        :func:`fixed_shares` first, the policy's choice for the rest."""
        names = {j.name for j in jobs}
        closed = [c for c in closed if c not in names]
        if not jobs and not closed:
            return NOTHING
        capacity = max(capacity - self.reserve, 0.0)
        alloc = fixed_shares(list(jobs), closed, capacity)
        fixed = set(alloc)
        forecasts = [job_forecast(j.name, j.history, j.curves, j.weight, math.inf, j.order) for j in jobs]  # all: the status shows them
        steered = [(j, f) for j, f in zip(jobs, forecasts) if j.name not in alloc]
        minimum = 0.0
        if steered:
            table = ForecastTable([f for _, f in steered], self.epoch)
            left = max(capacity - sum(alloc.values()), 0.0)
            minimum = unit(left, len(steered)) if self.policy.minimum_share else 0.0
            cores = self.policy.allocate(table, left)
            chosen = {j.name: float(c) for (j, _), c in zip(steered, cores)}
            if self.policy.fitted_curves:  # a policy that steers by predicted gain; fair, fifo, ... keep their own shares
                chosen = self._cap_driver_bound(chosen, {j.name: j.driver for j, _ in steered}, unit(left, len(steered)))
            alloc.update(chosen)
        every = ForecastTable(forecasts, self.epoch) if jobs and (self.status or self.order is not None) else None  # every job's row
        ranks = None if self.order is None or every is None else self.order.ranks(jobs, every)
        figures: list[JobFigures] = []
        for j, f in zip(jobs, forecasts):
            j.cores = alloc[j.name]
            if not self.status or len(figures) == MAX_STATUS_JOBS:  # what the status lists (slaq.live.status); the rest need only their cores
                continue
            why = share_reason(j.history.iterations, j.satisfied, j.name in fixed, j.cores, minimum,
                               self.policy.fitted_curves and self.policy.minimum_share, ranks is not None)
            figures.append(j.figures(f, why, now))
        return Decision(alloc, ranks, tuple(j.name for j in jobs), every if self.status else None,
                        tuple(alloc[j.name] for j in jobs), tuple(j.history.iterations for j in jobs), tuple(figures))

    def _cap_driver_bound(self, chosen: dict[str, float], shares: dict[str, DriverShare], minimum: float) -> dict[str, float]:
        """The policy's choice with driver-bound jobs held to what their executors use (said once per application)."""
        found = driver_caps(shares, minimum)
        if not found:
            return chosen
        if self.status and not self.driver_warned:
            self.driver_warned = True
            log.warning(driver_bound_warning(found))
        return cap_driver_bound(chosen, {job: cap for job, (_, cap) in found.items()})
