"""``slaq``: maximize the total predicted normalized loss reduction (paper §4.3, Algorithm 1)."""

from __future__ import annotations

import numpy as np

from slaq.policy.base import Policy
from slaq.policy.greedy import greedy_allocate
from slaq.predict.forecast import ForecastTable


def normalized_gain(table: ForecastTable, rows: np.ndarray, alloc: np.ndarray, quantum: float) -> tuple[np.ndarray, np.ndarray]:
    """Weighted normalized loss reduction that one more quantum buys at each allocation."""
    loss = table.loss_at(np.concatenate([alloc, alloc[:, -1:] + quantum], axis=1), rows)
    gain = (loss[:, :-1] - loss[:, 1:]) / table.scale[rows][:, None] * table.weight[rows][:, None]
    return gain, gain > 1e-12


class SlaqTotal(Policy):
    name = "slaq"
    fitted_curves = True
    minimum_share = True

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        return greedy_allocate(table, capacity, normalized_gain)
