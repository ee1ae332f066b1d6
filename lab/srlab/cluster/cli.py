"""``spark-cluster up|status|down``: a real Spark standalone cluster on this machine, one command each."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from sparkshim.commands import add_version
from sparkshim.console import run
from srlab.cluster.harness import Cluster, ClusterError, default_base_dir


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spark-cluster",
        description="A Spark standalone master and N worker nodes on their own loopback addresses (127.0.0.2, ...), "
                    "each with its own local dirs and Riffle merger. Everything binds inside 127.0.0.0/8.")
    add_version(parser, "spark-cluster")
    parser.add_argument("--dir", default=str(default_base_dir()),
                        help="where the cluster keeps its state, logs, secrets and node dirs (default %(default)s; "
                             "or set SLAQ_RIFFLE_CLUSTER_DIR)")
    verbs = parser.add_subparsers(dest="verb", required=True)
    up = verbs.add_parser("up", help="start the cluster and wait until every node and merger is ready")
    up.add_argument("--nodes", type=int, default=3, help="worker nodes (default %(default)s)")
    up.add_argument("--cores", type=int, default=1, help="cores each worker offers (default %(default)s)")
    up.add_argument("--memory", default="1g", help="memory each worker offers (default %(default)s)")
    up.add_argument("--tls", action="store_true", help="mergers serve TLS with a generated self-signed certificate")
    up.add_argument("--shuffle-service", action="store_true", help="run an external shuffle service on every node")
    up.add_argument("--no-fsync", action="store_true", help="mergers skip fsync (as Spark does for its own shuffle files)")
    status = verbs.add_parser("status", help="every node: worker, executors, merger health and load")
    status.add_argument("--json", action="store_true", help="print JSON instead of a table")
    verbs.add_parser("down", help="stop every process of the cluster")
    verbs.add_parser("conf", help="print the --conf flags that point a driver at this cluster")
    return parser


def _table(status: dict) -> str:
    m = status["master"]
    lines = [f"master {m['url']}  ui {m['ui']}  {'up' if m['up'] else 'DOWN'}  apps: {', '.join(m['apps']) or '-'}",
             f"{'node':<8} {'host':<11} {'worker':<8} {'executors':<10} {'merger':<22} {'health':<8} {'load':>6} {'run':>4} {'queue':>5}"]
    for n in status["nodes"]:
        mg = n["merger"]
        execs = sum(1 for e in n["executors"] if e.get("state") in (None, "RUNNING"))
        lines.append(f"{n['node']:<8} {n['host']:<11} {n['worker']['state']:<8} {execs:<10} {mg['address']:<22} "
                     f"{'SERVING' if mg['healthy'] else 'DOWN':<8} {mg.get('load', '-'):>6} {mg.get('running', '-'):>4} {mg.get('queued', '-'):>5}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    progress = logging.getLogger("srlab.cluster").info
    try:
        if args.verb == "up":
            extra = ("--no-fsync",) if args.no_fsync else ()
            cluster = Cluster.up(nodes=args.nodes, base_dir=args.dir, cores_per_node=args.cores, memory_per_node=args.memory, tls=args.tls,
                                 shuffle_service=args.shuffle_service, merger_args=extra, progress=progress)
            print(json.dumps({"master": cluster.layout.master_url, "nodes": [n.host for n in cluster.layout.nodes],
                              "driver_conf": cluster.layout.driver_conf(), "base_dir": cluster.layout.base_dir}, indent=1))
        elif args.verb == "status":
            status = Cluster.load(args.dir).status()
            print(json.dumps(status, indent=1) if args.json else _table(status))
        elif args.verb == "conf":
            conf = Cluster.load(args.dir).layout.driver_conf()
            print(" ".join(f"--conf {k}={v}" for k, v in conf.items()))
        else:
            Cluster.load(args.dir).down(progress=progress)
    except (ClusterError, ValueError) as exc:
        print(f"spark-cluster: error: {exc}", file=sys.stderr)
        return 2
    return 0


def console() -> int:
    """The ``spark-cluster`` console script: :func:`main` as every command of the package runs (sparkshim.console)."""
    return run("spark-cluster", main)


if __name__ == "__main__":
    sys.exit(main())
