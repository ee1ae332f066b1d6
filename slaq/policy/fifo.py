"""``fifo``: jobs in arrival order each take all the cores they can use (Spark's default mode).

No minimum share: later jobs wait until earlier ones leave cores unused.
"""

from __future__ import annotations

import numpy as np

from slaq.policy.base import Policy
from slaq.predict.forecast import ForecastTable


class Fifo(Policy):
    name = "fifo"

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        alloc = np.zeros(len(table))
        left = float(capacity)
        for j in np.argsort(table.order, kind="stable"):
            alloc[j] = min(table.cap[j], left)
            left -= alloc[j]
            if left <= 0:
                break
        return alloc
