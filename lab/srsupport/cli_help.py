"""Every verb of a console script asked for ``--help``, as a user finds them: the verbs a help page lists under
its usage line (argparse's ``{a,b,c} ...``), then each of theirs.

Standard library only, so that a fresh environment holding just the wheel runs it as a file:
``python -P lab/srsupport/cli_help.py DISTRIBUTION`` prints one JSON object per help page of every console
script of that installed distribution (the tests read them; a checkout's tests call :func:`walk` directly).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import metadata

SUBCOMMANDS = re.compile(r"\{([\w,-]+)\} \.\.\.")  # how argparse shows a subparsers action in a usage line


@dataclass(frozen=True)
class HelpPage:
    argv: list[str]  # the script's name, the verbs, --help
    code: int
    out: str
    err: str


def ask(prog: str, entry: Callable[[], object], args: list[str]) -> HelpPage:
    """Runs a console script's entry (no arguments, as its generated script does) with ``sys.argv`` ``prog args``."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = [prog, *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = entry()
            except SystemExit as exc:
                code = exc.code
    finally:
        sys.argv = saved
    return HelpPage([prog, *args], code if isinstance(code, int) else (0 if code is None else 1), out.getvalue(), err.getvalue())


def walk(prog: str, entry: Callable[[], object]) -> list[HelpPage]:
    """The help page of ``prog`` and of every verb under it, breadth first."""
    pages: list[HelpPage] = []
    todo: list[list[str]] = [[]]
    while todo:
        verbs = todo.pop(0)
        page = ask(prog, entry, [*verbs, "--help"])
        pages.append(page)
        usage = page.out.split("\n\n", 1)[0] if page.code == 0 else ""
        for found in SUBCOMMANDS.findall(usage):
            todo += [[*verbs, verb] for verb in found.split(",")]
    return pages


def console_scripts(distribution: str) -> dict[str, Callable[[], Callable[[], object]]]:
    """The installed distribution's console scripts, by name: each a loader of its entry."""
    entries = metadata.distribution(distribution).entry_points
    return {e.name: e.load for e in entries if e.group == "console_scripts"}


def main() -> int:
    for prog, load in sorted(console_scripts(sys.argv[1]).items()):
        try:
            entry = load()
        except ImportError as exc:
            print(json.dumps(asdict(HelpPage([prog], -1, "", f"cannot import its entry: {exc}"))))
            continue
        for page in walk(prog, entry):
            print(json.dumps(asdict(page)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
