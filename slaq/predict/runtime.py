"""Iteration runtime prediction (SLAQ paper §4.2.1).

An iteration costs ``c·S`` core-seconds whatever the number of cores, so with ``N`` cores it takes
``c·S/N`` seconds of wall time, plus a fixed per-iteration overhead (driver work, scheduling delay)
when the observations show one. Both are learned online from reported iterations.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def estimate_runtime(
    core_seconds: Sequence[float],
    wall_seconds: Sequence[float] = (),
    cores: Sequence[float] = (),
    decay: float = 0.8,
    window: int = 20,
) -> tuple[float | None, float]:
    """``(core_seconds_per_iteration, fixed_overhead_seconds)`` from recent iterations.

    The cost is an exponentially weighted mean of recent per-iteration core-seconds (costs drift as
    e.g. sparse models densify). The overhead is the weighted median of ``wall - cost/N`` over the
    iterations whose wall time and core count are known, floored at 0. Returns ``(None, 0.0)`` when
    nothing was observed.
    """
    cost = np.asarray(core_seconds[-window:], dtype=float)
    if cost.size == 0:
        return None, 0.0
    w = decay ** np.arange(cost.size - 1, -1, -1, dtype=float)
    per_iter = float(np.sum(w * cost) / np.sum(w))
    overhead = 0.0
    n = min(len(wall_seconds), len(cores), len(core_seconds))
    if n:
        wall = np.asarray(wall_seconds[-n:][-window:], dtype=float)
        ncores = np.asarray(cores[-n:][-window:], dtype=float)
        used = np.asarray(core_seconds[-n:][-window:], dtype=float)
        ok = np.isfinite(ncores) & (ncores > 0)
        if ok.any():
            overhead = max(0.0, float(np.median(wall[ok] - used[ok] / ncores[ok])))
    return per_iter, overhead


MIN_ITERATION_SECONDS = 1e-3


def iterations_in(epoch: float, cores: np.ndarray, cost: np.ndarray, overhead: np.ndarray) -> np.ndarray:
    """How many (fractional) iterations fit in ``epoch`` seconds with ``cores`` cores each."""
    with np.errstate(divide="ignore", invalid="ignore"):
        # floor: an iteration that used no measurable core time (driver-only work) is not free forever
        per_iteration = np.where(cores > 0, np.maximum(cost / np.maximum(cores, 1e-12) + overhead, MIN_ITERATION_SECONDS), np.inf)
        return np.where(cores > 0, epoch / per_iteration, 0.0)
