"""Calibrate a workload's per-iteration cost so that the *fair* policy shows the paper's contention.

Only the fair policy is run, so the calibration is fixed before SLAQ is ever measured.
"""

from __future__ import annotations

import math

from slaq.metrics import mean_time_to_key, time_to_key
from slaq.sim.engine import simulate
from slaq.sim.workload import make_workload

PAPER_FAIR_TIME_TO_90 = 71.0  # seconds, SLAQ paper Fig. 7(b)
PAPER_FAIR_TIME_TO_95 = 98.0


def calibrate_cost_scale(
    jobs: int = 160,
    cores: float = 640,
    arrival_mean: float = 15.0,
    seed: int = 1,
    target_time_to_90: float = PAPER_FAIR_TIME_TO_90,
    lo: float = 20.0,
    hi: float = 2000.0,
    steps: int = 14,
) -> dict:
    """Bisect (in log space) the cost scale at which fair's mean time to 90% equals the target."""

    def fair_t90(scale: float) -> float:
        result = simulate(make_workload(jobs, arrival_mean, seed, cost_scale=scale), "fair", cores)
        return float(result.summary()[mean_time_to_key(0.9)])

    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        if fair_t90(mid) < target_time_to_90:
            lo = mid
        else:
            hi = mid
    scale = round(math.sqrt(lo * hi), 1)
    return {"cost_scale": scale, "fair_" + time_to_key(0.9): round(fair_t90(scale), 2), "target_" + time_to_key(0.9): target_time_to_90}
