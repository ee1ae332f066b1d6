"""The lab's verbs of the ``slaq`` command: ``slaq bench allocate|predict|enforce|overhead|mllib|capture|prune``,
``slaq reproduce`` and ``slaq simulate --plot`` (registered through the ``slaq_riffle.cli`` entry point)."""

from __future__ import annotations

import argparse
import json
import logging
from typing import Any

from slaq.cli import cmd_simulate_traces, simulation_report
from slaq.policy import POLICIES
from sparkshim.commands import emit_json, positive

log = logging.getLogger("srlab.verbs")  # a progress logger: its INFO lines (headlines, progress) show without -v


def cmd_bench_allocate(args: argparse.Namespace) -> int:
    from srlab.slaq_bench.allocate import bench_allocate

    emit_json(bench_allocate(args.jobs, args.cores, args.policy, args.repeat))
    return 0


def cmd_bench_predict(args: argparse.Namespace) -> int:
    from slaq.traces.catalog import load
    from srlab.slaq_bench.predict import mape_report

    emit_json(mape_report(load()))
    return 0


def _shares(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fractions such as 0.6,0.3,0.1, got {text!r}") from None


def _names(text: str) -> list[str]:
    """A comma-separated option's names, blanks dropped."""
    return [x.strip() for x in text.split(",") if x.strip()]


def cmd_bench_enforce(args: argparse.Namespace) -> int:
    from srlab.slaq_bench.enforce import bench_enforce

    modes = ["strict", "work-conserving"] if args.mode == "both" else [args.mode]
    emit_json(bench_enforce(args.shares, args.seconds, modes, args.master, args.epoch, args.nodes))
    return 0


def cmd_bench_overhead(args: argparse.Namespace) -> int:
    from srlab.slaq_bench.overhead import bench_overhead

    emit_json(bench_overhead(args.jobs, args.seconds, args.epoch, args.report_every, args.master, args.ui))
    return 0


def cmd_bench_mllib(args: argparse.Namespace) -> int:
    from srlab.slaq_bench.mllib_args import run_from_args

    emit_json(run_from_args(args))
    return 0


def cmd_bench_capture(args: argparse.Namespace) -> int:
    from srlab.slaq_bench.capture_cost import bench_capture, headline

    result = bench_capture(args.repeats, args.rows, args.master)
    for line in headline(result):
        log.info("%s", line)
    emit_json(result)
    return 0


def cmd_bench_prune(args: argparse.Namespace) -> int:
    from srlab.slaq_bench.prune import PruneWorkload, bench_prune, headline

    seeds = tuple(range(args.first_seed, args.first_seed + args.seeds))
    work = PruneWorkload(seeds, args.rows, args.features, args.partitions, args.candidates, args.folds, args.max_iter, args.parallelism,
                         args.metric)
    result = bench_prune(work, _names(args.configs), args.master, args.epoch)
    for line in headline(result):
        log.info("%s", line)
    emit_json(result)
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from srlab.reproduce.slaq_figures import ALIASES, FIGURES, PAPER, SMALL

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
    emit_json(report)
    return 0


def cmd_simulate_with_plot(args: argparse.Namespace) -> int:
    if args.check is not None or args.project is not None:
        return cmd_simulate_traces(args)
    out, full = simulation_report(args)
    if args.plot:
        from srlab.plot import plot_summaries

        try:
            out["plot"] = str(plot_summaries(full, args.plot))
        except ModuleNotFoundError as exc:
            raise ValueError(f"--plot needs matplotlib, which is not installed here ({exc}): pip install -e 'lab[plot]'") from None
    emit_json(out)
    return 0


def register(parser: argparse.ArgumentParser, verbs: Any) -> None:
    """Adds the lab's verbs to ``slaq``'s sub-command ``verbs`` (called by the product's CLI)."""
    verbs.choices["simulate"].set_defaults(func=cmd_simulate_with_plot)  # the product's --plot, drawn here
    bench = verbs.add_parser("bench", help="benchmarks that print JSON").add_subparsers(dest="bench", required=True)
    alloc = bench.add_parser("allocate", help="time one full allocation", description="Median wall time of one allocation.")
    alloc.add_argument("--jobs", type=positive(int), default=4000)
    alloc.add_argument("--cores", type=positive(float), default=16384)
    alloc.add_argument("--policy", choices=sorted(POLICIES), default="slaq")
    alloc.add_argument("--repeat", type=positive(int), default=7)
    alloc.set_defaults(func=cmd_bench_allocate)
    pred = bench.add_parser("predict", help="loss prediction error per family",
                            description="MAPE of predicting 1, 5, 10 iterations ahead: strawman vs weighted fit.")
    pred.set_defaults(func=cmd_bench_predict)

    enf = bench.add_parser("enforce", help="achieved vs target core shares on local-cluster Spark",
                           description="Saturating jobs under fixed shares; prints target and achieved core-time shares.")
    enf.add_argument("--shares", type=_shares, default=[0.6, 0.3, 0.1], help="comma-separated fractions summing to 1 (default 0.6,0.3,0.1)")
    enf.add_argument("--seconds", type=positive(float), default=30.0, help="measurement window per mode (default 30)")
    enf.add_argument("--mode", choices=["strict", "work-conserving", "both"], default="both")
    enf.add_argument("--epoch", type=positive(float), default=1.0)
    enf.add_argument("--master", default="local-cluster[2,1,1024]")
    enf.add_argument("--nodes", type=positive(int), help="start an N-node standalone cluster on loopback for the run (instead of --master)")
    enf.set_defaults(func=cmd_bench_enforce)
    ovh = bench.add_parser("overhead", help="epoch-loop CPU with many registered jobs",
                           description="CPU share of one core the live epoch loop uses with --jobs jobs reporting losses.")
    ovh.add_argument("--jobs", type=positive(int), default=50)
    ovh.add_argument("--seconds", type=positive(float), default=30.0)
    ovh.add_argument("--epoch", type=positive(float), default=2.0)
    ovh.add_argument("--report-every", type=positive(float), default=0.5, help="seconds between each job's loss reports")
    ovh.add_argument("--master", default="local-cluster[2,1,1024]")
    ovh.add_argument("--ui", action="store_true", help="serve the Spark UI on 127.0.0.1 and time the SLAQ tab's page and JSON at the end")
    ovh.set_defaults(func=cmd_bench_overhead)
    mll = bench.add_parser("mllib", help="unmodified spark.ml fits and CrossValidator: SLAQ vs fair policy vs stock Spark FAIR",
                           description="Poisson arrivals of spark.ml fits (LogisticRegression L2/L1, LinearRegression l-bfgs, LinearSVC, MLP) on "
                                       "cached data, as plain fits and through CrossValidator(parallelism=4), under SLAQ, SLAQ's machinery with "
                                       "the fair policy, and stock Spark FAIR with one pool per fit; medians of --repeats, ratios vs stock.")
    from srlab.slaq_bench.mllib_args import add_mllib_arguments

    add_mllib_arguments(mll)
    cap = bench.add_parser("capture", help="what capturing a Gaussian mixture's loss costs the fit",
                           description="The same GaussianMixture fit (k=4, 15 EM steps, 10 features) alternately with SLAQ on (its losses "
                                       "captured) and detached, in one local-cluster session: medians and spread of each side, their "
                                       "ratio, and the EM steps captured per fit.")
    cap.add_argument("--repeats", type=positive(int), default=7, help="fits of each side (default 7)")
    cap.add_argument("--rows", type=positive(int), default=100_000, help="rows of the cached data (default 100000)")
    cap.add_argument("--master", default="local-cluster[2,1,2048]")
    cap.set_defaults(func=cmd_bench_capture)
    pru = bench.add_parser("prune", help="CrossValidator with spark.slaq.prune vs stock's exhaustive CrossValidator",
                           description="Seeded LogisticRegression grids through CrossValidator: time until the best model is known and "
                                       "whether the same best was chosen, with pruning (slaq-prune), SLAQ without it and stock Spark FAIR.")
    pru.add_argument("--seeds", type=positive(int), default=3, help="grids, one per seed (default 3)")
    pru.add_argument("--first-seed", type=int, default=1)
    pru.add_argument("--rows", type=positive(int), default=5000, help="rows of each grid's data (default 5000)")
    pru.add_argument("--features", type=positive(int), default=40, help="features per row (default 40: enough that the regularization matters)")
    pru.add_argument("--partitions", type=positive(int), default=4)
    pru.add_argument("--candidates", type=positive(int), default=8, help="param maps per grid (default 8)")
    pru.add_argument("--folds", type=positive(int), default=3, help="CrossValidator numFolds (default 3)")
    pru.add_argument("--max-iter", type=positive(int), default=20)
    pru.add_argument("--parallelism", type=positive(int), default=4, help="CrossValidator parallelism (default 4)")
    pru.add_argument("--metric", choices=["logLoss", "areaUnderROC"], default="logLoss",
                     help="the CrossValidator's validation metric (default logLoss; AUC ties candidates that differ only in L2 strength)")
    pru.add_argument("--configs", default="stock,slaq,slaq-prune", help="comma-separated configurations (default stock,slaq,slaq-prune)")
    pru.add_argument("--epoch", type=positive(float), default=1.0)
    pru.add_argument("--master", default="local-cluster[2,1,1024]")
    pru.set_defaults(func=cmd_bench_prune)
    mll.add_argument("--json", action="store_true", help="print JSON (what this verb always prints; accepted for symmetry with the example)")
    mll.set_defaults(func=cmd_bench_mllib)

    from srlab.reproduce.slaq_figures import ALIASES, FIGURES

    rep = verbs.add_parser("reproduce", help="regenerate a figure of the SLAQ paper (PNG + JSON in out/)",
                           description="Runs one paper figure's experiment and writes out/<figure>.png and .json; prints where and how long.")
    rep.add_argument("figure", nargs="?", choices=sorted([*FIGURES, *ALIASES]), help="figure to regenerate")
    rep.add_argument("--all", action="store_true", help="regenerate every figure")
    rep.add_argument("--small", action="store_true", help="reduced size (for CI): fewer jobs, cores and grid points")
    rep.add_argument("--out", default="out", help="output directory (default out/)")
    rep.set_defaults(func=cmd_reproduce)

