"""One epoch of the live loop as an ``epoch_status`` message (sparkshim/messages.json).

The loop builds one per epoch from what it just decided and pushes it to the driver JVM, where the
SLAQ tab of the Spark UI, its REST JSON and the per-epoch driver log line show it
(``sparkshim/java/io/slaqriffle/slaq/SlaqStatus.java``); the console table of :mod:`slaq.progress` prints the same
message. Pure functions: no Spark, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from slaq.predict.forecast import ForecastTable
from sparkshim.messages import EpochStatus, JobStatus

WAITING = "waiting"  # registered, no loss reported yet
RUNNING = "running"


def used_cores(consumed: Mapping[str, float], before: Mapping[str, float], seconds: float) -> dict[str, float]:
    """Cores each job's pool actually used over the last ``seconds``, from cumulative core-seconds."""
    if seconds <= 0:
        return {job: 0.0 for job in consumed}
    return {job: max(c - before.get(job, 0.0), 0.0) / seconds for job, c in consumed.items()}


def forecast_view(table: ForecastTable, cores: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Each job's current normalized loss (§4.1: 1 at its first loss, 0 at its predicted floor) and
    the drop of normalized loss the forecast predicts over the next epoch with ``cores``."""
    now = table.normalized_now()
    alloc = np.asarray(cores, dtype=float)
    gain = table.normalized_loss_at(np.zeros_like(alloc)) - table.normalized_loss_at(alloc)
    return now, np.maximum(gain, 0.0)


def epoch_status(epoch: int, t: float, policy: str, capacity: float, table: ForecastTable | None, cores: Sequence[float],
                 iterations: Sequence[int], used: Mapping[str, float], driver: Mapping[str, float | None] | None = None) -> Any:
    """The ``epoch_status`` message of one epoch; ``table`` rows, ``cores`` and ``iterations`` are per job, in order;
    ``driver``: each job's driver fraction of its iteration time (slaq.live.driver_share), -1 where not measured."""
    jobs = []
    if table is not None and len(table):
        normalized, gain = forecast_view(table, cores)
        for i, forecast in enumerate(table.jobs):
            jobs.append(JobStatus(
                job=forecast.job_id, state=RUNNING if iterations[i] > 0 else WAITING, iterations=int(iterations[i]),
                loss=float(forecast.loss_now) if iterations[i] > 0 else 0.0,
                normalized_loss=float(normalized[i]) if iterations[i] > 0 else 1.0,
                predicted_gain=_finite(gain[i]), cores=_finite(cores[i]), used_cores=_finite(used.get(forecast.job_id, 0.0)),
                driver_fraction=_measured((driver or {}).get(forecast.job_id))))
    return EpochStatus(epoch=int(epoch), t=float(t), policy=policy, capacity=_finite(capacity), jobs=jobs)


def _measured(x: float | None) -> float:
    """A fraction, or -1 when not measured (JSON has no null in this schema's floats)."""
    return -1.0 if x is None else _finite(x)


def _finite(x: float) -> float:
    """JSON has no NaN or infinity: a forecast that has none yet shows as 0."""
    v = float(x)
    return v if np.isfinite(v) else 0.0
