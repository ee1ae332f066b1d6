"""Experiment: would a closed-loop replay of a CrossValidator trace pass the check the open-loop one misses?

A CrossValidator trace (``slaq bench mllib --variants cv --record-trace``) records every fit's arrival from one
live run, so its replay starts fold ``k + 1``'s fits when that run did, however soon the replay ends fold ``k``.
Live, a fold starts when the previous fold's fits (and their evaluations) are done. This replays the trace with
each later fold arriving ``gap`` seconds after the replay's own end of the fold before it (the refit after the
last fold), found as a fixed point: replay, move the arrivals to the ends, replay again, until no arrival moves.
Only the first fold of each CrossValidator keeps its recorded arrival. A trace that holds two refits of one
CrossValidator (its runs picked different best entries) keeps the earlier.

    python -m srlab.slaq_bench.closed_loop out/mllib-cv-trace.json.gz --gaps 0,1,2,4
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from dataclasses import replace

from slaq.metrics import NINETY
from slaq.sim.check import CONFIG_POLICIES, check_trace
from slaq.sim.replay import ReplayResult, replay
from slaq.sim.trace import Trace, TraceJob, load

NAME = re.compile(r"^(?P<cv>.+)-p(?P<entry>\d+)-(?P<k>\d+)$")  # srlab.slaq_bench.mllib.ScopedEstimator's fit names
ROUNDS = 50  # fixed-point rounds at most


def folds_of(jobs: Sequence[TraceJob]) -> tuple[list[TraceJob], dict[str, list[str]]]:
    """The jobs (one refit per CrossValidator) and, per job of a later fold or a refit, the jobs it waits for."""
    by_cv: dict[str, dict[int, list[TraceJob]]] = {}
    for j in jobs:
        m = NAME.match(j.name)
        if m is None:
            raise SystemExit(f"{j.name}: not a CrossValidator fit name (<cv>-p<entry>-<k>)")
        by_cv.setdefault(m["cv"], {}).setdefault(int(m["k"]), []).append(j)
    kept, after = [], {}
    for folds in by_cv.values():
        last = max(folds)
        if len(folds[last]) > 1:  # two refits: the runs picked different best entries
            folds[last] = [min(folds[last], key=lambda j: j.arrival)]
        for k in sorted(folds):
            kept.extend(folds[k])
            if k > 0:
                for j in folds[k]:
                    after[j.name] = [p.name for p in folds.get(k - 1, [])]
    return kept, after


def closed_loop(trace: Trace, policy: str, gap: float) -> tuple[ReplayResult, int]:
    """The replay whose later folds arrive ``gap`` after the replay's own end of their previous fold; and the rounds taken."""
    jobs, after = folds_of(trace.jobs)
    work_conserving = bool(trace.setting.get("work_conserving", True))
    arrivals = {j.name: j.arrival for j in jobs}
    for rounds in range(1, ROUNDS + 1):
        result = replay([replace(j, arrival=arrivals[j.name]) for j in jobs], policy, trace.cores, trace.epoch, work_conserving)
        ends = {r["job"]: r["arrival_s"] + r["finished_s"] for r in result.jobs}
        moved = {name: max(ends[p] for p in preds) + gap for name, preds in after.items() if all(p in ends for p in preds)}
        if all(abs(moved[name] - arrivals[name]) < 1e-3 for name in moved):
            return result, rounds
        arrivals.update(moved)
    return result, ROUNDS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srlab.slaq_bench.closed_loop", description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a CrossValidator slaq-trace/1 file")
    parser.add_argument("--gaps", default="0,1,2,4", help="seconds from a fold's end to the next fold's start, comma-separated")
    args = parser.parse_args(argv)
    trace = load(args.trace)
    rows = []
    for c in check_trace(trace):  # the open-loop replay and the live medians, as `slaq simulate --check` has them
        measured = c.measured_s
        row = {"config": c.config, "measured_s": round(measured, 2), "measured_makespan_s": round(c.measured_makespan_s, 1),
               "open_loop": {"predicted_s": round(c.predicted_s, 2), "error": round(c.error, 4), "makespan_s": round(c.predicted_makespan_s, 1)}}
        for gap in [float(g) for g in args.gaps.split(",")]:
            result, rounds = closed_loop(trace, CONFIG_POLICIES[c.config], gap)
            row[f"gap_{gap:g}s"] = {"predicted_s": round(result.mean(NINETY), 2), "error": round(result.mean(NINETY) / measured - 1, 4),
                                    "makespan_s": round(result.makespan, 1), "rounds": rounds}
        rows.append(row)
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
