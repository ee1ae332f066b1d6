"""A spark.ml fit's set-up, the work before its first loss, as work the scheduler orders.

Before its first loss a fit reads its input, standardizes its features and builds its training
cache: on the ``slaq bench mllib`` sweep, most of a fit's time to 90% (docs/benchmarks.md). Fits that
share the cores through their set-up all reach their first loss late together: a burst of ``n``
equal fits of set-up ``s`` reaches it after ``n·s`` on average when shared and ``(n+1)/2·s`` when
served in turn, and shortest remaining first is what minimises the mean. So set-up is served in
turn: the fit at the head of the set-up queue is steered like any job, the others wait with no
cores of their own and run only on cores nobody else takes (work-conserving pools).

The queue's order is the *highest response ratio next*: ``(waited + service) / service``, where
``service`` is the fit's remaining set-up (core-seconds, predicted from the application's fits
whose set-up is done) spread over the cluster, and ``waited`` is the time it was not served. The
shortest remaining goes first, and a long fit's ratio grows while it waits, so none starves. The
head is worth one normalized unit of loss (the quality its set-up unlocks, as SLAQ values a new
job's first iteration) per core-second of set-up still to do, so it is never ranked at zero. A
set-up alternates driver-side passes with Spark stages and rarely keeps every core busy alone: the
cores it leaves idle go to the queued fits (work-conserving pools, queued fits with the least debt
first), which is as much concurrency as keeps the cores busy, and no more.
Pure: no Spark, no clock.
"""

from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from slaq.predict.forecast import JobForecast
from slaq.predict.loss_curves import LINEAR, Curve

DEFAULT_SETUP = 10.0  # core-seconds of set-up assumed before any fit of the application finished its set-up
LEFT_AT_LEAST = 0.1  # a fit past its predicted set-up still has this share of it left (the prediction was short)
SETUPS_KEPT = 256  # fits whose set-up a book remembers


@dataclass(frozen=True)
class SetupDone:
    """One fit whose set-up is done: its estimator, its input's bytes (None: unknown) and the
    core-seconds its pool used until its first loss."""

    estimator: str
    input_bytes: float | None
    core_seconds: float


class SetupBook:
    """The set-ups of the application's ended fits (bounded, oldest dropped); the running fits' are
    added where the queue is built, so nothing is counted twice."""

    def __init__(self, kept: int = SETUPS_KEPT):
        self._done: deque[SetupDone] = deque(maxlen=kept)
        self._lock = threading.Lock()

    def record(self, done: SetupDone) -> None:
        with self._lock:
            self._done.append(done)

    def done(self) -> list[SetupDone]:
        with self._lock:
            return list(self._done)


def predicted_setup(estimator: str, input_bytes: float | None, done: Sequence[SetupDone]) -> float | None:
    """Core-seconds a fit of ``estimator`` on ``input_bytes`` needs for its set-up, from the fits of
    the same estimator (else of any estimator): their median core-seconds per input byte times this
    input's bytes, or their median core-seconds when bytes are unknown. None: no fit finished its set-up."""
    same = [d for d in done if d.estimator == estimator]
    for group in (same, list(done)):
        if not group:
            continue
        rates = [d.core_seconds / d.input_bytes for d in group if d.input_bytes]
        if rates and input_bytes:
            return statistics.median(rates) * input_bytes
        return statistics.median(d.core_seconds for d in group)
    return None


@dataclass(frozen=True)
class InSetup:
    """One fit before its first loss, as the queue sees it."""

    job: str
    estimator: str
    input_bytes: float | None
    consumed: float  # core-seconds its pool used so far
    arrived: float  # when it arrived (the loop's clock)


def remaining_setup(fit: InSetup, done: Sequence[SetupDone]) -> float:
    """Core-seconds of set-up ``fit`` has left: its prediction less what it used, never below
    :data:`LEFT_AT_LEAST` of the prediction."""
    predicted = predicted_setup(fit.estimator, fit.input_bytes, done)
    if predicted is None or not math.isfinite(predicted) or predicted <= 0:
        predicted = DEFAULT_SETUP
    return max(predicted - fit.consumed, LEFT_AT_LEAST * predicted)


def response_ratio(remaining: float, waited: float, capacity: float) -> float:
    """``(waited + service) / service``, ``service`` being ``remaining`` core-seconds over ``capacity`` cores."""
    service = max(remaining, 1e-9) / max(capacity, 1e-9)
    return (max(waited, 0.0) + service) / service


def setup_queue(fits: Sequence[InSetup], done: Sequence[SetupDone], capacity: float, now: float) -> list[tuple[InSetup, float]]:
    """``fits`` with their remaining set-up, head first: highest response ratio, then earliest arrival.
    A fit's waited time is its time since arrival less the time its core-seconds would take on the
    whole cluster (the time it was served)."""
    ranked = []
    for f in fits:
        left = remaining_setup(f, done)
        waited = now - f.arrived - f.consumed / max(capacity, 1e-9)
        ranked.append((-response_ratio(left, waited, capacity), f.arrived, f.job, f, left))
    ranked.sort(key=lambda r: r[:3])
    return [(f, left) for *_, f, left in ranked]


def setup_forecast(job_id: str, remaining: float, weight: float = 1.0, cap: float = math.inf, order: float = 0.0) -> JobForecast:
    """What the policy reads about the fit at the head of the set-up queue: one normalized unit of
    loss (what its set-up unlocks) for its ``remaining`` core-seconds, so a quantum of cores is worth
    ``epoch · quantum / remaining`` whatever the fit holds already, and the shortest set-up is worth most."""
    return JobForecast(job_id, Curve(LINEAR, (1.0, 1.0, 0.0, 0.0)), 0.0, 1.0, 1.0, 1.0, 0.0, max(remaining, 1e-9), 0.0,
                       weight, cap, order)
