"""The ``riffle`` command: benchmarks of the merge service and of merged shuffles on Spark (JSON output)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="riffle", description="Riffle shuffle merging: benchmarks and tools.")
    verbs = parser.add_subparsers(dest="verb", required=True)
    status = verbs.add_parser("status", help="health, load, queue and version of mergers",
                              description="Ask each merger daemon for its health and Status; prints a table (or --json). "
                                          "Exit code 1 when any merger is not serving.")
    status.add_argument("addresses", nargs="+", metavar="HOST:PORT")
    status.add_argument("--json", action="store_true", help="print JSON instead of a table")
    status.add_argument("--token-file", help="file holding the mergers' shared token (or set RIFFLE_MERGER_TOKEN)")
    status.add_argument("--tls-ca", help="PEM CA certificate to verify TLS mergers")
    status.add_argument("--timeout", type=float, default=2.0, help="seconds per merger (default 2)")
    bench = verbs.add_parser("bench", help="benchmarks that print JSON").add_subparsers(dest="bench", required=True)
    merge = bench.add_parser("merge", help="merge throughput vs sequential copy",
                             description="Generates Spark-format inputs, then alternates a sequential copy and a daemon merge.")
    merge.add_argument("--inputs", type=_positive_int, default=40)
    merge.add_argument("--partitions", type=_positive_int, default=2000)
    merge.add_argument("--block-kb", type=float, default=150)
    merge.add_argument("--memory", default="2g")
    merge.add_argument("--read-buffer", default="4m")
    merge.add_argument("--write-buffer", default="16m")
    merge.add_argument("--repeat", type=_positive_int, default=3)
    merge.add_argument("--dir", help="where to put the generated files (default: system temp dir)")
    load = bench.add_parser("load", help="concurrent merges under a memory budget",
                            description="Fires concurrent merges at a daemon with a small budget; reports peak RSS and queueing.")
    load.add_argument("--requests", type=_positive_int, default=64)
    load.add_argument("--memory", default="256m")
    load.add_argument("--fan-in", type=_positive_int, default=8)
    load.add_argument("--partitions", type=_positive_int, default=200)
    load.add_argument("--block-kb", type=float, default=32)
    load.add_argument("--max-queue", type=int, help="the daemon's --max-queue (default: the daemon's, 1024)")
    load.add_argument("--dir", help="where to put the generated files (default: system temp dir)")
    spark = bench.add_parser("spark", help="vanilla vs N-way merged shuffle on local-cluster Spark",
                             description="One maps x reducers DataFrame shuffle per configuration, vanilla and each N-way policy, "
                                         "with real loopback mergers; blocks fetched from Spark's read metrics.")
    spark.add_argument("--maps", type=_positive_int, default=400)
    spark.add_argument("--reducers", type=_positive_int, default=400)
    spark.add_argument("--nway", default="5,10,20", help="comma-separated N for N-way merge (default 5,10,20)")
    spark.add_argument("--best-effort", default="0.95", help="also run the largest N with these best-effort fractions (default 0.95)")
    spark.add_argument("--repeat", type=_positive_int, default=3)
    spark.add_argument("--rows-per-map", type=_positive_int, default=2000)
    spark.add_argument("--payload", type=_positive_int, default=20, help="bytes per row's string column")
    spark.add_argument("--master", default="local-cluster[2,1,1024]")
    spark.add_argument("--nodes", type=_positive_int, help="start an N-node standalone cluster on loopback (a merger per node) for the run")
    spark.add_argument("--merger-fsync", action="store_true", help="let the mergers fsync merged files (vanilla Spark does not)")
    spark.add_argument("--json", action="store_true", help="print JSON (the default and only format)")
    rep = verbs.add_parser("reproduce", help="regenerate the thesis's Fig. 4.9/4.10 on local-cluster Spark (PNG + JSON)",
                           description="Runs `bench spark` once and writes out/<figure>.png and .json (starts Spark: use the lock).")
    rep.add_argument("figure", nargs="?", choices=["fig4.9", "fig4.10"], help="figure to regenerate (default: both)")
    rep.add_argument("--small", action="store_true", help="reduced size (for CI)")
    rep.add_argument("--out", default="out", help="output directory (default out/)")
    rep.add_argument("--master", default="local-cluster[2,1,1024]")
    return parser


def _status(args: argparse.Namespace) -> int:
    import os

    from riffle.merger.node_status import probe, table

    token = os.environ.get("RIFFLE_MERGER_TOKEN") or None
    if args.token_file:
        try:
            token = open(args.token_file).read().strip()
        except OSError as exc:
            print(f"riffle: error: cannot read token file {args.token_file}: {exc.strerror}", file=sys.stderr)
            return 2
    rows = [probe(a, token, args.tls_ca, args.timeout) for a in args.addresses]
    print(json.dumps(rows, indent=2) if args.json else table(rows))
    return 0 if all(r.get("health") == "SERVING" and "error" not in r for r in rows) else 1


def _reproduce(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from riffle.reproduce import FIGURES, PAPER, SMALL, reproduce

    started = time.perf_counter()
    figures = reproduce([args.figure] if args.figure else list(FIGURES), Path(args.out), SMALL if args.small else PAPER, args.master)
    json.dump({"figures": figures, "seconds": round(time.perf_counter() - started, 2)}, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.verb == "status":
        return _status(args)
    if args.verb == "reproduce":
        return _reproduce(args)
    if args.bench == "merge":
        from riffle.bench.merge import bench_merge

        out = bench_merge(args.inputs, args.partitions, args.block_kb, args.memory, args.read_buffer, args.write_buffer,
                          args.repeat, args.dir)
    elif args.bench == "spark":
        from riffle.bench.spark_shuffle import bench_spark

        nways = [int(x) for x in args.nway.split(",") if x.strip()]
        if not nways or min(nways) < 2:
            print("riffle: error: --nway needs values >= 2", file=sys.stderr)
            return 2
        fracs = [float(x) for x in args.best_effort.split(",") if x.strip()]
        out = bench_spark(args.maps, args.reducers, nways, args.repeat, args.rows_per_map, args.payload, args.master, fracs,
                          args.merger_fsync, args.nodes)
    else:
        from riffle.bench.load import bench_load

        out = bench_load(args.requests, args.memory, args.fan_in, args.partitions, args.block_kb, workdir=args.dir,
                         max_queue=args.max_queue)
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
