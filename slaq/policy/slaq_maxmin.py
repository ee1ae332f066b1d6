"""``slaq-maxmin``: minimize the maximum predicted normalized loss (paper §4.3).

The next quantum always goes to the job predicted to be worst (highest weighted normalized loss)
at its current allocation, as long as one more quantum is predicted to lower that job's loss; a job
that more cores cannot help is passed over rather than blocking the others.
"""

from __future__ import annotations

import numpy as np

from slaq.policy.greedy import GreedyPolicy, one_more
from slaq.predict.forecast import ForecastTable


class SlaqMaxMin(GreedyPolicy):
    name = "slaq-maxmin"

    @staticmethod
    def score(table: ForecastTable, rows: np.ndarray, alloc: np.ndarray, quantum: float) -> tuple[np.ndarray, np.ndarray]:
        """Each job's weighted normalized loss, worst first; useful where one more quantum lowers it."""
        loss = table.normalized_loss_at(one_more(alloc, quantum), rows)
        helps = loss[:, :-1] - loss[:, 1:] > 1e-12
        return loss[:, :-1] * table.weight[rows][:, None], helps
