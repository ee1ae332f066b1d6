"""``slaq-maxmin``: minimize the maximum predicted normalized loss (paper §4.3).

The next quantum always goes to the job predicted to be worst (highest weighted normalized loss)
at its current allocation, as long as one more quantum is predicted to lower that job's loss; a job
that more cores cannot help is passed over rather than blocking the others.
"""

from __future__ import annotations

import numpy as np

from slaq.policy.base import Policy
from slaq.policy.greedy import greedy_allocate
from slaq.predict.forecast import ForecastTable


def worst_first(table: ForecastTable, rows: np.ndarray, alloc: np.ndarray, quantum: float) -> tuple[np.ndarray, np.ndarray]:
    loss = table.normalized_loss_at(np.concatenate([alloc, alloc[:, -1:] + quantum], axis=1), rows)
    helps = loss[:, :-1] - loss[:, 1:] > 1e-12
    return loss[:, :-1] * table.weight[rows][:, None], helps


class SlaqMaxMin(Policy):
    name = "slaq-maxmin"
    fitted_curves = True
    minimum_share = True

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        return greedy_allocate(table, capacity, worst_first)
