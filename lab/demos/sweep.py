#!/usr/bin/env python
"""SLAQ's main demo: a hyperparameter sweep of training jobs (logistic regression, SVM, K-Means,
boosting) with Poisson arrivals on an embedded local-cluster Spark, run under SLAQ (its default policy,
``order``), under SLAQ's machinery with the fair policy, and under stock Spark FAIR (SLAQ off, one pool per job), compared on
time to 90%/95% loss reduction and mean normalized loss over time.

Changes are SLAQ's figure relative to the other's: negative = less time (or lower loss) under SLAQ.
One run of each configuration takes about 2-3 minutes on a quiet 2-core machine (the default: 6-9
minutes in all); --repeats N runs them interleaved (order, fair, stock, order, ...) and reports the
median change and its spread. It prints a progress line every 10 s and then the comparison; --tables adds
SLAQ's table of the latest epoch every 5 s. README's figures are medians of 5 repeats with their spread: a
single run can fall outside it.

    python lab/demos/sweep.py                  # human-readable comparison
    python lab/demos/sweep.py --json           # the same as JSON
    python lab/demos/sweep.py --repeats 5      # medians of 5 interleaved repeats, with their spread
    python lab/demos/sweep.py --record-trace out/sweep-trace.json.gz   # also record the workload (slaq simulate --check)
    python lab/demos/sweep.py --nodes 3        # on a three-node standalone cluster started (and stopped) for the run
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path

from slaq.metrics import THRESHOLDS, mean_time_to_key, pct
from slaq.progress import console
from srlab.cluster import spark_target
from srlab.slaq_bench.configs import CONFIGS, STOCK, check_configs
from srlab.slaq_bench.sweep import make_sweep, run_policy

FIGURES = ("mean_normalized_loss", *(mean_time_to_key(thr) for thr in THRESHOLDS), "makespan_s")


def change(ours: dict, base: dict) -> dict[str, float]:
    """``ours / base - 1`` for each figure both have (negative: SLAQ took less time or had lower loss)."""
    return {k: round(ours[k] / base[k] - 1, 4) for k in FIGURES if base.get(k) and ours.get(k) is not None}


def margins(runs: dict[str, list[dict]], ours: str, base: str) -> dict[str, dict]:
    """Per figure: the per-repeat changes of ``ours`` vs ``base`` (repeat i against repeat i), their median and
    spread, and whether the spread crosses 0 (the difference is inside the run-to-run noise)."""
    per_repeat = [change(a, b) for a, b in zip(runs[ours], runs[base])]
    out = {}
    for k in FIGURES:
        values = [c[k] for c in per_repeat if k in c]
        if values:
            out[k] = {"median": round(statistics.median(values), 4), "min": min(values), "max": max(values), "repeats": values,
                      "inside_noise": len(values) > 1 and min(values) < 0 < max(values)}
    return out


def median_summary(runs: list[dict]) -> dict:
    """The configuration's medians over its repeats (each figure its own median); ``loss_over_time`` from
    the repeat whose mean time to 90% is the median one."""
    key = mean_time_to_key(THRESHOLDS[0])
    mid = sorted(runs, key=lambda r: r.get(key) or 0.0)[(len(runs) - 1) // 2]
    out = {k: v for k, v in mid.items() if k != "trace_jobs"}
    for k in FIGURES:
        values = [r[k] for r in runs if r.get(k) is not None]
        out[k] = round(statistics.median(values), 4) if values else None
    out["repeats"] = len(runs)
    return out


def record_trace(path: str, runs: dict[str, list[dict]], args: argparse.Namespace, master: str) -> Path:
    from slaq.metrics import time_to_key
    from slaq.sim.record import combine
    from slaq.sim.trace import save

    every = [r for rs in runs.values() for r in rs]
    measured = {name: [{"mean_time_to_90pct_s": r[mean_time_to_key(0.9)], "mean_time_to_95pct_s": r[mean_time_to_key(0.95)],
                        "makespan_s": r["makespan_s"],
                        time_to_key(0.9): {j: v[time_to_key(0.9)] for j, v in r["jobs"].items()}} for r in rs]
                for name, rs in runs.items()}
    setting = {"source": "lab/demos/sweep.py", "master": master, "jobs": args.jobs, "arrival_mean_s": args.arrival_mean,
               "iterations": args.iterations, "partitions": every[0]["partitions"], "rows_per_partition": args.rows,
               "features": args.features, "seed": args.seed, "repeats": args.repeats, "work_conserving": True,
               "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "phases": "median over every run of every configuration"}
    trace = combine([r["trace_jobs"] for r in every], every[0]["executor_cores"], args.epoch, setting, measured)
    return save(trace, path)


SINGLE_RUN = ("One run of each configuration: README's figures are medians of 5 interleaved repeats with their spread, "
              "and a single run can fall outside that spread (a busy machine moves it most); --repeats 5 for medians.")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--jobs", type=int, default=16, help="training jobs in the sweep (default 16)")
    p.add_argument("--arrival-mean", type=float, default=2.0, help="mean seconds between arrivals (default 2)")
    p.add_argument("--iterations", type=int, default=40, help="iterations per job (default 40)")
    p.add_argument("--policies", default=",".join(CONFIGS),
                   help=f"comma-separated configurations to compare, from {', '.join(CONFIGS)}, slaq (default all but slaq; order = SLAQ's "
                        "default; stock = SLAQ off, Spark FAIR; slaq = spark.slaq.policy=slaq, the paper's allocation alone)")
    p.add_argument("--repeats", type=int, default=1, help="run every configuration N times, interleaved, and report medians and spread (default 1)")
    p.add_argument("--master", default="local-cluster[2,1,1024]", help="Spark master (default local-cluster[2,1,1024])")
    p.add_argument("--nodes", type=int, help="start an N-node standalone cluster on loopback for the run (instead of --master)")
    p.add_argument("--epoch", type=float, default=1.0, help="SLAQ epoch in seconds (default 1)")
    p.add_argument("--partitions", type=int, help="partitions per job's data (default: two per executor core, 4 on the default master, 6 with --nodes 3)")
    p.add_argument("--rows", type=int, default=25000, help="rows per partition (default 25000)")
    p.add_argument("--features", type=int, default=20, help="features per row (default 20)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print JSON only")
    p.add_argument("--tables", action="store_true", help="also print SLAQ's table of the latest epoch every 5 s (stderr)")
    p.add_argument("--plot", help="write a plot of mean normalized loss over time and mean time to 90/95%% to this PNG")
    p.add_argument("--record-trace", metavar="PATH",
                   help="also record the workload as a slaq-trace/1 JSON (.gz: gzip) for `slaq simulate --check` / `--project`")
    args = p.parse_args(argv)
    if args.jobs < 1 or args.iterations < 2 or args.repeats < 1:
        p.error("--jobs and --repeats must be >= 1 and --iterations >= 2")
    if args.partitions is not None and args.partitions < 1:
        p.error("--partitions must be >= 1")
    try:
        policies = check_configs([x.strip() for x in args.policies.split(",") if x.strip()])
    except ValueError as exc:
        p.error(f"--policies: {exc}")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    sweep = make_sweep(args.jobs, args.arrival_mean, args.seed, args.iterations)
    out: dict = {"sweep": {"jobs": args.jobs, "arrival_mean_s": args.arrival_mean, "iterations": args.iterations, "master": args.master,
                           "epoch_s": args.epoch, "rows_per_partition": args.rows, "features": args.features, "seed": args.seed,
                           "repeats": args.repeats, "sign": "changes are <name>_vs_<base>: name / base - 1, negative = less time (lower loss) under name"},
                 "policies": {}}
    runs: dict[str, list[dict]] = {name: [] for name in policies}
    began = time.monotonic()
    with spark_target(args.master, args.nodes) as target, console(every=5.0, enabled=args.tables and not args.json):
        out["sweep"]["master"], out["sweep"]["nodes"] = target.master, args.nodes
        for repeat in range(args.repeats):
            for policy in policies:
                say(f"[{time.monotonic() - began:.0f} s] repeat {repeat + 1}/{args.repeats}: running the sweep under {policy} ...")
                runs[policy].append(run_policy(policy, sweep, target.master, args.epoch, args.partitions, args.rows, args.features,
                                               extra_conf=target.conf, executors=args.nodes or 0, progress=say,
                                               record=bool(args.record_trace)))
                run = runs[policy][-1]
                say(f"  {policy}: mean time to 90% {run[mean_time_to_key(0.9)]} s, to 95% {run[mean_time_to_key(0.95)]} s, "
                    f"mean normalized loss {run['mean_normalized_loss']}, makespan {run['makespan_s']} s")
    out["policies"] = by = {name: median_summary(rs) for name, rs in runs.items()}
    for name, base in (("order", "fair"), ("order", STOCK), ("order", "slaq"), ("slaq", "fair"), ("slaq", STOCK)):
        if name in by and base in by:
            out[f"{name}_vs_{base}"] = margins(runs, name, base)
    out["elapsed_s"] = round(time.monotonic() - began, 1)
    if args.record_trace:
        out["trace"] = str(record_trace(args.record_trace, runs, args, out["sweep"]["master"]))
        say(f"trace written to {out['trace']}")
    if args.plot:
        from srlab.plot import plot_summaries

        plot_summaries(list(by.values()), args.plot, title=f"sweep of {args.jobs} jobs on {out['sweep']['master']}"
                       + (f", medians of {args.repeats}" if args.repeats > 1 else ""))
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    for name, s in by.items():
        times = ", ".join(f"to {pct(thr)}% {s[mean_time_to_key(thr)]} s" for thr in THRESHOLDS)
        print(f"{name:>6}: mean time {times}, mean normalized loss {s['mean_normalized_loss']}, makespan {s['makespan_s']} s")
    labels = {"order": "SLAQ", "slaq": "SLAQ's slaq policy", "fair": "SLAQ's fair policy", STOCK: "stock Spark FAIR"}
    for pair in [k for k in out if "_vs_" in k]:
        name, base = pair.split("_vs_")
        for key, m in out[pair].items():
            spread = f" (repeats {m['min']:+.1%}..{m['max']:+.1%}{', inside the noise' if m['inside_noise'] else ''})" if args.repeats > 1 else ""
            print(f"{labels[name]} vs {labels[base]}, {key}: {m['median']:+.1%}{spread}")
    print(f"(negative = less under the first; {out['elapsed_s']:.0f} s in all)")
    if args.repeats == 1:
        print(SINGLE_RUN)
    return 0


if __name__ == "__main__":
    sys.exit(main())
