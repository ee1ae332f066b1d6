"""The replay's task pools, one numpy array entry per job: the token buckets and the offer order of the shim's
``TokenPool``/``JobsPool`` (SLAQ on) and of Spark's FAIR pools (stock), by the same rules
(tests/spark/test_pool_contract.py holds both sides to the same choices). Pure: no Spark, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


class PoolArrays:
    """Each job's pool as the scheduler sees it, one array entry per job (by arrival): tasks waiting and
    running, and its token bucket (tokens left, latest deposit), kept by ``TokenPool``'s rules (held to them by
    tests/spark/test_pool_contract.py). Arrays, so that what every event does to every pool (tokens drawn
    down, the offer's order) is one numpy operation on the same float64 values."""

    def __init__(self, weights: Sequence[float], outside: Sequence[bool] = ()):
        n = len(weights)
        self.outside = np.array(outside, dtype=bool) if len(outside) else np.zeros(n, dtype=bool)  # in Spark's default pool
        self.has_outside = bool(self.outside.any())
        self.pending = np.zeros(n, dtype=np.int64)
        self.running = np.zeros(n, dtype=np.int64)
        self.tokens = np.zeros(n)
        self.deposit = np.zeros(n)
        self.rate = np.zeros(n)  # cores of the latest grant
        self.epoch = np.full(n, -1, dtype=np.int64)  # epoch of the latest grant
        self.weight = np.array(weights, dtype=float)
        self.rank = np.full(n, math.inf)  # a ranking policy's offer order, least first (``TokenPool.rank``)
        self.ranked = False  # the latest allocation ranked the pools (``JobsPool.ranked``)
        self.left = np.zeros(n)  # the clairvoyant order's key: executor seconds left to the 90% point (_PAST_NINETY, _OUTSIDE added)
        self.settled = 0.0  # the time the tokens were last drawn down to

    def settle(self, now: float, upto: int) -> None:
        """Running tasks draw the first ``upto`` pools' tokens down to ``now``, as ``TokenPool.settle`` does at each
        launch and finish; overshoot is debt."""
        self.tokens[:upto] -= self.running[:upto] * (now - self.settled)
        self.settled = now

    def grant(self, rows: np.ndarray, cores: np.ndarray, seconds: float, epoch: int) -> None:
        """``TokenPool.grant`` for ``rows``: ``cores`` each for the next ``seconds`` of epoch ``epoch``. A pool's first grant
        of an epoch starts that epoch for it (debt carried, unspent surplus and the previous rate dropped), even mid-epoch:
        a pool the epoch's first allocation left out has no stale rate. A later one adds or takes back its change in cores
        times ``seconds``, so deciding again within an epoch never grants more than the cores decided."""
        fresh = rows[self.epoch[rows] != epoch]
        self.tokens[fresh] = np.minimum(self.tokens[fresh], 0.0)
        self.deposit[fresh] = 0.0
        self.rate[fresh] = 0.0
        self.epoch[fresh] = epoch
        change = (cores - self.rate[rows]) * (max(seconds, 0.0) if math.isfinite(seconds) else 0.0)
        self.tokens[rows] += change
        self.deposit[rows] += change
        self.rate[rows] = cores


def first_of(keys: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` first of ``rows`` (ascending) ordered by ``keys``, ties to the earlier row: what a stable sort
    of them all puts first (at most ``k`` pools can take ``k`` free cores; mostly one core is free)."""
    if k == 1 and rows.size:
        return rows[[int(np.argmin(keys))]]  # the first of the smallest
    return rows[np.argsort(keys, kind="stable")[:k]]


def offer_order(pools: PoolArrays, waiting: np.ndarray, stock: bool, work_conserving: bool, k: int) -> np.ndarray:
    """The first ``k`` of ``waiting`` (job indices, ascending) in the scheduler's order, ties to the earlier job.

    Stock FAIR: fewest running tasks per weight first. SLAQ's ``JobsPool``: pools with tokens first, then by
    the fraction of this epoch's grants left, most first (no deposit: 1 with tokens, else ``-1e9 + tokens``);
    ranked, by rank, least first (strict: only pools with tokens).
    Spark's ``default`` pool (the outside Spark jobs, in order) sorts among them as one pool."""
    outside = pools.outside[waiting] if pools.has_outside else None
    if outside is not None and outside.any():
        in_default = int(pools.running[pools.outside].sum())
        if stock:  # a tie goes to the job's pool: "arrival-..." sorts before "default"
            return first_of(np.where(outside, in_default + 0.5, pools.running[waiting] / pools.weight[waiting]), waiting, k)
        default, mine = waiting[outside], offer_order(pools, waiting[~outside], False, work_conserving, k)
        return np.concatenate([default, mine] if in_default <= int(pools.running[~pools.outside].sum()) else [mine, default])
    if stock:
        return first_of(pools.running[waiting] / pools.weight[waiting], waiting, k)
    if pools.ranked:
        rows = waiting if work_conserving else waiting[pools.tokens[waiting] > 0]
        return first_of(pools.rank[rows], rows, k)
    left, put = pools.tokens[waiting], pools.deposit[waiting]
    has = left > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = np.where(put > 0, left / put, np.where(has, 1.0, -1e9 + left))
    first = first_of(-fraction[has], waiting[has], k)
    if first.size == k or not work_conserving:
        return first
    return np.concatenate([first, first_of(-fraction[~has], waiting[~has], k - first.size)])
