"""``mlfs``: MLFS's ML-feature-based priority queue with its overload control and accuracy-target stop.

Follows MLFS (Wang et al., CoNEXT '20) §3.3 (MLF-H) and §3.5 (MLF-C), with its §4 parameters
(α = 0.3, γ_r = 0.3, γ_w = 0.35):

* ML priority (Eq. 2): ``P_ML = L_J · (1/I) · δl_{I-1} / Σ_{j<I} δl_j · S`` — urgency (the job's
  weight), early iterations first, and the share of the job's reduction its latest iteration made.
* Computation priority (Eq. 4): ``P_C = γ_r / r + γ_w · w`` — less remaining running time ``r``
  and longer waiting ``w`` first.
* Combined (Eq. 6): ``P = α P_ML + (1 - α) P_C``; jobs are served in priority order, each taking
  up to the cores it can use (MLF-H's queue order).
* MLF-C: the system is overloaded when jobs wait (demand beyond capacity, §3.5). Then a job that
  reached its accuracy target (95% of its predicted reduction, MLF-C option iii) is stopped: it
  moves behind every job still short of its target.

Simplifications:

* No tasks, dependency graph or model partitions: one task per job, ``S = 1``, Eq. 3/5's child
  terms vanish; no deadlines (the γ_d term is dropped); no servers, so "overload handling" by
  migration (§3.3.3) reduces to the priority order deciding who waits.
* ``δl_{I-1}`` is read from the fitted curve (its last step), because the table carries only the
  latest loss; ``r`` is the remaining iterations (from the curve) at the job's full parallelism.
* Both priorities are rescaled to [0, 1] over the current jobs before Eq. 6 (the paper mixes raw
  quantities of different units).
* Waiting ``w`` counts allocation rounds in which the job got nothing, times the epoch (the policy
  has no clock).
* The policy cannot end a job: a stopped job is only deprioritized, and gets cores again when the
  cluster has slack (work conservation). Live, ``slaq.job(target_reduction=...)`` is the stop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from slaq.policy.base import Policy, fill_in_order
from slaq.policy.convergence import TARGET_REDUCTION, remaining_iterations, remaining_seconds
from slaq.predict.forecast import ForecastTable
from slaq.predict.loss_curves import evaluate

ALPHA = 0.3
GAMMA_R = 0.3
GAMMA_W = 0.35


def ml_priority(table: ForecastTable) -> np.ndarray:
    """Eq. 2 with S = 1: weight × 1/I × (latest reduction / total reduction so far)."""
    iteration = table.k_now + 1.0
    before = evaluate(table.family, table.params, np.maximum(table.k_now - 1.0, 0.0))
    latest = np.maximum(before - table.loss_now, 0.0)
    total = np.maximum((table.floor + table.span) - table.loss_now, 0.0)
    share = np.where(table.k_now < 1, 1.0, np.where(total > 0, np.minimum(latest / np.maximum(total, 1e-300), 1.0), 0.0))
    return table.weight / iteration * share


def _unit_scale(x: np.ndarray) -> np.ndarray:
    top = float(np.max(x)) if x.size else 0.0
    return x / top if top > 0 else np.zeros_like(x)


@dataclass
class Mlfs(Policy):
    name = "mlfs"
    fitted_curves = True
    waited: dict[str, float] = field(default_factory=dict)  # job id -> seconds spent with no cores

    def priority(self, table: ForecastTable) -> np.ndarray:
        """Eq. 6 for every job of ``table``."""
        remaining = remaining_seconds(table, np.minimum(table.cap, 1e12), remaining_iterations(table))
        with np.errstate(divide="ignore"):
            short = np.where(remaining > 0, 1.0 / np.maximum(remaining, 1e-9), 1e9)
        waited = np.array([self.waited.get(j.job_id, 0.0) for j in table.jobs])
        computation = GAMMA_R * _unit_scale(short) + GAMMA_W * _unit_scale(waited)
        return ALPHA * _unit_scale(ml_priority(table)) + (1 - ALPHA) * computation

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        n = len(table)
        if n == 0:
            self.waited = {}
            return np.zeros(0)
        prio = self.priority(table)
        overloaded = float(table.cap.sum()) > capacity + 1e-9
        stopped = (table.normalized_now() <= 1 - TARGET_REDUCTION) & (table.k_now >= 1) if overloaded else np.zeros(n, bool)
        order = np.lexsort((table.order, -prio, stopped))  # running jobs by priority, then stopped ones
        alloc = fill_in_order(order, table.cap, capacity)
        self.waited = {j.job_id: (self.waited.get(j.job_id, 0.0) + table.epoch if a <= 0 else 0.0) for j, a in zip(table.jobs, alloc)}
        return alloc
