"""What the ``slaq`` and ``riffle`` commands share: ``--version``, JSON output, argument checks, and the lab's verbs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any

from riffle.version import package_version

LAB_ENTRY_POINTS = "slaq_riffle.cli"  # the lab (lab/pyproject.toml) registers one function per command here
LAB_VERBS = ("bench", "reproduce")  # verbs only the lab provides, named in the error when it is absent


def add_version(parser: argparse.ArgumentParser, prog: str) -> None:
    parser.add_argument("--version", action="version", version=f"{prog} {package_version()}")


def positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type: ``kind(text)`` that must be > 0."""

    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
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
            stub = verbs.add_parser(verb, help="(from a clone of the repository: the project's lab)", add_help=False)
            stub.add_argument("rest", nargs=argparse.REMAINDER)
            stub.set_defaults(func=_lab_missing(command, verb))


def _lab_missing(command: str, verb: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        print(f"{command}: error: '{command} {verb}' is part of the project's lab (benchmarks and reproductions), which the "
              "installed package does not ship; run it from a clone of the repository after `bash scripts/setup.sh`", file=sys.stderr)
        return 2

    return run
