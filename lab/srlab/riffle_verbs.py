"""The lab's verbs of the ``riffle`` command: ``riffle bench merge|load|spark`` and ``riffle reproduce``
(registered through the ``slaq_riffle.cli`` entry point)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sparkshim.commands import emit_json, positive
from srlab.storage.options import add_storage_args


def _storage(args: argparse.Namespace, nodes: int | None) -> Any:
    """The ``--storage`` profile (None: local), checked before anything starts; a ValueError is one error line, exit 2."""
    from srlab.riffle_bench.spark_shuffle import NEEDS_NODES
    from srlab.storage.options import storage_profile

    profile = storage_profile(args)
    if profile is not None and not nodes:
        raise ValueError(NEEDS_NODES)
    return profile


def cmd_bench_merge(args: argparse.Namespace) -> int:
    from srlab.riffle_bench.merge import bench_merge

    emit_json(bench_merge(args.inputs, args.partitions, args.block_kb, args.memory, args.read_buffer, args.write_buffer,
                          args.repeat, args.dir))
    return 0


def cmd_bench_spark(args: argparse.Namespace) -> int:
    from srlab.riffle_bench.spark_shuffle import bench_spark

    nways = [int(x) for x in args.nway.split(",") if x.strip()]
    if not nways or min(nways) < 2:
        print("riffle: error: --nway needs values >= 2", file=sys.stderr)
        return 2
    fracs = [float(x) for x in args.best_effort.split(",") if x.strip()]
    emit_json(bench_spark(args.maps, args.reducers, nways, args.repeat, args.rows_per_map, args.payload, args.master, fracs,
                          args.merger_fsync, args.nodes, _storage(args, args.nodes)))
    return 0


def cmd_bench_skew(args: argparse.Namespace) -> int:
    from srlab.riffle_bench.skew import bench_skew

    emit_json(bench_skew(args.maps, args.rows_per_map, args.reducers, args.skew, args.keys, args.payload, args.advisory, args.nway,
                         args.repeat, args.master))
    return 0


def cmd_bench_load(args: argparse.Namespace) -> int:
    from srlab.riffle_bench.load import bench_load

    emit_json(bench_load(args.requests, args.memory, args.fan_in, args.partitions, args.block_kb, workdir=args.dir,
                         max_queue=args.max_queue))
    return 0


def cmd_bench_faults(args: argparse.Namespace) -> int:
    import tempfile
    from pathlib import Path

    from srlab.riffle_bench.faults import bench_faults

    storage = _storage(args, 3)
    with tempfile.TemporaryDirectory(prefix="riffle-faults-", dir=args.dir) as base:
        emit_json(bench_faults(Path(base), args.repeat, storage))
    return 0


def cmd_bench_sql(args: argparse.Namespace) -> int:
    from pathlib import Path

    from srlab.riffle_bench.tpcds import bench_tpcds, summarize_raw

    if args.from_raw:
        emit_json(summarize_raw(Path(args.from_raw)))
        return 0
    configs = tuple(c.strip() for c in args.configs.split(",") if c.strip())
    queries = [int(q) for q in args.queries.split(",") if q.strip()] if args.queries else None
    extra = dict(kv.split("=", 1) for kv in args.conf)
    storage = _storage(args, args.nodes)
    emit_json(bench_tpcds(args.scale, args.nodes, args.repeat, configs, Path(args.data_dir) if args.data_dir else None, queries, extra,
                          args.budget_minutes, Path(args.raw_out) if args.raw_out else None, storage))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from srlab.reproduce.riffle_figures import FIGURES, PAPER, SMALL, reproduce

    started = time.perf_counter()
    figures = reproduce([args.figure] if args.figure else list(FIGURES), Path(args.out), SMALL if args.small else PAPER, args.master)
    emit_json({"figures": figures, "seconds": round(time.perf_counter() - started, 2)})
    return 0


def register(parser: argparse.ArgumentParser, verbs: Any) -> None:
    """Adds the lab's verbs to ``riffle``'s sub-command ``verbs`` (called by the product's CLI)."""
    bench = verbs.add_parser("bench", help="benchmarks that print JSON").add_subparsers(dest="bench", required=True)
    merge = bench.add_parser("merge", help="merge throughput vs sequential copy",
                             description="Generates Spark-format inputs, then alternates a sequential copy and a daemon merge.")
    merge.add_argument("--inputs", type=positive(int), default=40)
    merge.add_argument("--partitions", type=positive(int), default=2000)
    merge.add_argument("--block-kb", type=float, default=150)
    merge.add_argument("--memory", default="2g")
    merge.add_argument("--read-buffer", default="4m")
    merge.add_argument("--write-buffer", default="16m")
    merge.add_argument("--repeat", type=positive(int), default=3)
    merge.add_argument("--dir", help="where to put the generated files (default: system temp dir)")
    merge.set_defaults(func=cmd_bench_merge)
    load = bench.add_parser("load", help="concurrent merges under a memory budget",
                            description="Fires concurrent merges at a daemon with a small budget; reports peak RSS and queueing.")
    load.add_argument("--requests", type=positive(int), default=64)
    load.add_argument("--memory", default="256m")
    load.add_argument("--fan-in", type=positive(int), default=8)
    load.add_argument("--partitions", type=positive(int), default=200)
    load.add_argument("--block-kb", type=float, default=32)
    load.add_argument("--max-queue", type=int, help="the daemon's --max-queue (default: the daemon's, 1024)")
    load.add_argument("--dir", help="where to put the generated files (default: system temp dir)")
    load.set_defaults(func=cmd_bench_load)
    spark = bench.add_parser("spark", help="vanilla vs N-way merged shuffle on local-cluster Spark",
                             description="One maps x reducers DataFrame shuffle per configuration, vanilla and each N-way policy, "
                                         "with real loopback mergers; blocks fetched from Spark's read metrics.")
    spark.add_argument("--maps", type=positive(int), default=400)
    spark.add_argument("--reducers", type=positive(int), default=400)
    spark.add_argument("--nway", default="5,10,20", help="comma-separated N for N-way merge (default 5,10,20)")
    spark.add_argument("--best-effort", default="0.95", help="also run the largest N with these best-effort fractions (default 0.95)")
    spark.add_argument("--repeat", type=positive(int), default=3)
    spark.add_argument("--rows-per-map", type=positive(int), default=2000)
    spark.add_argument("--payload", type=positive(int), default=20, help="bytes per row's string column")
    spark.add_argument("--master", default="local-cluster[2,1,1024]")
    spark.add_argument("--nodes", type=positive(int), help="start an N-node standalone cluster on loopback (a merger per node) for the run")
    spark.add_argument("--merger-fsync", action="store_true", help="let the mergers fsync merged files (vanilla Spark does not)")
    spark.add_argument("--json", action="store_true", help="print JSON (the default and only format)")
    add_storage_args(spark)
    spark.set_defaults(func=cmd_bench_spark)
    skew = bench.add_parser("skew", help="largest split of a skewed join under AQE, vanilla vs Riffle",
                            description="A skewed sort-merge join with AQE's skew-join splitting on local-cluster Spark and a "
                                        "loopback merger, vanilla and Riffle alternating in one session; prints the most bytes one "
                                        "join task read in each mode and their ratio (starts Spark).")
    skew.add_argument("--maps", type=positive(int), default=32)
    skew.add_argument("--rows-per-map", type=positive(int), default=20000)
    skew.add_argument("--reducers", type=positive(int), default=16)
    skew.add_argument("--skew", type=float, default=0.6, help="fraction of the big side's rows with the hot key (default 0.6)")
    skew.add_argument("--keys", type=positive(int), default=64)
    skew.add_argument("--payload", type=positive(int), default=20, help="bytes per row's string column")
    skew.add_argument("--advisory", default="1MB", help="spark.sql.adaptive.advisoryPartitionSizeInBytes (the split target)")
    skew.add_argument("--nway", type=positive(int), default=4)
    skew.add_argument("--repeat", type=positive(int), default=3)
    skew.add_argument("--master", default="local-cluster[2,1,1024]")
    skew.set_defaults(func=cmd_bench_skew)
    faults = bench.add_parser("faults", help="the fault matrix on a 3-node loopback cluster: each case's time vs undisturbed",
                              description="Starts a 3-node standalone cluster (a merger per node, token + TLS), kills a driver "
                                          "with merges in flight, then runs each fault case and undisturbed runs of the same "
                                          "job in one session (starts Spark; a small tmpfs for node 3 when run as root).")
    faults.add_argument("--repeat", type=positive(int), default=1)
    faults.add_argument("--dir", help="where the cluster's dirs go (default: system temp dir)")
    faults.add_argument("--json", action="store_true", help="print JSON (the default and only format)")
    add_storage_args(faults)
    faults.set_defaults(func=cmd_bench_faults)
    sql = bench.add_parser("sql", help="TPC-DS on a loopback cluster (token + TLS), Riffle off and on side by side",
                           description="Generates TPC-DS data (DuckDB's tpcds extension, cached as Parquet), then runs every query "
                                       "with each configuration back to back, --repeat times; medians per query and totals (starts Spark).")
    sql.add_argument("--suite", choices=["tpcds"], default="tpcds")
    sql.add_argument("--scale", type=positive(float), default=0.1, help="TPC-DS scale factor (1 = about 1 GB of raw data)")
    sql.add_argument("--nodes", type=positive(int), default=3)
    sql.add_argument("--repeat", type=positive(int), default=3)
    sql.add_argument("--configs", default="off,on", help="comma-separated among off, on (cost model), always (merge every group)")
    sql.add_argument("--queries", help="comma-separated query numbers (default: all)")
    sql.add_argument("--data-dir", help="where the generated Parquet is cached (default: <tmp>/riffle-tpcds)")
    sql.add_argument("--budget-minutes", type=positive(float), help="start no further query after this long (the report lists them)")
    sql.add_argument("--raw-out", help="write every run so far to this JSON file after each query")
    sql.add_argument("--from-raw", metavar="RAW_JSON", help="run nothing: summarize a --raw-out file (e.g. of a run cut short)")
    sql.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="an extra Spark conf (repeatable)")
    sql.add_argument("--json", action="store_true", help="print JSON (the default and only format)")
    add_storage_args(sql)
    sql.set_defaults(func=cmd_bench_sql)
    rep = verbs.add_parser("reproduce", help="regenerate the thesis's Fig. 4.9/4.10 on local-cluster Spark (PNG + JSON)",
                           description="Runs `bench spark` once and writes out/<figure>.png and .json (starts Spark).")
    rep.add_argument("figure", nargs="?", choices=["fig4.9", "fig4.10"], help="figure to regenerate (default: both)")
    rep.add_argument("--small", action="store_true", help="reduced size (for CI)")
    rep.add_argument("--out", default="out", help="output directory (default out/)")
    rep.add_argument("--master", default="local-cluster[2,1,1024]")
    rep.set_defaults(func=cmd_reproduce)
