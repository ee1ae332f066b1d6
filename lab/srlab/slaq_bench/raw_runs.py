"""A recording's raw runs, kept beside its trace so that a rule of :mod:`slaq.sim.record` can be tried again offline.

A trace holds each phase's medians over every run, so a change to how a phase is read from a run (its driver time,
its Spark jobs' latency) otherwise needs the sweep recorded again, which for the GBT-heavy sweep takes an hour or
more of a machine left alone. ``slaq bench mllib --record-trace T`` also writes ``T`` with ``.runs.json.gz`` in
place of its suffixes: per run, in the order the trace combined them, what :func:`slaq.sim.record.phases_of`
reads (each fit's arrival, losses and their times, its Spark jobs; every task's launch and end; the cores) and
each Spark job's stages as the status store timed them (submission, first task, completion), which no rule reads
yet. ``python -m srlab.slaq_bench.raw_runs T`` rebuilds the trace's jobs from it with the rules as they are now.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from slaq.live.status_store import every_stage, scala_list
from slaq.sim.record import RunJob, SparkJob, busy_cores, combine, phases_of
from slaq.sim.trace import Stage, Trace, load, save
from slaq.sim.trace_json import TraceError

FORMAT = "slaq-raw-runs/1"


def runs_path(trace_path: str | Path) -> Path:
    """``t.json.gz`` -> ``t.runs.json.gz``: where a trace's raw runs are kept."""
    path = Path(trace_path)
    return path.with_name(path.name.partition(".")[0] + ".runs.json.gz")


def fit_entry(name: str, family: str, arrival: float, losses: list[float], times: list[float], reports: bool,
              spark_jobs: list[SparkJob]) -> dict[str, Any]:
    """One fit of one run: ``times`` are its losses' times (a silent fit: its end)."""
    return {"name": name, "family": family, "arrival": arrival, "losses": losses, "times": times, "reports": reports,
            "spark_jobs": [asdict(j) for j in spark_jobs]}


def _spark_job(raw: dict[str, Any]) -> SparkJob:
    return SparkJob(raw["submitted"], raw["completed"], tuple(Stage(s["tasks"], s["seconds"], tuple(s["local"])) for s in raw["stages"]),
                    raw["first_launch"], raw["last_end"])


def run_jobs(raw: dict[str, Any]) -> list[RunJob]:
    """The run's fits as :func:`slaq.sim.record.combine` takes them, read with the rules as they are now."""
    busy = busy_cores([(a, b) for a, b in raw["tasks"]])
    return [RunJob(f["name"], f["family"], f["arrival"], tuple(f["losses"]),
                   tuple(phases_of(f["arrival"], f["times"], [_spark_job(j) for j in f["spark_jobs"]], busy, raw["cores"])), f["reports"])
            for f in raw["fits"]]


def _ms(opt: Any, offset: float) -> float | None:
    return opt.get().getTime() / 1000.0 - offset if opt.isDefined() else None


def stage_timeline(sc: Any, offset: float) -> list[dict[str, Any]]:
    """Every Spark job the status store holds, with its group and each stage's submission, first task launch,
    completion and task count (seconds minus ``offset``); read after the run, so it costs the run nothing."""
    stages = {int(st.stageId()): [_ms(st.submissionTime(), offset), _ms(st.firstTaskLaunchedTime(), offset),
                                  _ms(st.completionTime(), offset), int(st.numTasks())] for st in every_stage(sc)}
    out = []
    for job in scala_list(sc, sc._jsc.sc().statusStore().jobsList(None)):
        group = job.jobGroup()
        out.append({"job": int(job.jobId()), "group": group.get() if group.isDefined() else None,
                    "submitted": _ms(job.submissionTime(), offset), "completed": _ms(job.completionTime(), offset),
                    "stages": {str(i): stages.get(int(i)) for i in scala_list(sc, job.stageIds())}})
    return sorted(out, key=lambda j: j["job"])


def write_runs(trace_path: str | Path, runs: list[dict[str, Any]]) -> Path:
    path = runs_path(trace_path)
    with gzip.open(path, "wt") as fh:
        json.dump({"format": FORMAT, "runs": runs}, fh)
    return path


def rebuild(trace: Trace, runs: list[dict[str, Any]]) -> Trace:
    """``trace`` with its jobs combined again from its raw runs (its settings, measured figures and outside jobs kept)."""
    again = combine([run_jobs(r) for r in runs], trace.cores, trace.epoch, trace.setting, trace.measured)
    return replace(trace, jobs=again.jobs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m srlab.slaq_bench.raw_runs",
                                description="Rebuild a recorded trace's jobs from its raw runs with slaq.sim.record's rules as they are now.")
    p.add_argument("trace", help="a trace `slaq bench mllib --record-trace` wrote, its .runs.json.gz beside it")
    p.add_argument("--out", required=True, help="where to write the rebuilt trace (then: slaq simulate --check OUT)")
    args = p.parse_args(argv)
    try:
        with gzip.open(runs_path(args.trace), "rt") as fh:
            raw = json.load(fh)
    except (OSError, ValueError) as e:
        print(f"error: cannot read the raw runs of {args.trace}: {e}", file=sys.stderr)
        return 2
    if raw.get("format") != FORMAT:
        print(f"error: {runs_path(args.trace)} is not {FORMAT}", file=sys.stderr)
        return 2
    try:
        trace = load(args.trace)
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    save(rebuild(trace, raw["runs"]), args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
