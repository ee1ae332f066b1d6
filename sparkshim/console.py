"""How every console script runs (each product's own entry calls :func:`run`: ``slaq.console``,
``riffle.console``, this module's ``slaq-riffle``, the lab's ``spark-cluster``).

Each runs its command's ``main`` through :func:`run`, so that every command ends the same way where a plain
``main`` would end in a traceback: a reader that went away (``slaq simulate | head``) ends it quietly, and a
dependency the install lacks (``slaq`` on a merger-only node, installed without numpy or pyspark) is one line
naming the install it needs. Imports nothing but the standard library: a merger-only node runs it too.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable
from importlib import metadata

from sparkshim.version import DISTRIBUTION

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader went away
EXIT_INCOMPLETE_INSTALL = 2


def run(prog: str, main: Callable[[], int]) -> int:
    """``main()``'s exit code, or :data:`EXIT_BROKEN_PIPE` when stdout's reader closed it, or
    :data:`EXIT_INCOMPLETE_INSTALL` (one line on stderr) when a dependency of the package is not installed."""
    try:
        try:
            return main()
        finally:
            sys.stdout.flush()  # what is still buffered fails here, where it is caught, not at the interpreter's exit
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the interpreter's last flush writes nowhere
        return EXIT_BROKEN_PIPE
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in dependencies():
            raise  # one of the package's own modules: a bug, not an install to complete
        print(f"{prog}: error: {missing} is not installed here, and `{prog}` needs {DISTRIBUTION}'s full install "
              f"(the wheel with its dependencies: pip install {DISTRIBUTION.replace('-', '_')}-*.whl); a merger-only "
              "install runs riffle-merger and riffle only", file=sys.stderr)
        return EXIT_INCOMPLETE_INSTALL


def dependencies() -> set[str]:
    """The import names of the package's own (not an extra's) requirements that match their distribution's name
    (numpy, scipy, pyspark, py4j, prometheus_client); empty when the package is not installed."""
    try:
        requirements = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return set()
    names = (re.match(r"[A-Za-z0-9._-]+", r) for r in requirements if "extra ==" not in r)
    return {m.group(0).lower().replace("-", "_") for m in names if m}


def main_of(module: str) -> Callable[[], int]:
    """The ``main`` of ``module``, imported when called (inside :func:`run`: the import may need what is missing)."""
    return lambda: int(importlib.import_module(module).main())


def slaq_riffle() -> int:
    return run("slaq-riffle", main_of("sparkshim.cli"))
