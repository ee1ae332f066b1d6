"""The ``riffle`` command: ``riffle status`` of the merger daemons, ``riffle storage`` of a node's disk,
``riffle simulate`` of merging on a cluster by the merge cost model.

From a clone, the lab (``lab/``, not in the wheel) adds ``bench`` and ``reproduce`` verbs through the
``slaq_riffle.cli`` entry point group.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sparkshim.commands import add_lab_verbs, add_version, run_verb
from sparkshim.wording import counted

if TYPE_CHECKING:
    from riffle.driver.simulate import Prediction


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="riffle", description="Riffle shuffle merging: merger status (and, from a clone, benchmarks).")
    add_version(parser, "riffle")
    verbs = parser.add_subparsers(dest="verb", required=True)
    status = verbs.add_parser("status", help="health, load, queue and version of mergers",
                              description="Ask each merger daemon for its health and Status; prints a table (or --json). "
                                          "Exit code 1 when any merger is not serving.")
    status.add_argument("addresses", nargs="+", metavar="HOST:PORT")
    status.add_argument("--json", action="store_true", help="print JSON instead of a table")
    status.add_argument("--token-file", help="file holding the mergers' shared token (or set RIFFLE_MERGER_TOKEN)")
    status.add_argument("--tls-ca", help="PEM CA certificate to verify TLS mergers")
    status.add_argument("--timeout", type=float, default=2.0, help="seconds per merger (default 2)")
    status.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                        help="ask again until every merger serves, for up to SECONDS (a script that has just started one)")
    status.set_defaults(func=_status)
    storage = verbs.add_parser("storage", help="measure a node's storage for the merge cost model (spark.riffle.cost.*)",
                               description="Writes, reads and re-reads a small file in DIR (a node's shuffle dir) once; prints the "
                                           "measured time per request and bandwidth, and the spark.riffle.cost.* values they suggest.")
    storage.add_argument("dir", metavar="DIR")
    storage.set_defaults(func=_storage)
    _add_simulate(verbs)
    add_lab_verbs(parser, verbs, "riffle")
    return parser


def _status(args: argparse.Namespace) -> int:
    import os

    from riffle.merger.node_status import probe, table
    from riffle.merger.tokens import token_refusal
    from sparkshim.safe_read import FileRefused, read_config_file, read_config_text

    try:
        token = read_config_text(args.token_file, "--token-file") if args.token_file else os.environ.get("RIFFLE_MERGER_TOKEN") or None
        ca = read_config_file(args.tls_ca, "--tls-ca") if args.tls_ca else None
    except FileRefused as exc:
        print(f"riffle: error: {exc}", file=sys.stderr)
        return 2
    if token and (refusal := token_refusal(token)) is not None:
        print(f"riffle: error: {f'--token-file={args.token_file}' if args.token_file else 'RIFFLE_MERGER_TOKEN'}: {refusal}", file=sys.stderr)
        return 2
    deadline = time.monotonic() + args.wait
    while True:
        rows = [probe(a, token, ca, args.timeout) for a in args.addresses]
        serving = all(r.get("health") == "SERVING" and "error" not in r for r in rows)
        if serving or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    print(json.dumps(rows, indent=2) if args.json else table(rows))
    return 0 if serving else 1


def _storage(args: argparse.Namespace) -> int:
    from riffle.driver.cost import CostConfig, node_storage_cost
    from riffle.storage_cost import NodeStorage, probe

    measured = probe(args.dir)
    # priced as the driver prices a node whose merger measured this: a request costs at least Spark's own fetch path
    request = node_storage_cost(CostConfig(), NodeStorage(measured.request_seconds, 1 / measured.byte_seconds)).request_seconds
    print(json.dumps({"dir": args.dir, "request_seconds": measured.request_seconds, "bytes_per_second": round(1 / measured.byte_seconds),
                      "conf": {"spark.riffle.cost.requestTime": f"{request * 1e3:.3f}ms",
                               "spark.riffle.cost.bandwidth": f"{max(int(1 / measured.byte_seconds) >> 20, 1)}m"}}, indent=2))
    return 0


def _add_simulate(verbs: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from riffle.driver.simulate import PROFILES, SCOPES
    from riffle.units import parse_size
    from sparkshim.commands import positive

    sim = verbs.add_parser(
        "simulate", help="predict blocks fetched, read and job time with and without merging on a given cluster",
        description="The merge cost model (spark.riffle.cost.*) at scale: for a cluster, a shuffle and an N-way fan-in, the "
                    "blocks fetched, shuffle I/O requests, read, merge and job time with and without merging, and their ratios. "
                    "--check compares the model with the thesis's published figures and this project's measured runs.",
        epilog="storage profiles: " + "; ".join(f"{p.name}: {p.source}" for p in PROFILES.values()))
    sim.add_argument("--executors", type=positive(int), help="executors")
    sim.add_argument("--maps", type=positive(int), help="map tasks (shuffle outputs)")
    sim.add_argument("--reducers", type=positive(int), help="reduce tasks")
    sim.add_argument("--bytes", type=parse_size, help="the shuffle's total bytes, e.g. 3t, 100g")
    sim.add_argument("--fan-in", type=positive(int), default=20, help="N of the N-way merge (default 20, spark.riffle.nway)")
    sim.add_argument("--storage", choices=sorted(PROFILES), default="hdd", help="storage profile (default hdd)")
    sim.add_argument("--request-seconds", type=positive(float), help="override the profile's time per request (see `riffle storage`)")
    sim.add_argument("--bandwidth", type=parse_size, help="override the profile's bytes per second, e.g. 150m")
    sim.add_argument("--merge-seconds", type=positive(float), help="override the fixed time per merge (default 0.0075)")
    sim.add_argument("--merge-input-seconds", type=positive(float), help="override the time per output merged (default 0.0028)")
    sim.add_argument("--buffer", type=parse_size, help="the merger's I/O buffer (default 4m)")
    sim.add_argument("--cores", type=positive(int), default=1, help="task slots per executor (default 1)")
    sim.add_argument("--executors-per-node", type=positive(int), default=1, help="executors per node (one merger each; default 1)")
    sim.add_argument("--disks", type=positive(int), help="storage devices serving requests at once (default: one per task slot)")
    sim.add_argument("--concurrent-merges", type=positive(int), help="merges running at once, cluster-wide (default: one per disk)")
    sim.add_argument("--task-seconds", type=float, default=0.0, help="a task's time besides its shuffle I/O (default 0)")
    sim.add_argument("--scope", choices=SCOPES, default="executor",
                     help="what one merge may combine: one executor's outputs (this driver; default), a node's, or any")
    sim.add_argument("--cost-model", action="store_true", help="leave groups the cost model finds not worth merging alone")
    sim.add_argument("--check", action="store_true", help="compare the model with the published figures and measured runs; "
                                                          "exit 1 if a published or measured figure falls outside its range")
    sim.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sim.set_defaults(func=_simulate, parser=sim)


def _simulate(args: argparse.Namespace) -> int:
    from dataclasses import asdict, replace

    from riffle.driver import simulate, simulate_checks
    from sparkshim.commands import emit_json

    if args.check:
        published, measured = simulate_checks.published_checks(), simulate_checks.measured_checks()
        checks = published + measured
        if args.json:
            emit_json({"published": [asdict(c) | {"ok": c.ok} for c in published],
                       "measured": [asdict(c) | {"ok": c.ok} for c in measured],
                       "calibration": [asdict(r) for r in simulate_checks.calibration()]})
        else:
            print(simulate_checks.markdown())
        return 0 if all(c.ok for c in checks) else 1
    missing = [f"--{name}" for name in ("executors", "maps", "reducers", "bytes") if getattr(args, name) is None]
    if missing:
        args.parser.error(f"{', '.join(missing)} required (or --check)")
    if args.fan_in < 2:
        args.parser.error(f"--fan-in must be >= 2, got {args.fan_in}")
    if args.task_seconds < 0:
        args.parser.error(f"--task-seconds must be >= 0, got {args.task_seconds}")
    storage = simulate.PROFILES[args.storage].storage
    overrides = {"request_seconds": args.request_seconds, "merge_seconds": args.merge_seconds,
                 "input_seconds": args.merge_input_seconds, "buffer_bytes": args.buffer,
                 "byte_seconds": 1 / args.bandwidth if args.bandwidth else None}
    storage = replace(storage, **{k: v for k, v in overrides.items() if v is not None})
    cluster = simulate.Cluster(args.executors, args.maps, args.reducers, args.bytes, cores=args.cores,
                               executors_per_node=args.executors_per_node, disks=args.disks,
                               concurrent_merges=args.concurrent_merges, task_seconds=args.task_seconds, scope=args.scope)
    p = simulate.predict(cluster, args.fan_in, storage, args.storage, cost_model=args.cost_model)
    if args.json:
        emit_json(p.as_dict())
    else:
        print(_simulation_table(p))
    return 0


def _simulation_table(p: Prediction) -> str:
    v, m, r = p.vanilla, p.merged, p.ratios
    rows = [("blocks fetched", f"{v.blocks_fetched:,}", f"{m.blocks_fetched:,}", f"{r['blocks_fetched']:.2f}× fewer"),
            ("merges (their I/O requests)", "0", f"{m.merges:,} ({m.merge_requests:,})", ""),
            ("shuffle I/O requests", f"{v.requests:,}", f"{m.requests:,}", f"{r['requests']:.2f}× fewer"),
            ("read time (reduce stage)", f"{v.read_seconds:,.2f} s", f"{m.read_seconds:,.2f} s", f"{r['read_time']:.2f}× faster"),
            ("merge time (map stage)", "0", f"{m.merge_seconds:,.2f} s", ""),
            ("map stage", f"{v.map_seconds:,.2f} s", f"{m.map_seconds:,.2f} s", ""),
            ("reduce stage", f"{v.reduce_seconds:,.2f} s", f"{m.reduce_seconds:,.2f} s", f"{r['reduce_speedup']:.2f}× faster"),
            ("job", f"{v.job_seconds:,.2f} s", f"{m.job_seconds:,.2f} s", f"{r['job_faster_pct']:.1f}% faster" if r["job_time"] <= 1
             else f"{-r['job_faster_pct']:.1f}% slower")]
    head = (f"{p.profile} storage: {p.storage.request_seconds * 1e3:g} ms per request, {1 / p.storage.byte_seconds / 1e6:,.0f} MB/s, "
            f"{p.storage.merge_seconds * 1e3:g} ms per merge + {p.storage.input_seconds * 1e3:g} ms per output; "
            f"N={p.fan_in}, scope {p.cluster.scope}"
            + (f"; {counted(p.groups_skipped, 'group', f'{p.groups_skipped:,}')} not worth merging" if p.groups_skipped else ""))
    widths = [max(len(row[i]) for row in rows + [("", "vanilla", f"{p.fan_in}-way merged", "")]) for i in range(4)]
    lines = [head, "  ".join(h.ljust(w) for h, w in zip(("", "vanilla", f"{p.fan_in}-way merged", "ratio"), widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    return run_verb(build_parser().parse_args(argv), "riffle")


if __name__ == "__main__":
    sys.exit(main())
