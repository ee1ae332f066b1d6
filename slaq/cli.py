"""The ``slaq`` command: simulate and record traces; prints JSON.

From a clone, the lab (``lab/``, not in the wheel) adds ``bench`` and ``reproduce`` verbs and
``simulate --plot`` through the ``slaq_riffle.cli`` entry point group.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from slaq.live.config import EPOCH_RANGE
from slaq.policy import POLICIES
from slaq.sim.check import PROJECT_CORES
from slaq.sim.trace import CORES, MAX_JOBS
from sparkshim.commands import add_lab_verbs, add_version, emit_json, in_range, positive, run_verb

log = logging.getLogger("slaq")


def simulation_report(args: argparse.Namespace) -> tuple[dict, list[dict]]:
    """The ``simulate`` verb's JSON, and every policy's full summary (the lab's ``--plot`` draws those)."""
    from slaq.metrics import change_vs, time_to_key
    from slaq.sim.calibrate import PAPER_FAIR_TIME_TO_90, PAPER_FAIR_TIME_TO_95, calibrate_cost_scale
    from slaq.sim.engine import simulate
    from slaq.sim.workload import PAPER_COST_SCALE, make_workload

    calibration: dict = {"source": "fixed in slaq/sim/workload.py (fair only, before SLAQ was measured)",
                         "paper_fair_" + time_to_key(0.9): PAPER_FAIR_TIME_TO_90,
                         "paper_fair_" + time_to_key(0.95): PAPER_FAIR_TIME_TO_95}
    cost_scale = args.cost_scale or PAPER_COST_SCALE
    if args.calibrate:
        found = calibrate_cost_scale(args.jobs, args.cores, args.arrival_mean, args.seed)
        cost_scale = found["cost_scale"]
        calibration = {**calibration, **found, "source": "calibrated now with the fair policy"}
    elif args.cost_scale:
        calibration["source"] = "given on the command line"
    workload = make_workload(args.jobs, args.arrival_mean, args.seed, cost_scale=cost_scale, network_ratio=args.network_ratio)
    full = []
    for name in args.policy or ["slaq", "fair"]:
        log.info("simulating %s: %d jobs on %s cores", name, args.jobs, args.cores)
        full.append(simulate(workload, name, args.cores, args.epoch, args.reserve).summary())
    summaries = full if args.series else [
        {**s, "loss_over_time": {"bucket_s": s["loss_over_time"]["bucket_s"], "omitted": "pass --series"}} for s in full]
    out: dict = {"workload": {**workload.description, "cores": args.cores, "epoch_s": args.epoch,
                              "reserved_cores": args.reserve, "calibration": calibration},
                 "policies": {s["policy"]: s for s in summaries}}
    by = out["policies"]
    if "slaq" in by and "fair" in by:
        out["slaq_vs_fair"] = change_vs(by["slaq"], by["fair"])
    return out, full


PLOT_NEEDS = ("--plot needs matplotlib and the project's lab, which draws the plots; the installed package ships neither: "
              "from a clone, `bash scripts/setup.sh` installs both (the lab with its `plot` extra: pip install -e 'lab[plot]')")


def cmd_simulate(args: argparse.Namespace) -> int:
    if args.check is not None or args.project is not None:
        return cmd_simulate_traces(args)
    if args.plot:  # the lab's entry point replaces this function where it is installed (srlab.slaq_verbs)
        raise ValueError(PLOT_NEEDS)
    emit_json(simulation_report(args)[0])
    return 0


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_simulate_traces(args: argparse.Namespace) -> int:
    """``--check`` / ``--project``: replay recorded live workloads (slaq.sim.check); exit 1 when a check misses.
    stdout is the JSON; stderr the verdict (its first line for ``--check``) and the progress."""
    from slaq.sim.check import POLICIES, TOLERANCE, check_against_clairvoyant, check_trace, check_verdict, packaged_traces, plan_projections, project_row
    from slaq.sim.trace import Trace, load

    loaded: dict[str, Trace] = {}

    def traces_of(given: list[str] | None) -> list[Trace]:
        paths = [str(p) for p in (given or packaged_traces())]
        if not paths:
            raise ValueError("no trace given and none packaged: record one with --conf spark.slaq.recordTrace=PATH on an application")
        for p in paths:
            if p not in loaded:
                loaded[p] = load(p)
        return [loaded[p] for p in paths]

    checked = traces_of(args.check) if args.check is not None else []
    projected = traces_of(args.project) if args.project is not None else []
    plan = plan_projections(projected, args.project_cores, args.seed)  # every bound checked before anything replays
    out: dict = {"model": "slaq.sim.replay: task-level replay, driver time and Spark latency hold no executor core",
                 "traces": [{"path": t.name, "jobs": len(t.jobs), "cores": t.cores, "epoch_s": t.epoch,
                             **{k: t.setting[k] for k in ("source", "master", "recorded_at", "repeats") if k in t.setting}}
                            for t in loaded.values()]}
    ok = True
    if checked:
        by_trace = {t.name: check_trace(t, _say if args.verbose else None) for t in checked}  # seconds: the verdict comes first
        checks = [c for rows in by_trace.values() for c in rows]
        ok = all(c.ok for c in checks)
        _say(check_verdict(len(checked), checks))
        out["check"] = {"tolerance": TOLERANCE, "all_within": ok, "configs": [c.as_dict() for c in checks],
                        "vs_clairvoyant": {f"{t.name}@{t.cores}": check_against_clairvoyant(t, by_trace[t.name]) for t in checked}}
    if plan:
        rows: dict[str, list[dict]] = {t.name: [] for t in projected}
        replays = len(plan) * (len(POLICIES) + 1)  # each policy's and the clairvoyant order's
        started = iter(range(1, replays + 1))
        for p in plan:
            def announce(policy: str, label: str = p.label) -> None:
                _say(f"projection {next(started)}/{replays}: {label} under {policy}")

            rows[p.trace.name].append(project_row(p, POLICIES, announce, _say if args.verbose else None))
        out["projection"] = {"assumptions": f"jobs and arrival rate scaled with cores (Poisson, seed {args.seed}); the driver on a machine "
                                            "of its own: driver time and Spark latency as recorded, holding no executor core",
                             "traces": [{"path": name, "rows": r} for name, r in rows.items()],
                             "vs_clairvoyant": {f"{name}@{row['cores']}": row["vs_clairvoyant"] for name, r in rows.items() for row in r}}
    emit_json(out)
    return 0 if ok else 1


def cmd_traces_record(args: argparse.Namespace) -> int:
    from pathlib import Path

    from slaq.traces.catalog import TRACE_FILE, record_all, save

    traces = record_all()
    path = Path(args.out) if args.out else TRACE_FILE
    save(traces, path)
    emit_json({"path": str(path), "traces": len(traces),
           "families": sorted({t.family for t in traces}),
           "iterations": {t.name: len(t.losses) - 1 for t in traces}})
    return 0


def cmd_traces_list(args: argparse.Namespace) -> int:
    from slaq.traces.catalog import load

    emit_json({"traces": [{"name": t.name, "family": t.family, "iterations": len(t.losses) - 1,
                       "first_loss": t.losses[0], "last_loss": t.losses[-1]} for t in load()]})
    return 0


def _core_list(text: str) -> tuple[int, ...]:
    try:
        cores = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated integers, got {text!r}") from None
    if not cores or min(cores) < CORES[0] or max(cores) > CORES[1]:
        raise argparse.ArgumentTypeError(f"core counts must be {CORES[0]} to {CORES[1]}, got {text!r}")
    return cores


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="slaq", description="SLAQ: quality-driven scheduling of ML training jobs.")
    add_version(parser, "slaq")
    verbs = parser.add_subparsers(dest="verb", required=True)

    sim = verbs.add_parser("simulate", help="replay recorded training traces on a simulated cluster",
                           description="Discrete-event simulation of the paper's §6.2 experiment; prints JSON.")
    sim.add_argument("--policy", action="append", choices=sorted(POLICIES), help="repeat to compare (default: slaq and fair)")
    sim.add_argument("--jobs", type=in_range(int, 1, MAX_JOBS), default=160)
    sim.add_argument("--cores", type=in_range(float, *CORES), default=640)
    sim.add_argument("--arrival-mean", type=positive(float), default=15.0, help="mean seconds between arrivals")
    sim.add_argument("--seed", type=in_range(int, 0, 2**32 - 1), default=1)
    sim.add_argument("--epoch", type=in_range(float, *EPOCH_RANGE), default=2.0, help="scheduling epoch in seconds")
    sim.add_argument("--reserve", type=in_range(float, 0, CORES[1]), default=0.0, help="cores reserved for non-ML jobs")
    sim.add_argument("--cost-scale", type=positive(float), help="core-seconds per iteration of a unit-size job (default: the calibrated value)")
    sim.add_argument("--calibrate", action="store_true", help="re-calibrate the cost scale against fair's 71 s to 90%% first")
    sim.add_argument("--network-ratio", type=float, default=0.0,
                     help="switch on the per-iteration network phase: network work ~ this x compute per job, mixed 8x either way (default 0: off)")
    sim.add_argument("--series", action="store_true", help="include the loss-over-time series in the JSON")
    sim.add_argument("--check", nargs="*", metavar="TRACE",
                     help="replay recorded live workloads (slaq-trace/1, from an application run with --conf spark.slaq.recordTrace=PATH, or "
                          "--record-trace of lab/demos/sweep.py or slaq bench mllib; "
                          "default: the packaged ones: the sweep demo, 12 spark.ml fits, CrossValidator) on their live configuration "
                          "and compare each configuration's mean time to 90%% with the live runs' median, beside a clairvoyant order; "
                          "the verdict is stderr's first line, the JSON stdout; exit 1 when one is off by more than 15%%, 2 when a trace "
                          "is out of bounds (docs/benchmarks.md) or has no measured run to compare with")
    sim.add_argument("--project", nargs="*", metavar="TRACE",
                     help="the same recorded workloads scaled to --project-cores: SLAQ vs fair vs stock Spark FAIR vs a clairvoyant "
                          "order, and a clairvoyant lower bound on mean time to 90%%; progress on stderr")
    sim.add_argument("--project-cores", type=_core_list, default=PROJECT_CORES,
                     help=f"comma-separated core counts, each {CORES[0]} to {CORES[1]}; a projection replays at most {MAX_JOBS:,} jobs "
                          f"(default {','.join(map(str, PROJECT_CORES))})")
    sim.add_argument("--plot", metavar="PNG", help="draw Fig. 7(a)/(b)-style curves to this file (needs matplotlib and the "
                                                   "project's lab, from a clone)")
    sim.set_defaults(func=cmd_simulate)

    traces = verbs.add_parser("traces", help="recorded training traces").add_subparsers(dest="traces", required=True)
    rec = traces.add_parser("record", help="train every catalogued job and save the traces",
                            description="Runs the numpy/scipy trainers and writes the gzip JSON the simulator replays.")
    rec.add_argument("--out", help="output path (default: the packaged trace file)")
    rec.set_defaults(func=cmd_traces_record)
    lst = traces.add_parser("list", help="list the recorded traces", description="Lists the recorded traces.")
    lst.set_defaults(func=cmd_traces_list)
    add_lab_verbs(parser, verbs, "slaq")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_verb(build_parser().parse_args(argv), "slaq")


if __name__ == "__main__":
    sys.exit(main())
