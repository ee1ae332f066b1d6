"""The ``slaq`` command: simulate, benchmark, and record traces. Every verb prints JSON."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from collections.abc import Sequence

from slaq.policy import POLICIES

log = logging.getLogger("slaq")


def _positive(kind: type):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def _emit(payload: dict) -> None:
    json.dump(payload, sys.stdout, indent=2, default=float)
    sys.stdout.write("\n")


def cmd_simulate(args: argparse.Namespace) -> int:
    from slaq.metrics import reduction_vs, time_to_key
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
        out["slaq_vs_fair"] = reduction_vs(by["slaq"], by["fair"])
    if args.plot:
        from slaq.sim.plot import plot_summaries

        out["plot"] = str(plot_summaries(full, args.plot))
    _emit(out)
    return 0


def cmd_bench_allocate(args: argparse.Namespace) -> int:
    from slaq.bench.allocate import bench_allocate

    _emit(bench_allocate(args.jobs, args.cores, args.policy, args.repeat))
    return 0


def cmd_bench_predict(args: argparse.Namespace) -> int:
    from slaq.bench.predict import mape_report
    from slaq.traces.catalog import load

    _emit(mape_report(load()))
    return 0


def _shares(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fractions such as 0.6,0.3,0.1, got {text!r}") from None


def cmd_bench_enforce(args: argparse.Namespace) -> int:
    from slaq.bench.enforce import bench_enforce

    modes = ["strict", "work-conserving"] if args.mode == "both" else [args.mode]
    _emit(bench_enforce(args.shares, args.seconds, modes, args.master, args.epoch, args.nodes))
    return 0


def cmd_bench_overhead(args: argparse.Namespace) -> int:
    from slaq.bench.overhead import bench_overhead

    _emit(bench_overhead(args.jobs, args.seconds, args.epoch, args.report_every, args.master, args.ui))
    return 0


def cmd_bench_mllib(args: argparse.Namespace) -> int:
    from slaq.bench.mllib_args import run_from_args

    _emit(run_from_args(args))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from slaq.reproduce.figures import ALIASES, FIGURES, PAPER, SMALL

    if not args.all and not args.figure:
        raise ValueError("name a figure or pass --all")
    names = list(FIGURES) if args.all else [ALIASES.get(args.figure, args.figure)]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    size = SMALL if args.small else PAPER
    report: dict = {"size": "small" if args.small else "paper", "figures": {}}
    started = time.perf_counter()
    for name in names:
        log.info("reproducing %s", name)
        t0 = time.perf_counter()
        data = FIGURES[name](size, out_dir / f"{name}.png")
        data["seconds"] = round(time.perf_counter() - t0, 2)
        (out_dir / f"{name}.json").write_text(json.dumps(data, indent=2, default=float) + "\n")
        report["figures"][name] = {"png": data["png"], "json": str(out_dir / f"{name}.json"), "seconds": data["seconds"]}
    report["seconds"] = round(time.perf_counter() - started, 2)
    _emit(report)
    return 0


def cmd_traces_record(args: argparse.Namespace) -> int:
    from pathlib import Path

    from slaq.traces.catalog import TRACE_FILE, record_all, save

    traces = record_all()
    path = Path(args.out) if args.out else TRACE_FILE
    save(traces, path)
    _emit({"path": str(path), "traces": len(traces),
           "families": sorted({t.family for t in traces}),
           "iterations": {t.name: len(t.losses) - 1 for t in traces}})
    return 0


def cmd_traces_list(args: argparse.Namespace) -> int:
    from slaq.traces.catalog import load

    _emit({"traces": [{"name": t.name, "family": t.family, "iterations": len(t.losses) - 1,
                       "first_loss": t.losses[0], "last_loss": t.losses[-1]} for t in load()]})
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="slaq", description="SLAQ: quality-driven scheduling of ML training jobs.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    verbs = parser.add_subparsers(dest="verb", required=True)

    sim = verbs.add_parser("simulate", help="replay recorded training traces on a simulated cluster",
                           description="Discrete-event simulation of the paper's §6.2 experiment; prints JSON.")
    sim.add_argument("--policy", action="append", choices=sorted(POLICIES), help="repeat to compare (default: slaq and fair)")
    sim.add_argument("--jobs", type=_positive(int), default=160)
    sim.add_argument("--cores", type=_positive(float), default=640)
    sim.add_argument("--arrival-mean", type=_positive(float), default=15.0, help="mean seconds between arrivals")
    sim.add_argument("--seed", type=int, default=1)
    sim.add_argument("--epoch", type=_positive(float), default=2.0, help="scheduling epoch in seconds")
    sim.add_argument("--reserve", type=float, default=0.0, help="cores reserved for non-ML jobs")
    sim.add_argument("--cost-scale", type=_positive(float), help="core-seconds per iteration of a unit-size job (default: the calibrated value)")
    sim.add_argument("--calibrate", action="store_true", help="re-calibrate the cost scale against fair's 71 s to 90%% first")
    sim.add_argument("--network-ratio", type=float, default=0.0,
                     help="switch on the per-iteration network phase: network work ~ this x compute per job, mixed 8x either way (default 0: off)")
    sim.add_argument("--series", action="store_true", help="include the loss-over-time series in the JSON")
    sim.add_argument("--plot", metavar="PNG", help="draw Fig. 7(a)/(b)-style curves to this file")
    sim.set_defaults(func=cmd_simulate)

    bench = verbs.add_parser("bench", help="benchmarks that print JSON").add_subparsers(dest="bench", required=True)
    alloc = bench.add_parser("allocate", help="time one full allocation", description="Median wall time of one allocation.")
    alloc.add_argument("--jobs", type=_positive(int), default=4000)
    alloc.add_argument("--cores", type=_positive(float), default=16384)
    alloc.add_argument("--policy", choices=sorted(POLICIES), default="slaq")
    alloc.add_argument("--repeat", type=_positive(int), default=7)
    alloc.set_defaults(func=cmd_bench_allocate)
    pred = bench.add_parser("predict", help="loss prediction error per family",
                            description="MAPE of predicting 1, 5, 10 iterations ahead: strawman vs weighted fit.")
    pred.set_defaults(func=cmd_bench_predict)

    enf = bench.add_parser("enforce", help="achieved vs target core shares on local-cluster Spark",
                           description="Saturating jobs under fixed shares; prints target and achieved core-time shares.")
    enf.add_argument("--shares", type=_shares, default=[0.6, 0.3, 0.1], help="comma-separated fractions summing to 1 (default 0.6,0.3,0.1)")
    enf.add_argument("--seconds", type=_positive(float), default=30.0, help="measurement window per mode (default 30)")
    enf.add_argument("--mode", choices=["strict", "work-conserving", "both"], default="both")
    enf.add_argument("--epoch", type=_positive(float), default=1.0)
    enf.add_argument("--master", default="local-cluster[2,1,1024]")
    enf.add_argument("--nodes", type=_positive(int), help="start an N-node standalone cluster on loopback for the run (instead of --master)")
    enf.set_defaults(func=cmd_bench_enforce)
    ovh = bench.add_parser("overhead", help="epoch-loop CPU with many registered jobs",
                           description="CPU share of one core the live epoch loop uses with --jobs jobs reporting losses.")
    ovh.add_argument("--jobs", type=_positive(int), default=50)
    ovh.add_argument("--seconds", type=_positive(float), default=30.0)
    ovh.add_argument("--epoch", type=_positive(float), default=2.0)
    ovh.add_argument("--report-every", type=_positive(float), default=0.5, help="seconds between each job's loss reports")
    ovh.add_argument("--master", default="local-cluster[2,1,1024]")
    ovh.add_argument("--ui", action="store_true", help="serve the Spark UI on 127.0.0.1 and time the SLAQ tab's page and JSON at the end")
    ovh.set_defaults(func=cmd_bench_overhead)
    mll = bench.add_parser("mllib", help="unmodified spark.ml fits and CrossValidator: SLAQ vs fair policy vs stock Spark FAIR",
                           description="Poisson arrivals of spark.ml fits (LogisticRegression L2/L1, LinearRegression l-bfgs, LinearSVC, MLP) on "
                                       "cached data, as plain fits and through CrossValidator(parallelism=4), under SLAQ, SLAQ's machinery with "
                                       "the fair policy, and stock Spark FAIR with one pool per fit; medians of --repeats, ratios vs stock.")
    from slaq.bench.mllib_args import add_mllib_arguments

    add_mllib_arguments(mll)
    mll.add_argument("--json", action="store_true", help="print JSON (what this verb always prints; accepted for symmetry with the example)")
    mll.set_defaults(func=cmd_bench_mllib)

    from slaq.reproduce.figures import ALIASES, FIGURES

    rep = verbs.add_parser("reproduce", help="regenerate a figure of the SLAQ paper (PNG + JSON in out/)",
                           description="Runs one paper figure's experiment and writes out/<figure>.png and .json; prints where and how long.")
    rep.add_argument("figure", nargs="?", choices=sorted([*FIGURES, *ALIASES]), help="figure to regenerate")
    rep.add_argument("--all", action="store_true", help="regenerate every figure")
    rep.add_argument("--small", action="store_true", help="reduced size (for CI): fewer jobs, cores and grid points")
    rep.add_argument("--out", default="out", help="output directory (default out/)")
    rep.set_defaults(func=cmd_reproduce)

    traces = verbs.add_parser("traces", help="recorded training traces").add_subparsers(dest="traces", required=True)
    rec = traces.add_parser("record", help="train every catalogued job and save the traces",
                            description="Runs the numpy/scipy trainers and writes the gzip JSON the simulator replays.")
    rec.add_argument("--out", help="output path (default: the packaged trace file)")
    rec.set_defaults(func=cmd_traces_record)
    lst = traces.add_parser("list", help="list the recorded traces", description="Lists the recorded traces.")
    lst.set_defaults(func=cmd_traces_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="scipy")
    try:
        return int(args.func(args))
    except (ValueError, FileNotFoundError) as exc:
        print(f"slaq: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
