"""The ``riffle`` command: ``riffle status`` of the merger daemons, ``riffle storage`` of a node's disk.

From a clone, the lab (``lab/``, not in the wheel) adds ``bench`` and ``reproduce`` verbs through the
``slaq_riffle.cli`` entry point group.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from sparkshim.commands import add_lab_verbs, add_version


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
    status.set_defaults(func=_status)
    storage = verbs.add_parser("storage", help="measure a node's storage for the merge cost model (spark.riffle.cost.*)",
                               description="Writes, reads and re-reads a small file in DIR (a node's shuffle dir) once; prints the "
                                           "measured time per request and bandwidth, and the spark.riffle.cost.* values they suggest.")
    storage.add_argument("dir", metavar="DIR")
    storage.set_defaults(func=_storage)
    add_lab_verbs(parser, verbs, "riffle")
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


def _storage(args: argparse.Namespace) -> int:
    from riffle.driver.cost import StorageCost, probe

    measured, default = probe(args.dir), StorageCost()
    # A reducer's fetch of a block costs at least the storage's request, plus Spark's own fetch path (in the default).
    request = max(measured.request_seconds, default.request_seconds)
    print(json.dumps({"dir": args.dir, "request_seconds": measured.request_seconds, "bytes_per_second": round(1 / measured.byte_seconds),
                      "conf": {"spark.riffle.cost.requestTime": f"{request * 1e3:.3f}ms",
                               "spark.riffle.cost.bandwidth": f"{max(int(1 / measured.byte_seconds) >> 20, 1)}m"}}, indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
