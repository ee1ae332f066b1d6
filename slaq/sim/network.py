"""The simulator's optional second resource: a network (shuffle / parameter exchange) phase per iteration.

Off by default (every job's ``network`` is 0 and the engine never calls this). When on, an
iteration of job ``j`` is ``C_j`` core-seconds of computation followed by ``W_j`` of network work,
in core-seconds too: a job spread over ``c`` cores' worth of machines transfers over that many
machines' links, so the phase takes ``W_j / c`` seconds, and the job's cores idle meanwhile (a
dedicated job takes ``(C_j + W_j) / c_j`` per iteration). Jobs a policy co-locates in one group
share the group's machines (its cores and their links) and pipeline their phases, as in Harmony's
subtask model (Harmony §IV-A/B): one iteration of every member takes

    T_G = max( Σ_j C_j / c_G,  Σ_j W_j / c_G,  max_j (C_j + W_j) / c_G )

(the group's CPUs are the bottleneck, or its links, or one job's own compute-then-send chain),
where ``c_G`` is the sum of the members' allocations. The engine turns this into the core-seconds
of computation per second each job progresses at (its effective cores), so the rest of the
simulation is unchanged.

What the model leaves out: contention between groups for a shared network core (each group has
its own machines, as in Harmony), memory pressure and Harmony's spill/reload (§IV-C), and the
cost of regrouping.
"""

from __future__ import annotations

import numpy as np


def group_iteration_time(compute: np.ndarray, network: np.ndarray, cores: np.ndarray | float) -> np.ndarray:
    """``T_G`` above; members on the last axis of ``compute``/``network``, leading axes (and ``cores``) for many groups."""
    cores = np.asarray(cores, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        period = np.maximum.reduce([compute.sum(-1), network.sum(-1), np.max(compute + network, axis=-1)]) / cores
    return np.where(cores > 0, period, np.inf)


def effective_cores(compute: np.ndarray, network: np.ndarray, alloc: np.ndarray, groups: np.ndarray | None) -> np.ndarray:
    """Core-seconds of computation per wall second each job progresses at.

    ``groups[j]`` names job ``j``'s co-location group; None puts every job in its own group.
    """
    n = alloc.size
    groups = np.arange(n) if groups is None else np.asarray(groups)
    out = np.zeros(n)
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        period = float(group_iteration_time(compute[members], network[members], float(alloc[members].sum())))
        if np.isfinite(period) and period > 0:
            out[members] = compute[members] / period
    return out
