"""``oasis``: OASiS's online primal-dual admission and allocation with exponential resource prices.

Follows OASiS (Bao et al., INFOCOM '18), §III-C (utility ``f_i`` of completion time) and §IV
(Alg. 1, price functions Eq. 22-26, best schedule of Alg. 2): when a job arrives, compute its best
schedule (here: how many cores, hence when it completes) against the current resource price, and
its payoff = utility at that completion time minus the priced resources it consumes. Admit it with
that schedule if the payoff is positive, otherwise it waits (the paper: "queued or resubmitted").
The price of cores rises exponentially with the cores already committed,
``P(g) = L (U/L)^(g/C)``: at ``L`` (a quarter of the lowest utility per core-second) any job is
admitted into an empty cluster; at ``U`` (the highest utility per core-second) a full cluster admits
nothing. Utility is the paper's sigmoid ``f(d) = γ1 / (1 + exp(γ2 (d - γ3)))`` of §V.

Simplifications, because this project's jobs and interface differ from the paper's:

* One resource (cores), one server; no parameter servers, bandwidth or placement.
* A job's work is ``remaining iterations × cost per iteration`` from its fitted loss curve (the
  paper: known epochs × samples × time per sample); it is re-estimated each epoch.
* Epoch-by-epoch instead of slot plans fixed for the whole future: an admitted job keeps the cores
  it was admitted with (capped by what it can use) until it leaves; a waiting job is reconsidered
  every epoch at the then-current price (the paper's resubmission). The price of a schedule is the
  integral of ``P`` over the cores it adds, times its duration (prices are per core-second).
* The policy has no clock, so completion time is measured from the decision, not from arrival, and
  waiting does not lower a job's utility.
* Utility parameters: ``γ1`` = the job's weight (the paper's priority), ``γ3`` = ``TARGET_SLOWDOWN``
  times its fastest possible completion time (the paper draws targets at random; we have none),
  ``γ2 = 4 / γ3``. ``U`` and ``L`` are the running max/min of utility per core-second over the
  jobs seen so far, each taken once, when it is first seen (the paper's "estimated values based on
  past experience").
* Work conservation: cores no admitted job holds go to admitted jobs below their cap, then to
  waiting jobs, so no core idles (the paper leaves them idle); a waiting job is therefore delayed,
  not starved, when the cluster has slack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from slaq.policy.base import Policy, water_fill
from slaq.policy.convergence import remaining_iterations, remaining_seconds
from slaq.predict.forecast import ForecastTable

TARGET_SLOWDOWN = 2.0
LOW_PRICE_FRACTION = 0.25  # L = 1/(4η) of the lowest utility density (η = 1)
CANDIDATES = 24  # core counts tried per best-schedule search


def utility(weight: np.ndarray, duration: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The paper's sigmoid utility of completion time (§V)."""
    with np.errstate(over="ignore"):
        return weight / (1.0 + np.exp(np.minimum(4.0 * (duration / target - 1.0), 700.0)))


@dataclass
class _Prices:
    low: float = math.inf  # L
    high: float = 0.0  # U

    def see(self, density: float) -> None:
        self.low = min(self.low, LOW_PRICE_FRACTION * density)
        self.high = max(self.high, density)

    def integral(self, g0: float, g1: float, capacity: float) -> float:
        """∫ P(g) dg from ``g0`` to ``g1`` cores: the price per second of adding those cores."""
        ratio = self.high / self.low if self.low > 0 else 1.0
        if ratio <= 1.0 + 1e-9:
            return self.low * (g1 - g0)
        k = math.log(ratio) / capacity
        return self.low / k * (math.exp(k * g1) - math.exp(k * g0))

    def at(self, g: float, capacity: float) -> float:
        ratio = self.high / self.low if self.low > 0 else 1.0
        return self.low * ratio ** (g / capacity)


@dataclass
class Oasis(Policy):
    name = "oasis"
    fitted_curves = True
    admitted: dict[str, float] = field(default_factory=dict)  # job id -> cores committed at admission
    prices: _Prices = field(default_factory=_Prices)
    priced: set[str] = field(default_factory=set)  # jobs whose utility density has informed U and L
    last_decisions: dict[str, dict] = field(default_factory=dict)  # job id -> payoff, price (for logs and tests)

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        n = len(table)
        ids = [j.job_id for j in table.jobs]
        present = set(ids)
        self.admitted = {j: c for j, c in self.admitted.items() if j in present}
        if n == 0 or capacity <= 0:
            return np.zeros(n)
        remaining = remaining_iterations(table)
        fastest_cores = np.minimum(table.cap, capacity)
        fastest = remaining_seconds(table, fastest_cores, remaining)
        target = np.maximum(TARGET_SLOWDOWN * fastest, 1e-9)
        work = np.maximum(remaining * table.cost, 1e-12)
        for j in range(n):  # U and L from each job as it arrives (a job that has converged says nothing about prices)
            if ids[j] not in self.priced and remaining[j] > 0:
                self.priced.add(ids[j])
                self.prices.see(float(utility(table.weight[j], fastest[j], target[j])) / work[j])
        alloc = np.zeros(n)
        for j in range(n):
            if ids[j] in self.admitted:
                alloc[j] = min(self.admitted[ids[j]], table.cap[j])
        committed = float(alloc.sum())
        if committed > capacity:  # capacity shrank (live): scale commitments down
            alloc *= capacity / committed
            committed = capacity
        self.last_decisions = {}
        for j in np.argsort(table.order, kind="stable"):
            if ids[j] in self.admitted:
                continue
            cores, payoff = self._best_schedule(table, int(j), remaining[j], target[j], committed, capacity)
            self.last_decisions[ids[j]] = {"payoff": payoff, "price": self.prices.at(committed, capacity), "cores": cores}
            if payoff > 0 and cores > 0:
                self.admitted[ids[j]] = cores
                alloc[j] = cores
                committed += cores
        left = capacity - float(alloc.sum())
        if left > 1e-9:  # work conservation: admitted jobs first, then the waiting ones
            is_admitted = np.array([i in self.admitted for i in ids])
            room = np.where(is_admitted, np.maximum(table.cap - alloc, 0.0), 0.0)
            alloc += water_fill(room, table.weight, left)
            left = capacity - float(alloc.sum())
            if left > 1e-9:
                room = np.where(is_admitted, 0.0, np.maximum(table.cap - alloc, 0.0))
                alloc += water_fill(room, table.weight, left)
        return alloc

    def _best_schedule(self, table: ForecastTable, j: int, remaining: float, target: float, committed: float, capacity: float) -> tuple[float, float]:
        """Alg. 2 on one resource: the core count maximizing utility minus priced consumption."""
        room = min(float(table.cap[j]), capacity - committed)
        if room <= 1e-9:
            return 0.0, -math.inf
        if remaining <= 0:
            return min(room, 1.0), float(table.weight[j])  # done by its own measure: a token share
        cores = np.unique(np.geomspace(min(room, 1.0), room, CANDIDATES))
        rows = np.full(cores.size, j)
        duration = remaining_seconds(table, cores, np.full(cores.size, remaining), rows)
        value = utility(np.full(cores.size, table.weight[j]), duration, np.full(cores.size, target))
        cost = np.array([self.prices.integral(committed, committed + c, capacity) for c in cores]) * duration
        payoff = value - cost
        best = int(np.argmax(payoff))
        return float(cores[best]), float(payoff[best])
