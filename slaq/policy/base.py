"""The one small interface every allocation policy implements, and the shared allocation pieces.

A policy maps a :class:`~slaq.predict.forecast.ForecastTable` and a capacity (cores left for ML
jobs after any reservation) to cores per job, in the table's order. Allocations may be fractional:
a share of a core is handed out as CPU-time tokens per epoch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from slaq.predict.forecast import ForecastTable


class Policy(ABC):
    name: ClassVar[str]
    # whether the policy reads fitted loss curves; the simulator hands the others the cheap strawman
    fitted_curves: ClassVar[bool] = False
    # whether every job is promised the minimum share of :func:`unit` (Algorithm 1's guarantee)
    minimum_share: ClassVar[bool] = False

    @abstractmethod
    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        """Cores for each job of ``table``; sums to at most ``capacity``, each at most the job's cap."""

    def co_location(self) -> np.ndarray | None:
        """Group id per job of the last :meth:`allocate` for jobs that share their cores; None: all dedicated.

        Only the simulator's network model reads this (live Spark pools already interleave tasks).
        """
        return None


def unit(capacity: float, jobs: int) -> float:
    """The allocation quantum: one core, or a fraction when jobs outnumber cores.

    With more jobs than cores every job's guaranteed minimum is half its even share, so no job
    starves and half the cluster is still steered by the policy.
    """
    if jobs == 0 or capacity <= 0:
        return 1.0
    return 1.0 if jobs <= capacity else capacity / (2.0 * jobs)


def water_fill(cap: np.ndarray, weight: np.ndarray, capacity: float) -> np.ndarray:
    """Weighted max-min fair shares: ``min(cap_j, w_j * level)`` summing to ``min(capacity, sum cap)``."""
    n = cap.size
    alloc = np.zeros(n)
    if n == 0 or capacity <= 0:
        return alloc
    w = np.maximum(weight, 1e-12)
    order = np.argsort(cap / w, kind="stable")
    left, wsum = float(capacity), float(w.sum())
    for pos, j in enumerate(order):
        level = left / wsum if wsum > 0 else 0.0
        if cap[j] <= w[j] * level:
            alloc[j] = cap[j]
            left -= cap[j]
            wsum -= w[j]
        else:
            rest = order[pos:]
            alloc[rest] = w[rest] * level
            break
    return alloc


def spread_leftover(alloc: np.ndarray, table: ForecastTable, capacity: float) -> np.ndarray:
    """Hand cores nobody was predicted to profit from to jobs below their cap (work conservation)."""
    left = capacity - float(alloc.sum())
    if left <= 1e-9:
        return alloc
    room = np.maximum(table.cap - alloc, 0.0)
    return alloc + water_fill(room, table.weight, left)


def fill_in_order(priority_order: np.ndarray, cap: np.ndarray, capacity: float) -> np.ndarray:
    """Serve jobs in ``priority_order``, each taking all the cores it can use, until cores run out."""
    alloc = np.zeros(cap.size)
    left = float(capacity)
    for j in priority_order:
        if left <= 0:
            break
        alloc[j] = min(cap[j], left)
        left -= alloc[j]
    return alloc
