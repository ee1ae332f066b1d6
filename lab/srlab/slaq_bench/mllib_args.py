"""The options of the spark.ml sweep benchmark, shared by ``slaq bench mllib`` and ``lab/demos/mllib_sweep.py``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srlab.slaq_bench.mllib import Workload

from srlab.slaq_bench.configs import CONFIGS
from srsupport.session import DEFAULT_MASTER

# --small: a CI-sized run (one fit per family, two GBT fits and a linear one, tiny data, few iterations, one repeat)
SMALL: dict[str, Any] = {"fits": 5, "gbt_fits": 2, "rows": 4000, "features": 8, "partitions": 2, "max_iter": 6, "arrival_mean": 0.3,
                         "repeats": 1, "executor_memory_mb": None}
# The default sweep's twelve fits each cache their own ~125 MB copy of the data ("training blocks") while
# they run: ~750 MB of storage per executor when they all run at once, vs 434 MB on Spark's default 1 GiB
# executors, where blocks spill to disk and the figure measures disk reads, not scheduling.
DEFAULT_EXECUTOR_MEMORY_MB = 3072


def add_mllib_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fits", type=int, default=12, help="spark.ml fits in the sweep, cycling through the five families (default 12)")
    p.add_argument("--gbt-fits", type=int, default=8,
                   help="GBT fits of the gbt variant, classifier and regressor alternating; half as many linear fits arrive between them (default 8)")
    p.add_argument("--arrival-mean", type=float, default=2.0, help="mean seconds between fit arrivals, Poisson (default 2)")
    p.add_argument("--max-iter", type=int, default=40, help="maxIter of every estimator; caps a GBT fit's trees (default 40)")
    p.add_argument("--rows", type=int, default=400_000, help="rows of the cached data set (default 400000)")
    p.add_argument("--features", type=int, default=40, help="features per row (default 40)")
    p.add_argument("--partitions", type=int, default=8, help="partitions of the cached data set, i.e. tasks per stage (default 8)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3, help="runs of every configuration; medians are reported (default 3)")
    p.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated configurations (default {','.join(CONFIGS)})")
    p.add_argument("--variants", default="fits,cv", help="plain fits, the CrossValidator variant and/or the GBT sweep (gbt) (default fits,cv)")
    p.add_argument("--attribution", choices=["explicit", "zero-change"], default="zero-change",
                   help="slaq/fair configs: leave fits unmodified, SLAQ makes each a job (zero-change, default) or wrap each in slaq.job(name) (explicit)")
    p.add_argument("--epoch", type=float, default=1.0, help="SLAQ epoch in seconds (default 1)")
    p.add_argument("--master", default=DEFAULT_MASTER, help=f"Spark master (default {DEFAULT_MASTER})")
    p.add_argument("--executor-memory-mb", type=int, default=DEFAULT_EXECUTOR_MEMORY_MB,
                   help=f"heap of every executor in MiB (default {DEFAULT_EXECUTOR_MEMORY_MB}; --small: Spark's 1024); a local-cluster "
                        "master's worker memory is raised to match. Every iterative spark.ml fit caches its own copy of the data while "
                        "it runs, so concurrent fits need storage memory for all the copies")
    p.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="skip the unmeasured warm-up session (the measured sweep, run once) before the repeats; --small never warms up")
    p.add_argument("--small", action="store_true",
                   help="CI size: 5 fits (gbt: 2 GBT and 1 linear) on tiny data, 6 iterations, 1 repeat, 1 GiB executors (overrides those options)")
    p.add_argument("--record-trace", metavar="PATH",
                   help="also record each variant's workload as a slaq-trace/1 JSON (.gz: gzip; -fits/-cv/-gbt added to the name for more than one) "
                        "for `slaq simulate --check` / `--project`")


def mllib_args_workload(args: argparse.Namespace) -> tuple[Workload, int, int | None]:
    """The workload, repeat count and executor memory the parsed options describe (``--small`` overrides sizes)."""
    size = dict(SMALL) if args.small else {k: getattr(args, k) for k in SMALL}
    return _sized(size, args.seed), size["repeats"], size["executor_memory_mb"]


def _sized(size: dict[str, Any], seed: int) -> Workload:
    from srlab.slaq_bench.mllib import make_workload

    return make_workload(size["fits"], size["arrival_mean"], seed, size["max_iter"], size["rows"], size["features"], size["partitions"],
                         size["gbt_fits"])


def run_from_args(args: argparse.Namespace) -> dict:
    """Run the benchmark the parsed options describe; returns its JSON-ready result."""
    from srlab.slaq_bench.mllib import bench_mllib

    work, repeats, executor_memory_mb = mllib_args_workload(args)
    return bench_mllib(work, _names(args.configs), _names(args.variants), repeats, args.master, args.epoch, args.attribution,
                       args.warmup and not args.small, executor_memory_mb, getattr(args, "record_trace", None))


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]
