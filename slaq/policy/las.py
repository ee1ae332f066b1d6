"""``las``: discretized least-attained-service, the Tiresias-style baseline of ML cluster scheduling.

Follows Tiresias (Gu et al., NSDI '19) §3-4 as the field uses it as a baseline (it is not one of
the seed papers): jobs sit in priority queues by the service they have attained, the least-served
queue is served first, FIFO (arrival order) inside a queue, and a job moves to a lower queue once
its attained service crosses the queue's threshold. Without prior knowledge of job lengths this
approximates shortest-remaining-first, so new and short jobs finish fast.

Simplifications:

* Attained service is core-seconds (Tiresias: GPUs × time), estimated as iterations done × the
  job's current cost per iteration, because the policy sees only the forecast table.
* Thresholds are geometric, ``BASE ** q`` times ``FIRST_QUEUE_ITERATIONS`` median iterations'
  worth of core-seconds, capped at ``QUEUES`` queues, instead of Tiresias's tuned absolute limits
  (the simulator's and a live cluster's cost scales differ by orders of magnitude).
* No starvation guard (Tiresias's promotion after a long wait) and no gang placement: a job simply
  takes up to its cap, and the last one served in a round may get a fraction (work conservation).
"""

from __future__ import annotations

import numpy as np

from slaq.policy.base import Policy, fill_in_order
from slaq.policy.convergence import attained_service
from slaq.predict.forecast import ForecastTable

FIRST_QUEUE_ITERATIONS = 5.0
BASE = 4.0
QUEUES = 6


def queue_of(table: ForecastTable) -> np.ndarray:
    """Each job's queue: 0 for the least-served jobs, up to ``QUEUES - 1``."""
    if len(table) == 0:
        return np.zeros(0, dtype=int)
    first = FIRST_QUEUE_ITERATIONS * float(np.median(table.cost))
    attained = attained_service(table)
    with np.errstate(divide="ignore"):
        level = np.floor(np.log(np.maximum(attained / first, 1e-300)) / np.log(BASE)) + 1
    return np.clip(level, 0, QUEUES - 1).astype(int)


class LeastAttainedService(Policy):
    name = "las"

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        order = np.lexsort((table.order, queue_of(table)))  # by queue, then arrival
        return fill_in_order(order, table.cap, capacity)
