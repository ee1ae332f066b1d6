"""``slaq``: maximize the total predicted normalized loss reduction (paper §4.3, Algorithm 1)."""

from __future__ import annotations

import numpy as np

from slaq.policy.greedy import GreedyPolicy, one_more
from slaq.predict.forecast import ForecastTable


class SlaqTotal(GreedyPolicy):
    name = "slaq"

    @staticmethod
    def score(table: ForecastTable, rows: np.ndarray, alloc: np.ndarray, quantum: float) -> tuple[np.ndarray, np.ndarray]:
        """Weighted normalized loss reduction that one more quantum buys at each allocation."""
        loss = table.loss_at(one_more(alloc, quantum), rows)
        gain = (loss[:, :-1] - loss[:, 1:]) / table.scale[rows][:, None] * table.weight[rows][:, None]
        return gain, gain > 1e-12
