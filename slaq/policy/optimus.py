"""``optimus``: give each next core to the job whose predicted completion time it shortens most.

Follows Optimus (Peng et al., EuroSys '18) §3-4 (not one of the seed papers; the closest
published alternative to SLAQ's objective): fit a convergence model to each job's loss curve,
estimate the iterations left until convergence, model its speed as a function of its resources,
start every job with a minimum allocation, then hand out the remaining resources greedily to the
job with the largest marginal gain, the reduction of its predicted remaining time per unit of
resource added. SLAQ's Algorithm 1 differs in what it maximizes: normalized loss reduction in the
next epoch, not time to convergence.

Simplifications:

* Convergence model: the job's fitted curve from SLAQ's §4.2.2 fit (the sublinear family
  ``1/(a k² + b k + c) + d`` generalizes Optimus's ``1/(β0 k + β1) + β2``), and "converged" is
  95% of the predicted reduction (Optimus: loss change below a threshold).
* Speed model: SLAQ's runtime model (``cost / cores + overhead`` per iteration) instead of
  Optimus's parameter-server/worker model; the only resource is cores.
* Weighted: the gain is multiplied by the job's weight, as every policy here honours weights.
"""

from __future__ import annotations

import numpy as np

from slaq.policy.base import Policy
from slaq.policy.convergence import remaining_iterations, remaining_seconds
from slaq.policy.greedy import greedy_allocate
from slaq.predict.forecast import ForecastTable


class Optimus(Policy):
    name = "optimus"
    fitted_curves = True
    minimum_share = True

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        remaining = remaining_iterations(table)

        def time_saved(t: ForecastTable, rows: np.ndarray, alloc: np.ndarray, quantum: float) -> tuple[np.ndarray, np.ndarray]:
            sub = remaining[rows]
            before = remaining_seconds(t, alloc, sub, rows)
            after = remaining_seconds(t, alloc + quantum, sub, rows)
            gain = (before - after) * t.weight[rows][:, None]
            return gain, gain > 1e-12

        return greedy_allocate(table, capacity, time_saved)

