#!/usr/bin/env python
"""SLAQ's main demo: a hyperparameter sweep of training jobs (logistic regression, SVM, K-Means,
boosting) with Poisson arrivals on an embedded local-cluster Spark, run under SLAQ, under SLAQ's
machinery with the fair policy, and under stock Spark FAIR (SLAQ off, one pool per job), compared on
time to 90%/95% loss reduction and mean normalized loss over time.

    python lab/demos/sweep.py            # human-readable comparison
    python lab/demos/sweep.py --json     # the same as JSON
    python lab/demos/sweep.py --nodes 3  # on a three-node standalone cluster started (and stopped) for the run
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from slaq.metrics import THRESHOLDS, mean_time_to_key, pct, reduction_vs
from slaq.progress import console
from srlab.cluster import spark_target
from srlab.slaq_bench.configs import CONFIGS, STOCK, check_configs
from srlab.slaq_bench.sweep import make_sweep, run_policy


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=16, help="training jobs in the sweep (default 16)")
    p.add_argument("--arrival-mean", type=float, default=2.0, help="mean seconds between arrivals (default 2)")
    p.add_argument("--iterations", type=int, default=40, help="iterations per job (default 40)")
    p.add_argument("--policies", default=",".join(CONFIGS),
                   help=f"comma-separated configurations to compare, from {', '.join(CONFIGS)} (default all; stock = SLAQ off, Spark FAIR)")
    p.add_argument("--master", default="local-cluster[2,1,1024]", help="Spark master (default local-cluster[2,1,1024])")
    p.add_argument("--nodes", type=int, help="start an N-node standalone cluster on loopback for the run (instead of --master)")
    p.add_argument("--epoch", type=float, default=1.0, help="SLAQ epoch in seconds (default 1)")
    p.add_argument("--partitions", type=int, help="partitions per job's data (default: two per executor core, 4 on the default master, 6 with --nodes 3)")
    p.add_argument("--rows", type=int, default=25000, help="rows per partition (default 25000)")
    p.add_argument("--features", type=int, default=20, help="features per row (default 20)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print JSON only")
    p.add_argument("--plot", help="write a plot of mean normalized loss over time to this PNG")
    args = p.parse_args(argv)
    if args.jobs < 1 or args.iterations < 2:
        p.error("--jobs must be >= 1 and --iterations >= 2")
    if args.partitions is not None and args.partitions < 1:
        p.error("--partitions must be >= 1")
    try:
        policies = check_configs([x.strip() for x in args.policies.split(",") if x.strip()])
    except ValueError as exc:
        p.error(f"--policies: {exc}")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sweep = make_sweep(args.jobs, args.arrival_mean, args.seed, args.iterations)
    out: dict = {"sweep": {"jobs": args.jobs, "arrival_mean_s": args.arrival_mean, "iterations": args.iterations, "master": args.master,
                           "epoch_s": args.epoch, "rows_per_partition": args.rows, "features": args.features, "seed": args.seed},
                 "policies": {}}
    with spark_target(args.master, args.nodes) as target, console(every=5.0, enabled=not args.json):  # SLAQ's table on stderr
        out["sweep"]["master"], out["sweep"]["nodes"] = target.master, args.nodes
        for policy in policies:
            if not args.json:
                print(f"running the sweep under {policy} ...", file=sys.stderr)
            out["policies"][policy] = run_policy(policy, sweep, target.master, args.epoch, args.partitions, args.rows, args.features,
                                                 extra_conf=target.conf, executors=args.nodes or 0)
    by = out["policies"]
    if "slaq" in by and "fair" in by:
        out["slaq_vs_fair"] = reduction_vs(by["slaq"], by["fair"])
    if "slaq" in by and STOCK in by:
        out["slaq_vs_stock"] = reduction_vs(by["slaq"], by[STOCK])
    if args.plot:
        from srlab.plot import plot_summaries

        plot_summaries(list(by.values()), args.plot)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    for name, s in by.items():
        times = ", ".join(f"to {pct(thr)}% {s[mean_time_to_key(thr)]} s" for thr in THRESHOLDS)
        print(f"{name:>6}: mean time {times}, mean normalized loss {s['mean_normalized_loss']}, makespan {s['makespan_s']} s")
    for key, value in out.get("slaq_vs_fair", {}).items():
        print(f"SLAQ vs fair, {key}: {value:+.1%}")
    for key, value in out.get("slaq_vs_stock", {}).items():
        print(f"SLAQ vs stock Spark FAIR, {key}: {value:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
