"""``harmony``: co-locate jobs with complementary CPU and network use so each fills the other's idle phase.

Follows Harmony (Lee et al., "Harmony: scheduling multiple distributed ML jobs together") §IV-B:
profile each job's computation and communication time per iteration, group jobs so that a group's
total computation and total communication balance (its subtasks then pipeline and neither resource
idles), keep jobs of similar iteration time together, and co-locate only when the performance
model predicts a gain. The group iteration time is the model of :mod:`slaq.sim.network`.

How it is done here:

* Cores per job are the weighted fair shares (Harmony's baseline is dedicated allocation; what it
  changes is who shares which cores). A group's cores are the sum of its members' shares.
* Profiling is the runtime model: computation is a job's core-seconds per iteration, its network
  work the per-iteration wall time beyond ``cost / cores`` (the runtime model's overhead) times its
  cores. Once grouped, that overhead also holds time spent waiting for partners, so the profile
  drifts towards "network-heavy"; Harmony profiles each subtask separately and has no such bias.
* Grouping is greedy: jobs in order of iteration time; each ungrouped job starts a group, which
  repeatedly takes the ungrouped job that raises its members' total speed-up the most, as long as
  no member becomes slower than alone, up to ``MAX_GROUP`` jobs. Harmony's swap-based fine tuning,
  choice of the number of groups and the 5% regrouping hysteresis are left out; groups are rebuilt
  every epoch.

Faithfulness: the simulator's job model has no memory, so Harmony's spill/reload (§IV-C) has no
counterpart, and groups do not contend with each other for the network. Live Spark has no
separate network phase the scheduler could fill, so live this policy allocates like ``fair``; its
co-location takes effect only in the simulator with the network model on (``--network-ratio``).
Without a network phase no grouping predicts a gain and it is exactly ``fair``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from slaq.policy.base import Policy, water_fill
from slaq.predict.forecast import ForecastTable
from slaq.sim.network import group_iteration_time

MAX_GROUP = 4
MIN_GAIN = 0.05  # a member must get at least this much faster for a job to be added


def complementary_groups(compute: np.ndarray, network: np.ndarray, cores: np.ndarray) -> np.ndarray:
    """Group id per job (see module doc); ``compute``/``network`` in core-seconds per iteration."""
    n = compute.size
    groups = np.arange(n)
    alone = group_iteration_time(np.column_stack([compute]), np.column_stack([network]), cores)
    free = np.isfinite(alone) & (network > 0)
    for i in np.argsort(alone, kind="stable"):
        if not free[i]:
            continue
        free[i] = False
        members = [int(i)]
        while len(members) < MAX_GROUP:
            cand = np.flatnonzero(free)
            if cand.size == 0:
                break
            rows = np.column_stack([np.tile(members, (cand.size, 1)), cand])  # each candidate group's members
            period = group_iteration_time(compute[rows], network[rows], cores[rows].sum(axis=1))
            worst = np.minimum(alone[members].min(), alone[cand])
            ok = period * (1 + MIN_GAIN) <= worst
            if not ok.any():
                break
            speedup = (alone[members].sum() + alone[cand]) / period
            best = cand[ok][int(np.argmax(speedup[ok]))]
            members.append(int(best))
            free[best] = False
        groups[members] = i
    return groups


@dataclass
class Harmony(Policy):
    name = "harmony"
    groups: np.ndarray | None = field(default=None)

    def allocate(self, table: ForecastTable, capacity: float) -> np.ndarray:
        alloc = water_fill(table.cap, table.weight, capacity)
        self.groups = complementary_groups(table.cost, table.overhead * alloc, alloc) if len(table) else None
        return alloc

    def co_location(self) -> np.ndarray | None:
        return self.groups
