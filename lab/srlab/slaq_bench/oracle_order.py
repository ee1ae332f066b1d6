"""Experiment: how close a clairvoyant *order* comes to ``slaq simulate``'s relaxed bound on a recorded trace.

The replay (:mod:`slaq.sim.replay`) runs the trace with stock Spark's offer round swapped for one that knows
each job's future: fewest executor seconds left to its 90% point first, jobs past that point last (by work
left). Tasks stay unpreempted and driver time stays, so the gap between this order and the bound is what the
bound's relaxation accounts for, and the gap between SLAQ and this order is what SLAQ cannot know.
Swaps a private function of the replay for the run: a lab measurement, not a policy.

    python -m srlab.slaq_bench.oracle_order out/mllib-trace-fits.json.gz --cores 2,16
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import slaq.sim.replay as replay_module
from slaq.metrics import NINETY
from slaq.sim.check import STEP_GAP, clairvoyant_bound, ninety_phase, scaled
from slaq.sim.trace import TraceJob, load


@functools.cache
def _future(spec: TraceJob) -> tuple[int, float, float]:
    """What the oracle knows of a job (once per trace job, not per offer): its 90% phase, and its executor
    seconds to that phase and to its end."""
    k = ninety_phase(spec)
    return k, spec.work_to(k)[0], spec.work_to(len(spec.phases) - 1)[0]


def _left(spec: TraceJob, phase: int, consumed: float) -> float:
    """The oracle's key: executor seconds left to the 90% point, or (past it) 1e9 plus the work left."""
    k, to_ninety, to_end = _future(spec)
    return to_ninety - consumed if phase <= k else 1e9 + to_end - consumed


def oracle_offer(states: Sequence[Any], pools: replay_module.PoolArrays, arrived: int, free: int, t: float,
                 push: Callable[..., None], stock: bool, work_conserving: bool) -> int:
    """The replay's offer round in the oracle's order (for the ``stock`` replay only)."""
    if free <= 0:
        return free
    waiting = np.flatnonzero(pools.pending[:arrived] > 0)
    if not waiting.size:
        return free
    keys = np.array([_left(states[i].spec, states[i].phase, states[i].consumed) for i in waiting.tolist()])
    for i in waiting[np.argsort(keys, kind="stable")].tolist():
        s = states[i]
        n = min(free, int(pools.pending[i]))
        pools.pending[i] -= n
        pools.running[i] += n
        free -= n
        push(t + s.spec.phases[s.phase].stages[s.stage].task_seconds, replay_module._TASKS_DONE, i, n)
        if free == 0:
            break
    return free


def compare(path: str, cores_list: Sequence[int]) -> list[dict]:
    trace = load(path)
    work_conserving = bool(trace.setting.get("work_conserving", True))  # as the check replays it
    rows = []
    for cores in cores_list:
        jobs = list(trace.jobs) if cores == trace.cores else scaled(trace, cores)
        gap = 0.0 if cores == trace.cores else STEP_GAP
        row: dict = {"cores": cores, "jobs": len(jobs)}
        for policy in ("slaq", "fair", replay_module.STOCK):
            row[policy] = round(replay_module.replay(jobs, policy, cores, trace.epoch, work_conserving, min_step_gap=gap).mean(NINETY), 3)
        original = replay_module._offer
        replay_module._offer = oracle_offer  # type: ignore[assignment]
        try:
            row["oracle"] = round(replay_module.replay(jobs, replay_module.STOCK, cores, trace.epoch).mean(NINETY), 3)
        finally:
            replay_module._offer = original
        bound = clairvoyant_bound(jobs, cores)["mean_time_to_90pct_s"]
        row["bound"] = bound
        row["ratio_to_bound"] = {k: round(row[k] / bound, 2) for k in ("slaq", "fair", replay_module.STOCK, "oracle")}
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srlab.slaq_bench.oracle_order", description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a slaq-trace/1 file (.json or .json.gz)")
    parser.add_argument("--cores", default="2,16", help="comma-separated core counts; the trace's own replays it as recorded (default 2,16)")
    args = parser.parse_args(argv)
    for row in compare(args.trace, [int(c) for c in args.cores.split(",")]):
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
