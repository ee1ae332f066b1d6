"""What the ``slaq``, ``riffle`` and ``slaq-riffle`` commands share: ``--version`` and ``-v``, how a verb runs
(logging, SIGTERM, bad input), JSON output, argument checks, and the lab's verbs."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any

from sparkshim import driver_log
from sparkshim.version import package_version
from sparkshim.wording import number_text

LAB_ENTRY_POINTS = "slaq_riffle.cli"  # the lab (lab/pyproject.toml) registers one function per command here
LAB_VERBS = ("bench", "reproduce")  # verbs only the lab provides, named in the error when it is absent
PROGRESS_LOGGERS = ("srlab",)  # the lab's benchmarks and reproductions run for minutes: their progress shows without -v
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def add_version(parser: argparse.ArgumentParser, prog: str) -> None:
    parser.add_argument("--version", action="version", version=f"{prog} {package_version()}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens to stderr (the progress of "
                        "benchmarks and reproductions is logged without it)")


def run_verb(args: argparse.Namespace, prog: str) -> int:
    """Runs a parsed verb the way every command does. Log lines go to stderr, so stdout stays the verb's JSON or
    table. SIGTERM unwinds like Ctrl-C, so what the verb started (a cluster, mergers, a Spark session) is stopped
    by its own cleanup instead of being orphaned. Bad input is one ``prog: error:`` line and exit code 2."""
    logging.basicConfig(level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
                        format=LOG_FORMAT, stream=sys.stderr)
    driver_log.keep_local()  # a Spark session a verb starts would print each line a second time
    for name in PROGRESS_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        return int(args.func(args))
    except (ValueError, FileNotFoundError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # the shell's convention for "terminated by signal N"


def positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type: ``kind(text)`` that must be > 0."""

    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def in_range(kind: Callable[[str], Any], low: float, high: float) -> Callable[[str], Any]:
    """An argparse type: ``kind(text)`` in ``low..high`` (argparse names the option in front of the error)."""

    def parse(text: str) -> Any:
        value = kind(text)
        if not low <= value <= high:  # also refuses NaN
            raise argparse.ArgumentTypeError(f"must be in {number_text(low)}..{number_text(high)}, got {text}")
        return value

    return parse


def emit_json(payload: Any) -> None:
    json.dump(payload, sys.stdout, indent=2, default=float)
    sys.stdout.write("\n")


def add_lab_verbs(parser: argparse.ArgumentParser, verbs: Any, command: str, lab_verbs: tuple[str, ...] = LAB_VERBS) -> None:
    """Let the lab add its verbs to ``command`` (``slaq``, ``riffle`` or ``slaq-riffle``); without the lab, its
    ``lab_verbs`` still parse and say where they live instead of argparse's bare "invalid choice"."""
    for entry in metadata.entry_points(group=LAB_ENTRY_POINTS, name=command):
        try:
            register = entry.load()
        except ImportError:  # a lab registered in this environment but not importable here: as if absent
            continue
        register(parser, verbs)
    for verb in lab_verbs:
        if verb not in verbs.choices:
            stub = verbs.add_parser(verb, help="(from a clone of the repository: the project's lab)", description=lab_missing(command, verb))
            stub.add_argument("rest", nargs=argparse.REMAINDER, metavar="...", help="the lab's arguments")
            stub.set_defaults(func=_lab_missing(command, verb, stub))


def lab_missing(command: str, verb: str) -> str:
    """What a verb of the lab says where the lab is not installed: what it is and how to get it."""
    return (f"'{command} {verb}' is part of the project's lab (benchmarks and reproductions), which the installed package "
            f"does not ship; it runs from a clone of the repository: `bash scripts/setup.sh` there installs the lab, then "
            f"`.venv/bin/{command} {verb} --help`")


def _lab_missing(command: str, verb: str, stub: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        if {"-h", "--help"} & set(args.rest):  # `slaq bench predict --help`: the lab's verbs have --help, so has this
            stub.print_help()
            return 0
        print(f"{command}: error: {lab_missing(command, verb)}", file=sys.stderr)
        return 2

    return run
