"""What several competing policies need beyond SLAQ's one-epoch forecast, derived from the same table.

SLAQ looks one epoch ahead; OASiS, Optimus and MLFS reason about a job's whole remaining run, so
they need its remaining iterations (read off the fitted loss curve: iterations until the predicted
normalized loss reaches ``1 - target``), the remaining work and time that implies, and, for LAS,
the service a job has attained. Everything is computed from :class:`ForecastTable` columns only,
so the live loop, which builds the same table, needs nothing new.
"""

from __future__ import annotations

import numpy as np

from slaq.predict.forecast import ForecastTable
from slaq.predict.loss_curves import evaluate
from slaq.stats.history import normalized_loss

TARGET_REDUCTION = 0.95  # "converged": 95% of the predicted reduction, the paper's stricter time-to-X%
HORIZON = 10_000  # iterations looked ahead; a curve predicted never to get there counts as this far
UNFITTED_REMAINING = 50.0  # prior for jobs with < 2 losses when no other job has a fitted curve
_STEPS = np.unique(np.round(np.geomspace(1, HORIZON, 128)))


def remaining_iterations(table: ForecastTable, target: float = TARGET_REDUCTION) -> np.ndarray:
    """Iterations until each job's fitted curve predicts ``target`` of its reduction (0 if already there).

    A job without a fitted curve yet (fewer than two losses) has no convergence estimate; it gets
    the median estimate of the jobs that have one (SLAQ's forecast of such a job is an exploration
    prior, not a prediction of its length).
    """
    n = len(table)
    if n == 0:
        return np.zeros(0)
    k = table.k_now[:, None] + _STEPS[None, :]
    loss = np.minimum(evaluate(table.family[:, None], table.params[:, None, :], k), table.loss_now[:, None])
    norm = normalized_loss(loss, table.loss_first[:, None], table.floor[:, None])
    hit = norm <= 1 - target
    out = np.where(hit.any(axis=1), _STEPS[hit.argmax(axis=1)], float(HORIZON))
    out[table.normalized_now() <= 1 - target] = 0.0
    fitted = table.k_now >= 1
    prior = float(np.median(out[fitted])) if fitted.any() else UNFITTED_REMAINING
    out[~fitted] = max(prior, 1.0)
    return out


def remaining_seconds(table: ForecastTable, cores: np.ndarray, iterations: np.ndarray, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
    """Wall seconds for jobs ``rows`` to run ``iterations`` more iterations on ``cores`` cores (inf with none).

    ``iterations`` is per selected job; ``cores`` may carry a trailing axis of candidate allocations.
    """
    cores = np.asarray(cores, dtype=float)
    extra = (slice(None),) + (None,) * (cores.ndim - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_iteration = table.cost[rows][extra] / cores + table.overhead[rows][extra]
        return np.where(cores > 0, np.asarray(iterations, dtype=float)[extra] * per_iteration, np.inf)


def attained_service(table: ForecastTable) -> np.ndarray:
    """Core-seconds each job has used so far: iterations done times its cost per iteration."""
    return table.k_now * table.cost

