"""``riffle-merger``: run the merger daemon on a node."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from riffle.merger.addresses import address_error, is_loopback
from riffle.merger.tokens import token_refusal
from riffle.storage_cost import BANDWIDTH_RANGE, SECONDS_RANGE
from riffle.units import format_size, parse_size
from riffle.version import package_version
from sparkshim.conf import ConfReader
from sparkshim.safe_read import read_config_text
from sparkshim.wording import counted, number_text


class JsonFormatter(logging.Formatter):
    """One JSON object per line: structured logs for collectors."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"ts": round(record.created, 3), "level": record.levelname, "logger": record.name, "msg": record.getMessage()}
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def negative_values(args: Sequence[str]) -> list[str]:
    """``--flag -5g`` as ``--flag=-5g``: argparse takes ``-5g`` (unlike ``-5``) for an option and answers "expected one
    argument", where the value's own range error naming the flag is the useful answer. No flag starts with a digit."""
    out: list[str] = []
    for arg in args:
        if out and NEGATIVE.match(arg) and out[-1].startswith("--") and "=" not in out[-1] and out[-1] != "--":
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


NEGATIVE = re.compile(r"^-\.?\d")


class OneLineParser(argparse.ArgumentParser):
    """A flag argparse refuses is one line and exit code 2 too, like every other start-up refusal (``--help`` shows usage);
    a value that looks negative is the flag's value (:func:`negative_values`)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"riffle-merger: error: {message}\n")

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:  # type: ignore[override]
        return super().parse_known_args(negative_values(sys.argv[1:] if args is None else args), namespace)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="riffle-merger", description="Riffle shuffle merger daemon (one per node).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    verbs = parser.add_subparsers(dest="verb", required=True)
    serve = verbs.add_parser("serve", help="run the daemon", description="Serve the riffle.v1.Merger gRPC API.")
    serve.add_argument("--listen", default="127.0.0.1:7338", help="HOST:PORT to bind (default loopback only: %(default)s)")
    serve.add_argument("--local-dir", action="append", required=True, metavar="DIR",
                       help="a root the daemon may read and write under (Spark's spark.local.dir); repeatable")
    serve.add_argument("--memory", type=parse_size, default=parse_size("2g"), help="buffer memory budget (default 2g)")
    serve.add_argument("--read-buffer", type=parse_size, default=parse_size("4m"), help="per-input read buffer (default 4m)")
    serve.add_argument("--write-buffer", type=parse_size, default=parse_size("16m"), help="output write buffer (default 16m)")
    serve.add_argument("--max-queue", type=int, default=1024, help="merges that may wait for admission before new ones are refused at once (default 1024)")
    serve.add_argument("--max-queue-memory", type=parse_size, default=parse_size("32m"),
                       help="memory waiting merges' requests may hold before new ones are refused at once (default 32m)")
    serve.add_argument("--token-file", help="file (mode 0600) holding a shared secret; clients must send 'authorization: Bearer "
                                            "<secret>' (or set RIFFLE_MERGER_TOKEN)")
    serve.add_argument("--tls-cert", help="PEM certificate chain; enables TLS")
    serve.add_argument("--tls-key", help="PEM private key for --tls-cert")
    serve.add_argument("--insecure", action="store_true",
                       help="allow a non-loopback --listen without a token, or a token without TLS (default: refuse to start)")
    serve.add_argument("--workers", type=int, default=8, help="merges that run at once, each in its own thread (default 8)")
    serve.add_argument("--state-dir", help="where the daemon records the merged files it wrote, per application "
                                           "(default: .riffle-merger in the first --local-dir)")
    serve.add_argument("--prune-interval", type=float, default=3600.0, metavar="SECONDS",
                       help="how often the daemon forgets merged files that are gone, e.g. removed with their "
                            "application's dirs (default %(default)s)")
    serve.add_argument("--app-lease", type=float, default=600.0, metavar="SECONDS",
                       help="delete the merged files of an application whose driver sent nothing (no merge, no keep-alive) "
                            "for this long: it died without cleaning up (default %(default)s; drivers renew every "
                            "lease / 3, at most every 60 s)")
    serve.add_argument("--max-apps", type=int, default=65536, metavar="N",
                       help="leases held for applications with no merged files here; one more is refused until some lapse "
                            "(applications with merged files here are always renewed; default %(default)s)")
    serve.add_argument("--metrics-listen", metavar="HOST:PORT", help="serve Prometheus metrics over HTTP here (default off)")
    serve.add_argument("--fsync", action=argparse.BooleanOptionalAction, default=True,
                       help="fsync merged files before they are reported (default on; --no-fsync matches Spark, which never "
                            "fsyncs shuffle files: a merged file lost in a crash is recomputed like any lost map output)")
    serve.add_argument("--storage-request-time", metavar="DURATION",
                       help="the node's storage time per read request, for the driver's merge cost model: e.g. 8ms for spinning "
                            "disks (default: measured once at start)")
    serve.add_argument("--storage-bandwidth", metavar="SIZE", help="the node's storage bytes per second, e.g. 150m (default: "
                                                                    "measured once at start)")
    serve.add_argument("--storage-probe", action=argparse.BooleanOptionalAction, default=True,
                       help="measure the storage figures not given above once at start, in at most half a second (default on; "
                            "--no-storage-probe reports them unknown, and the driver prices merges here with its spark.riffle.cost.*)")
    serve.add_argument("--grace", type=float, default=10.0, help="seconds running merges get to finish on SIGTERM; the process exits within this plus 5 s")
    serve.add_argument("--log-format", choices=["json", "text"], default="json")
    serve.add_argument("--log-level", default="INFO", type=str.upper, choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


class StartupError(Exception):
    """A start-up refusal: printed as one line, exit code 2."""


MIN_MEMORY = 1 << 20      # below this not even a two-input merge with the smallest buffers fits
MAX_MEMORY = 1 << 40      # a budget past this is a typo (99999t), not a machine
MIN_BUFFER = 4 << 10
MAX_WORKERS = 1024
MAX_QUEUE = 1 << 20
MAX_SECONDS = 7 * 24 * 3600.0
MAX_APPS = 1 << 24


def check_address(flag: str, address: str) -> None:
    """``HOST:PORT`` with a port of ASCII digits in 0..65535, 0 for any free one (gRPC would quietly bind a random port for 99999)."""
    if (error := address_error(address, low=0)) is not None:
        raise StartupError(f"{flag} {error}, got {address!r}")


def _size_text(size: int) -> str:
    """``size`` for a message: :func:`format_size`'s unit when it has one (``4m``), else counted bytes (``1 byte``)."""
    text = format_size(size)
    return counted(size, "byte") if text.isdigit() else text


def _in_range(flag: str, value: float, low: float, high: float, shown: str = "", text: Callable[[Any], str] = number_text) -> None:
    if not low <= value <= high:  # also refuses NaN
        raise StartupError(f"{flag} must be in {text(low)}..{text(high)}{shown}, got {text(value)}")


def check_ranges(args: argparse.Namespace) -> None:
    """Every start-up value in its range, before anything is opened: one clear line per refusal."""
    check_address("--listen", args.listen)
    if args.metrics_listen:
        check_address("--metrics-listen", args.metrics_listen)
    _in_range("--memory", args.memory, MIN_MEMORY, MAX_MEMORY, text=_size_text)
    for flag, size in (("--read-buffer", args.read_buffer), ("--write-buffer", args.write_buffer)):
        if not MIN_BUFFER <= size <= args.memory:
            raise StartupError(f"{flag} must be between {format_size(MIN_BUFFER)} and --memory ({_size_text(args.memory)}), got {_size_text(size)}")
    _in_range("--workers", args.workers, 1, MAX_WORKERS)
    _in_range("--max-queue", args.max_queue, 0, MAX_QUEUE)
    _in_range("--max-queue-memory", args.max_queue_memory, MIN_MEMORY, MAX_MEMORY, text=_size_text)
    _in_range("--grace", args.grace, 0, MAX_SECONDS, " seconds")
    _in_range("--prune-interval", args.prune_interval, 0.1, MAX_SECONDS, " seconds")
    _in_range("--app-lease", args.app_lease, 1, MAX_SECONDS, " seconds")
    _in_range("--max-apps", args.max_apps, 1, MAX_APPS)


def storage_flags(args: argparse.Namespace) -> tuple[float | None, float | None]:
    """``--storage-request-time`` and ``--storage-bandwidth`` (None when not given), read like the driver's
    ``spark.riffle.cost.requestTime`` and ``.bandwidth``, in the same ranges."""
    flags = ConfReader({"--storage-request-time": args.storage_request_time, "--storage-bandwidth": args.storage_bandwidth}.get, "--")
    request = flags.seconds("storage-request-time", 0.0, *SECONDS_RANGE) if args.storage_request_time is not None else None
    bandwidth = flags.size("storage-bandwidth", 0, parse_size, *BANDWIDTH_RANGE, format_size, "bytes per second such as 150m") \
        if args.storage_bandwidth is not None else None
    return request, bandwidth


def check_exposure(listen: str, token: str | None, tls: bool, insecure: bool) -> None:
    """Secure by default: off loopback the daemon needs a token, and a token needs TLS, unless --insecure."""
    if insecure or is_loopback(listen):
        return
    if not token:
        raise StartupError(f"refusing to listen on {listen} without a token: anyone on the network could merge and delete "
                           "files; give --token-file (with --tls-cert/--tls-key), or --insecure to accept that")
    if not tls:
        raise StartupError(f"refusing to accept the token in cleartext on {listen}: give --tls-cert and --tls-key, "
                           "or --insecure to accept that")


def build_daemon(args: argparse.Namespace, environ: Mapping[str, str] = os.environ, owns_process: bool = True):
    """The daemon ``serve`` with these arguments runs (every start-up refusal raised here), reading the token and the
    fault injection from ``environ``; ``owns_process=False`` embeds it in a process that is not its own (tests)."""
    from riffle.merger.config import Config
    from riffle.merger.faults import Faults
    from riffle.merger.server import MergerDaemon, ServerOptions

    check_ranges(args)
    storage_request, storage_bandwidth = storage_flags(args)
    token = (read_config_text(args.token_file, "--token-file", private=True) if args.token_file
             else environ.get("RIFFLE_MERGER_TOKEN") or None)
    if token and (refusal := token_refusal(token)) is not None:
        raise StartupError(f"{f'--token-file={args.token_file}' if args.token_file else 'RIFFLE_MERGER_TOKEN'}: {refusal}")
    check_exposure(args.listen, token, bool(args.tls_cert), args.insecure)
    if args.metrics_listen and not args.insecure and not is_loopback(args.metrics_listen):
        raise StartupError(f"refusing to serve metrics on {args.metrics_listen} off loopback: the endpoint has neither "
                           "TLS nor authentication; keep it on loopback (scrape through a local agent), or --insecure "
                           "to accept that")
    return MergerDaemon(ServerOptions(
        listen=args.listen, local_dirs=tuple(args.local_dir),
        config=Config(read_buffer=args.read_buffer, write_buffer=args.write_buffer, memory=args.memory, max_queue=args.max_queue,
                      max_queue_memory=args.max_queue_memory,
                      fsync=args.fsync, merge_threads=args.workers, faults=Faults.from_env(environ),
                      app_lease=args.app_lease, max_apps=args.max_apps, storage_request_seconds=storage_request,
                      storage_bytes_per_second=storage_bandwidth, storage_probe=args.storage_probe),
        token=token, tls_cert=args.tls_cert, tls_key=args.tls_key, grace_seconds=args.grace, state_dir=args.state_dir,
        metrics_listen=args.metrics_listen, prune_interval=args.prune_interval, owns_process=owns_process))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if args.log_format == "json" else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=args.log_level.upper(), handlers=[handler])
    log = logging.getLogger("riffle.merger")
    try:
        daemon = build_daemon(args)
    except Exception as exc:  # every start-up failure is one line and exit code 2, never a traceback
        message = str(exc) if isinstance(exc, StartupError | ValueError) else f"{type(exc).__name__}: {exc}"
        print(f"riffle-merger: error: {message}", file=sys.stderr)
        return 2
    from riffle.merger.server import ListenError

    started = time.monotonic()
    try:
        daemon.serve_forever()
    except ListenError as exc:
        print(f"riffle-merger: error: {exc}", file=sys.stderr)
        return 2
    log.info("uptime %.1fs", time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
