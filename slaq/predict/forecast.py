"""What the policies see: every active job's predicted loss as a function of its allocation.

``forecast(job)`` turns one job's history into a :class:`JobForecast`; :class:`ForecastTable`
stacks many into numpy arrays so a policy can evaluate thousands of jobs at many allocations at
once. Pure: no Spark, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from slaq.predict.loss_curves import LINEAR, Curve, evaluate, fit_loss_curve, strawman
from slaq.predict.runtime import estimate_runtime, iterations_in
from slaq.stats.history import JobHistory, loss_span, normalized_loss

DEFAULT_COST = 1.0  # core-seconds per iteration assumed before anything is known about any job


@dataclass(frozen=True)
class JobForecast:
    job_id: str
    curve: Curve
    k_now: float  # iteration index of the latest loss
    loss_now: float
    loss_first: float
    scale: float  # §4.1 normalizer: the largest single-iteration reduction seen
    floor: float  # where the normalized loss reaches 0
    cost: float | None  # core-seconds per iteration, None when not yet observed
    overhead: float = 0.0
    weight: float = 1.0
    cap: float = math.inf  # most cores the job can use (its parallelism)
    order: float = 0.0  # arrival order, for FIFO


def forecast(
    job_id: str,
    history: JobHistory,
    weight: float = 1.0,
    cap: float = math.inf,
    order: float = 0.0,
    curve: Curve | None = None,
) -> JobForecast:
    """Fit (or reuse ``curve``) and package everything a policy needs about one job.

    A job with fewer than two losses has no reduction yet: it is predicted to reduce its loss by
    one normalized unit per iteration (the most any iteration can), so new jobs are explored first,
    as in the paper's Fig. 7-8 where arrivals get the most cores.
    """
    losses = list(history.losses)  # a snapshot: the job's thread may append meanwhile
    cost, overhead = estimate_runtime(history.core_seconds, history.wall_seconds, history.cores)
    if len(losses) < 2:
        now = losses[-1] if losses else 1.0
        k = float(max(len(losses) - 1, 0))
        return JobForecast(job_id, Curve(LINEAR, (now, 1.0, k, 0.0)), k, now, now, 1.0, now - 1.0,
                           cost, overhead, weight, cap, order)
    if curve is None:
        curve = fit_loss_curve(losses)
    scale = history.scale()
    floor = predicted_floor(curve, losses, scale)
    return JobForecast(job_id, curve, float(len(losses) - 1), losses[-1], losses[0], scale, floor,
                       cost, overhead, weight, cap, order)


def predicted_floor(curve: Curve, losses: list[float], scale: float) -> float:
    """Where a job's normalized loss reaches 0: its fitted curve's asymptote, but never above a loss
    already observed (data contradicts such a floor), and one largest reduction (``scale``) below the
    lowest loss for a curve that never levels off."""
    floor = curve.floor
    if not math.isfinite(floor):
        floor = min(losses) - scale
    return min(floor, min(losses))


@dataclass
class CurveCache:
    """A job's latest fitted curve, refitted only when the job reported new losses since the last fit.

    Shared by the epoch loop's forecasts and the job's target check (two threads): the fit and the
    history length it belongs to are swapped in as one tuple, and callers pass a snapshot of the losses.
    """

    fitted: tuple[int, Curve | None] = (-1, None)  # (number of losses fitted, the curve)
    # the latest forecast made with it, with the history it read and what identifies that history's state
    # (its lists only grow, so their lengths do): :func:`job_forecast` reuses it until the history changes
    last: tuple[JobHistory, tuple, JobForecast] | None = None

    @property
    def curve(self) -> Curve | None:
        return self.fitted[1]

    def current(self, losses: list[float]) -> Curve | None:
        """The fitted curve for ``losses`` (None before two losses: :func:`forecast` explores then)."""
        n = len(losses)
        if n < 2:
            return None
        fitted = self.fitted
        if fitted[0] != n:
            fitted = self.fitted = (n, self.fit(losses))
        return fitted[1]

    def fit(self, losses: list[float]) -> Curve:
        """A curve fitted to ``losses``, which :meth:`current` keeps until more arrive."""
        return fit_loss_curve(losses)


def job_forecast(
    job_id: str,
    history: JobHistory,
    curves: CurveCache,
    weight: float = 1.0,
    cap: float = math.inf,
    order: float = 0.0,
    predictive: bool = True,
) -> JobForecast:
    """The one way the simulator and the live loop turn a tracked job into what the policies read:
    the job's cached fitted curve (``predictive``) or the strawman that repeats the last reduction,
    and exploration before it has two losses. The same history state and arguments give the same
    forecast: the one made last is reused (what re-forecasting thousands of idle jobs every epoch costs)."""
    key = (len(history.losses), len(history.core_seconds), len(history.wall_seconds), len(history.cores), job_id, weight, cap, order,
           predictive)  # read before the forecast reads the history: a report meanwhile makes the next key differ
    last = curves.last
    if last is not None and last[0] is history and last[1] == key:
        return last[2]
    losses = list(history.losses)  # a snapshot: the job's thread may append meanwhile
    if len(losses) < 2:
        curve = None
    elif predictive:
        curve = curves.current(losses)
    else:
        curve = strawman(losses)
    made = forecast(job_id, history, weight, cap, order, curve)
    curves.last = (history, key, made)
    return made


class ForecastTable:
    """Column-wise stack of :class:`JobForecast` for vectorized policy evaluation."""

    def __init__(self, jobs: Sequence[JobForecast], epoch: float):
        self.jobs = list(jobs)
        self.epoch = float(epoch)
        n = len(self.jobs)
        jobs = self.jobs

        def column(name: str) -> np.ndarray:
            return np.fromiter(map(attrgetter(name), jobs), float, n)

        self.family = np.fromiter(map(attrgetter("curve.family"), jobs), dtype=np.int64, count=n)
        self.params = np.array([j.curve.p for j in jobs], dtype=float).reshape(n, 4)
        self.k_now = column("k_now")
        self.loss_now = column("loss_now")
        self.scale = column("scale")
        self.floor = column("floor")
        self.loss_first = column("loss_first")
        self.span = loss_span(self.loss_first, self.floor)
        # what an unmeasured job is assumed to cost: the median of the jobs that ran iterations (a cost given
        # before the job's first reduction is a prediction, not a cost per iteration seen)
        known = [j.cost for j in jobs if j.cost is not None and j.k_now >= 1]
        prior = float(np.median(known)) if known else DEFAULT_COST
        self.cost = np.fromiter((prior if j.cost is None else j.cost for j in jobs), float, n)
        self.overhead = column("overhead")
        self.weight = column("weight")
        self.cap = column("cap")
        self.order = column("order")

    def __len__(self) -> int:
        return len(self.jobs)

    def loss_at(self, cores: np.ndarray, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Predicted raw loss at the end of the epoch for each job (``rows``) given ``cores``.

        ``cores`` broadcasts against the selected rows; a trailing axis evaluates several
        allocations per job at once.
        """
        cores = np.asarray(cores, dtype=float)
        pick = _column_picker(rows, cores.ndim)
        n_iter = iterations_in(self.epoch, cores, pick(self.cost), pick(self.overhead))
        predicted = evaluate(pick(self.family), pick(self.params), pick(self.k_now) + n_iter)
        return np.minimum(predicted, pick(self.loss_now))

    def normalized_now(self) -> np.ndarray:
        """Each job's current :func:`~slaq.stats.history.normalized_loss`."""
        return normalized_loss(self.loss_now, self.loss_first, self.floor)

    def normalized_loss_at(self, cores: np.ndarray, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Predicted :func:`~slaq.stats.history.normalized_loss` at the end of the epoch given ``cores``."""
        cores = np.asarray(cores, dtype=float)
        pick = _column_picker(rows, cores.ndim)
        return normalized_loss(self.loss_at(cores, rows), pick(self.loss_first), pick(self.floor))


def _column_picker(rows: np.ndarray | slice, ndim: int):
    """Select ``rows`` of a per-job column and add trailing axes so it broadcasts against ``ndim``-d allocations."""
    extra = (slice(None),) + (None,) * max(ndim - 1, 0)
    return lambda column: column[rows][extra]
