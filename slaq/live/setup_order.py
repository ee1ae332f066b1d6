"""The ``order`` policy's ranks: free cores go first to the job expected to have the fewest executor seconds left
to its 90% point, re-ranked at every decision (the clairvoyant order's rule, with estimates in place of the future).

Most of a spark.ml fit's executor work to its 90% point comes before its second loss (caching its input, the first
passes), where a loss curve has nothing to predict from and SLAQ shares the cores evenly among every new fit. So a
job in that set-up is estimated from the jobs the application has already seen: the median set-up of the latest
:data:`RECENT` of its family (a spark.ml fit's estimator class), else of any job, less what it used so far, plus
their median work from set-up to 90%. A set-up with nothing to estimate from comes after those, by arrival. A job
with a curve is :data:`CAP_ITERATIONS` iterations from its 90% point until its fitted curve puts it past that point
and its latest drop is under :data:`FALLING` of its drop so far; then, and once it reached its target, it goes
after every job short of it. Jobs known to report no loss (a spark.ml fit's catalogue says so) go last, by arrival.

The ranks order the pools (``JobsPool``) while some job is short of its 90% point. Once none is, there are no
ranks and SLAQ's own allocation shares the cores: a strict order would then leave a long tail waiting behind the
cheapest one, where SLAQ gives each core to the job whose loss it lowers most. Nothing a fit computes changes,
only when its tasks run. Pure given the jobs: the state is what finished jobs leave behind, bounded.
"""

from __future__ import annotations

import statistics
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from slaq.live.job import LiveJob
from slaq.metrics import NINETY, reduction_index
from slaq.predict.forecast import ForecastTable

RECENT = 3  # finished set-ups an estimate takes the median of, the latest first (a warm cache makes later ones cheaper)
CAP_ITERATIONS = 3  # a curve job short of its 90% point is taken as this many iterations from it
FALLING = 0.02  # a latest drop at least this share of the drop so far: not past the 90% point
MAX_FAMILIES = 256  # families remembered (a Spark Connect client names its estimators), the least recently seen dropped
PAST, NO_ESTIMATE, NO_LOSS = 1e9, 2e9, 3e9  # tiers added to a rank: past its 90% point, a set-up with no estimate, no loss reported
ANY = ""  # the family every job is also counted in


@dataclass
class _Open:
    job: LiveJob
    setup: float | None = None  # core-seconds to its second loss, once it reported that


class _Latest:
    """The :data:`RECENT` latest-arrived values of a figure (by the job's arrival order)."""

    def __init__(self) -> None:
        self.values: list[tuple[float, float]] = []

    def add(self, order: float, value: float) -> None:
        self.values = sorted([*self.values, (order, value)])[-RECENT:]

    def median(self) -> float | None:
        return statistics.median(v for _, v in self.values) if self.values else None


class SetupOrder:
    """Each decision's ranks (:meth:`ranks`); remembers of every job its set-up's cost and, once it ended, its work
    from set-up to its 90% point, per family and over all (:data:`MAX_FAMILIES` families at most)."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self._setup: OrderedDict[str, _Latest] = OrderedDict()
        self._post: OrderedDict[str, _Latest] = OrderedDict()

    def ranks(self, jobs: Sequence[LiveJob], table: ForecastTable) -> dict[str, float] | None:
        """Each job's rank, least first: its estimated executor seconds left to its 90% point, plus a tier; None when
        no job is short of that point. ``table``: the jobs' forecasts, row for row (the allocator's own)."""
        self._observe(jobs)
        now_norm = table.normalized_now()
        out = {j.name: _curve_left(j, float(now_norm[i]), float(table.cost[i]))
               for i, j in enumerate(jobs) if len(j.history.losses) >= 2}
        for j in jobs:
            if j.reports is False:  # not one with no loss yet: a job the order holds back has none either
                out[j.name] = NO_LOSS + j.order
            elif j.satisfied and j.name not in out:
                out[j.name] = PAST
            elif j.name not in out:
                left = self._setup_left(j)
                out[j.name] = NO_ESTIMATE + j.order if left is None else left
        short = any(r < PAST or NO_ESTIMATE <= r < NO_LOSS for r in out.values())  # a curve short of 90%, or a set-up
        return out if short else None

    def _observe(self, jobs: Sequence[LiveJob]) -> None:
        now = {j.name: j for j in jobs}
        for name in [n for n, o in self._open.items() if now.get(n) is not o.job]:  # ended (or a new job took its name)
            self._ended(self._open.pop(name))
        for name, j in now.items():
            self._open.setdefault(name, _Open(j))
        for o in self._open.values():
            self._note_setup(o)

    def _note_setup(self, o: _Open) -> None:
        """Its set-up's cost, remembered once it reported its second loss."""
        if o.setup is None and len(o.job.history.losses) >= 2:
            o.setup = cumulative_at(o.job, 1)
            if o.setup is not None:
                self._remember(self._setup, o.job, o.setup)

    def _ended(self, o: _Open) -> None:
        """An ended job's setup (its whole history is known now: it may have run every loss between two decisions)
        and its work from set-up to its 90% point."""
        self._note_setup(o)
        if o.setup is None:
            return
        losses = o.job.history.losses
        k = reduction_index(losses, NINETY)
        at = cumulative_at(o.job, max(len(losses) - 1 if k is None else k, 1))
        if at is not None:
            self._remember(self._post, o.job, max(at - o.setup, 0.0))

    @staticmethod
    def _remember(table: OrderedDict[str, _Latest], job: LiveJob, value: float) -> None:
        for family in {job.family, ANY}:
            table.setdefault(family, _Latest()).add(job.order, value)
            table.move_to_end(family)
        while len(table) > MAX_FAMILIES:
            table.popitem(last=False)

    @staticmethod
    def _median(table: OrderedDict[str, _Latest], family: str) -> float | None:
        """The figure's median over the job's family, else over any job."""
        for key in (family, ANY) if family else (ANY,):
            got = table.get(key)
            if got is not None and got.values:
                return got.median()
        return None

    def _setup_left(self, j: LiveJob) -> float | None:
        """The family's median set-up less what the job used (past it: a quarter more than it used), plus the median
        work from set-up to 90%; None: no set-up seen yet."""
        est = self._median(self._setup, j.family)
        if est is None:
            return None
        post = self._median(self._post, j.family)
        return (est - j.consumed if j.consumed < est else 0.25 * j.consumed) + (post or 0.0)


def _curve_left(j: LiveJob, normalized_now: float, forecast_cost: float) -> float:
    """:data:`CAP_ITERATIONS` times a curve job's cost per iteration after its set-up (its forecast's before it has
    one); :data:`PAST` plus that cost once its fitted curve puts it past its 90% point and it stopped falling."""
    after, losses = j.history.core_seconds[1:], j.history.losses
    cost = float(np.median(after)) if after else forecast_cost
    falling = losses[-2] - losses[-1] >= FALLING * max(losses[0] - losses[-1], 1e-12)
    past = j.satisfied or (normalized_now <= 1 - NINETY + 1e-12 and not falling)
    return PAST + cost if past else CAP_ITERATIONS * cost


def cumulative_at(job: LiveJob, report: int) -> float | None:
    """The job's pool core-seconds at its report ``report`` (0-based, at least 1): the latest report's less the costs since."""
    last, cs, n = job.last, job.history.core_seconds, len(job.history.losses)
    if last is None or not 1 <= report < n or len(cs) != n - 1:
        return None
    return last[1] - float(sum(cs[report:]))
