#!/usr/bin/env python
"""Riffle's demo: a shuffle of many small blocks on an embedded local-cluster Spark with local merger
daemons, run without and with Riffle (N-way merge) in one session, compared on blocks fetched
(Spark's own read metrics), reduce-stage time and job time.

    python lab/demos/shuffle_heavy.py            # human-readable comparison
    python lab/demos/shuffle_heavy.py --json
"""

from __future__ import annotations

import argparse
import json
import sys

from srlab.riffle_bench.spark_shuffle import bench_spark


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--maps", type=int, default=200, help="map tasks (default 200)")
    p.add_argument("--reducers", type=int, default=200, help="reduce partitions (default 200)")
    p.add_argument("--nway", type=int, default=20, help="N of the N-way merge (default 20)")
    p.add_argument("--repeat", type=int, default=3, help="runs per configuration; medians are reported (default 3)")
    p.add_argument("--master", default="local-cluster[2,1,1024]")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    if args.maps < 1 or args.reducers < 1 or args.nway < 2 or args.repeat < 1:
        p.error("--maps, --reducers and --repeat must be >= 1 and --nway >= 2")
    out = bench_spark(args.maps, args.reducers, [args.nway], args.repeat, master=args.master)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    for name, c in out["configs"].items():
        print(f"{name:>10}: {c['blocks_fetched']:>7} blocks fetched, reduce stage {c['reduce_stage_seconds']:.2f} s, "
              f"job {c['job_seconds']:.2f} s" + (f", reducers held {c['hold_seconds']:.2f} s for merges" if c["hold_seconds"] is not None else ""))
    merged = out["configs"][f"nway-{args.nway}"]
    print(f"Riffle N={args.nway}: {merged['blocks_fetched_reduction_x']}x fewer blocks fetched, reduce stage "
          f"{merged['reduce_stage_speedup_x']}x as fast, job time {merged['job_time_ratio']}x vanilla")
    return 0


if __name__ == "__main__":
    sys.exit(main())
