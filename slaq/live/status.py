"""One epoch of the live loop as an ``epoch_status`` message (slaq/messages.json).

The loop builds one per epoch from what it just decided and pushes it to the driver JVM, where the
SLAQ tab of the Spark UI, its REST JSON and the per-epoch driver log line show it
(``slaq/java/io/slaqriffle/slaq/SlaqStatus.java``, the line ``SlaqLines.java``); the console table of :mod:`slaq.progress` prints the same
message. Pure functions: no Spark, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from slaq.messages import EpochStatus, JobStatus
from slaq.predict.forecast import ForecastTable
from slaq.stats.history import loss_span, normalized_loss

WAITING = "waiting"  # registered, no loss reported yet
RUNNING = "running"
FINISHED = "finished"

# Why a job got its share this epoch (the ``why`` of its row): one of these.
EXPLORING = "exploring a new job"  # fewer than two losses: no curve yet, so the policy tries it out first
NO_LOSS = "no loss yet"  # reports no loss (or none so far): an even, weighted share, as fair sharing would give
GAIN = "predicted gain per core"  # the policy gave it cores for the normalized loss they are predicted to remove
MINIMUM = "minimum share"  # only the guaranteed minimum: others' predicted gain per core ranked higher
TARGET = "target reached"  # reached its target: the minimum share from then on
POLICY = "policy's share"  # a policy that does not rank by predicted gain (fair, fifo, ...) chose it
RANKED = "ranked by work left to 90%"  # the order policy offers cores by expected executor work left to the 90% point, least first
ENDED = "ended"  # a finished job that did not reach a target
PRUNED = "pruned"  # a finished fit of a tuning candidate whose remaining folds were not fitted (slaq.integrations.pruning)
FAILED = "failed"  # a finished job whose block (a slaq.job block, a spark.ml fit) ended with an exception
WHYS = (EXPLORING, NO_LOSS, GAIN, MINIMUM, TARGET, POLICY, RANKED, ENDED, PRUNED, FAILED)
# Jobs one status lists: the first open ones, in arrival order (the JVM's model keeps as many: SlaqBounds.MAX_EPOCH_JOBS),
# so a status costs the same however many jobs are open, and a job listed stays listed until it ends
MAX_STATUS_JOBS = 1000

@dataclass(frozen=True)
class Tuning:
    """Where a fit sits in a tuner (CrossValidator, TrainValidationSplit): the tuner's name, the param
    map's index, the fold (-1: none) and whether it is the refit on the best param map."""

    group: str = ""
    candidate: int = -1
    fold: int = -1
    refit: bool = False


NOT_TUNING = Tuning()


@dataclass(frozen=True)
class CoreSample:
    """Every pool's cumulative core-seconds at one drain, and when that drain happened (the loop's clock)."""

    t: float
    consumed: Mapping[str, float] = field(default_factory=dict)


def used_cores(now: CoreSample, before: CoreSample, capacity: float) -> dict[str, float]:
    """Cores each pool used between two drains: its core-seconds over the time between the *same* two
    drains, so "used" is measured over the window its core-seconds were counted in, like an allocation
    (cores held for a length of time). A pool new since ``before`` counts from 0; a reopened pool's
    restarted count gives 0. Running tasks never exceed the executors' cores, so the total stays within
    ``capacity``; clock jitter between pools is scaled away so it never reads above it."""
    seconds = now.t - before.t
    if seconds <= 0:
        return {job: 0.0 for job in now.consumed}
    used = {job: max(c - before.consumed.get(job, 0.0), 0.0) / seconds for job, c in now.consumed.items()}
    total = sum(used.values())
    if capacity > 0 and total > capacity:
        used = {job: u * capacity / total for job, u in used.items()}
    return used


def share_reason(losses: int, satisfied: bool, fixed: bool, cores: float, minimum: float, ranks_by_gain: bool,
                 ranked: bool = False) -> str:
    """Why a job got ``cores`` this epoch: from the rule or policy decision that gave them (``fixed``: a
    rule of :func:`slaq.live.loop.fixed_shares`, not the policy; ``minimum``: the guaranteed share; ``ranked``: the
    pools are offered cores by rank, which decides over the shares)."""
    if satisfied:
        return TARGET
    if ranked:
        return RANKED
    if fixed:
        return NO_LOSS
    if losses < 2:
        return EXPLORING
    if not ranks_by_gain:
        return POLICY
    return GAIN if cores > minimum * (1 + 1e-6) else MINIMUM


@dataclass(frozen=True)
class JobFigures:
    """What a job's row shows besides the forecast: its share's reason, times and cost, and what its
    normalized loss is measured against (:func:`slaq.metrics.loss_reference`)."""

    why: str
    wall_seconds: float
    core_seconds: float
    seconds_to_target: float | None = None  # slaq.metrics.seconds_to_target
    tuning: Tuning = NOT_TUNING
    driver_fraction: float | None = None  # share of its latest iterations' time the driver alone worked (driver_share)
    seconds_to_ninety: float | None = None  # slaq.metrics.time_to_reduction from its start, once it finished
    target: str = ""  # the target it declared, as the user reads it ("" without one)
    first_loss: float = 1.0
    floor: float = 0.0


def predicted_gain(table: ForecastTable, cores: Sequence[float], figures: Sequence[JobFigures]) -> np.ndarray:
    """The drop of each job's shown normalized loss its forecast predicts over the next epoch with ``cores``."""
    alloc = np.asarray(cores, dtype=float)
    drop = table.loss_at(np.zeros_like(alloc)) - table.loss_at(alloc)
    span = loss_span(np.array([f.first_loss for f in figures]), np.array([f.floor for f in figures]))
    return np.maximum(drop / span, 0.0)


def job_status(job: str, state: str, iterations: int, loss: float, gain: float, cores: float, used: float, figures: JobFigures) -> JobStatus:
    """One row (a ``job_status`` message), every number finite; a figure it has none of is -1."""
    t = figures.tuning
    normalized = float(normalized_loss(loss, figures.first_loss, figures.floor)) if iterations > 0 else 1.0
    return JobStatus(job=job, state=state, iterations=int(iterations), loss=_finite(loss), normalized_loss=_finite(normalized),
                     predicted_gain=_finite(gain), cores=_finite(cores), used_cores=_finite(used), why=figures.why,
                     wall_seconds=_finite(figures.wall_seconds), core_seconds=_finite(figures.core_seconds),
                     seconds_to_target=_or_none(figures.seconds_to_target), group=t.group, candidate=int(t.candidate),
                     fold=int(t.fold), refit=bool(t.refit), driver_fraction=_or_none(figures.driver_fraction),
                     seconds_to_ninety=_or_none(figures.seconds_to_ninety), target=figures.target,
                     first_loss=_finite(figures.first_loss), loss_floor=_finite(figures.floor))


def epoch_status(epoch: int, t: float, policy: str, capacity: float, table: ForecastTable | None, cores: Sequence[float],
                 iterations: Sequence[int], used: Mapping[str, float], figures: Sequence[JobFigures] = (),
                 finished: Sequence[JobStatus] = ()) -> EpochStatus:
    """The ``epoch_status`` message of one epoch; ``table`` rows, ``cores``, ``iterations`` and ``figures`` are per
    job, in order (only the first :data:`MAX_STATUS_JOBS` are listed); ``finished``: the final rows of the jobs that
    ended since the previous epoch."""
    jobs: list[JobStatus] = []
    if table is not None and len(table):
        rows = [figures[i] if i < len(figures) else JobFigures(POLICY, 0.0, 0.0) for i in range(len(table))]
        gain = predicted_gain(table, cores, rows)
        for i, forecast in enumerate(table.jobs[:MAX_STATUS_JOBS]):
            reported = iterations[i] > 0
            jobs.append(job_status(
                forecast.job_id, RUNNING if reported else WAITING, iterations[i], forecast.loss_now if reported else 0.0,
                gain[i] if iterations[i] >= 2 else 0.0,  # before two losses there is no curve to predict from
                cores[i], used.get(forecast.job_id, 0.0), rows[i]))
    return EpochStatus(epoch=int(epoch), t=float(t), policy=policy, capacity=_finite(capacity), jobs=jobs, finished=list(finished))


def _or_none(x: float | None) -> float:
    """A figure a job has none of (yet) is -1 in the message."""
    return -1.0 if x is None else _finite(x, -1.0)


def _finite(x: float, default: float = 0.0) -> float:
    """JSON has no NaN or infinity: a figure that has none yet shows as ``default``."""
    v = float(x)
    return v if np.isfinite(v) else default
