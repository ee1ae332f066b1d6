"""``fair``: work-conserving weighted max-min fair share of cores (the paper's baseline, §6.1)."""

from __future__ import annotations

import numpy as np

from slaq.policy.base import Policy, water_fill
from slaq.predict.forecast import ForecastTable


class Fair(Policy):
    name = "fair"

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        return water_fill(table.cap, table.weight, capacity)
