"""Greedy unit-by-unit allocation with a priority queue: the engine of SLAQ's Algorithm 1 and of max-min.

Every job starts with one quantum; then the quantum goes, one at a time, to the job whose priority
(``score``) is highest at its current allocation, and that job's next priority is computed. Scores
for the first few units of every job are evaluated in one vectorized call; a job that goes beyond
them gets its next block on demand. Cores that no job is predicted to profit from are spread fairly
at the end so no core idles while a job has work.
"""

from __future__ import annotations

import heapq
from abc import abstractmethod
from collections.abc import Callable

import numpy as np

from slaq.policy.base import Policy, spread_leftover, unit
from slaq.predict.forecast import ForecastTable

# score(table, rows, allocations[rows, width], quantum) -> (priority[rows, width], useful[rows, width]);
# useful is False where one more quantum at that allocation is predicted to change nothing.
Score = Callable[[ForecastTable, np.ndarray, np.ndarray, float], "tuple[np.ndarray, np.ndarray]"]


def greedy_allocate(table: ForecastTable, capacity: float, score: Score, block: int = 16) -> np.ndarray:
    n = len(table)
    if n == 0:
        return np.zeros(0)
    q = unit(capacity, n)
    alloc = np.minimum(table.cap, q)
    if alloc.sum() > capacity:  # caps below the quantum cannot push past capacity, but be exact
        alloc *= capacity / alloc.sum()
    remaining = capacity - float(alloc.sum())
    all_rows = np.arange(n)
    width = int(min(block, max(1, np.ceil(remaining / q / n) * 4 + 2)))
    prio, ok = score(table, all_rows, alloc[:, None] + q * np.arange(width)[None, :], q)
    blocks = prio.tolist()
    usable = ok.tolist()
    starts = [0] * n
    taken = [0] * n
    cap = table.cap.tolist()
    alloc_l = alloc.tolist()
    heap = [(-blocks[j][0], j) for j in range(n) if usable[j][0] and alloc_l[j] < cap[j] - 1e-12]
    heapq.heapify(heap)
    while remaining > 1e-9 and heap:
        _, j = heapq.heappop(heap)
        step = min(q, remaining, cap[j] - alloc_l[j])
        alloc_l[j] += step
        remaining -= step
        taken[j] += 1
        if alloc_l[j] >= cap[j] - 1e-12:
            continue
        u = taken[j] - starts[j]
        if u >= len(blocks[j]):
            starts[j] = taken[j]
            rows = np.array([j])
            p, o = score(table, rows, alloc_l[j] + q * np.arange(block)[None, :], q)
            blocks[j], usable[j], u = p[0].tolist(), o[0].tolist(), 0
        if usable[j][u]:
            heapq.heappush(heap, (-blocks[j][u], j))
    return spread_leftover(np.asarray(alloc_l), table, capacity)


def one_more(alloc: np.ndarray, quantum: float) -> np.ndarray:
    """Each row's allocations with one more quantum after its last: a score compares neighbours."""
    return np.concatenate([alloc, alloc[:, -1:] + quantum], axis=1)


class GreedyPolicy(Policy):
    """A policy that hands out quanta greedily by its :meth:`score` over fitted curves, every job
    promised the minimum share (SLAQ's Algorithm 1 and max-min differ only in the score)."""

    fitted_curves = True
    minimum_share = True

    @staticmethod
    @abstractmethod
    def score(table: ForecastTable, rows: np.ndarray, alloc: np.ndarray, quantum: float) -> tuple[np.ndarray, np.ndarray]:
        """A :data:`Score`."""

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        return greedy_allocate(table, capacity, self.score)
