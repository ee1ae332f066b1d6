"""``fifo``: jobs in arrival order each take all the cores they can use (Spark's default mode).

No minimum share: later jobs wait until earlier ones leave cores unused.
"""

from __future__ import annotations

import numpy as np

from slaq.policy.base import Policy, fill_in_order
from slaq.predict.forecast import ForecastTable


class Fifo(Policy):
    name = "fifo"

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        return fill_in_order(np.argsort(table.order, kind="stable"), table.cap, capacity)
