"""The ``slaq`` console script (pyproject.toml): :mod:`slaq.cli` run as every command runs (:mod:`sparkshim.console`).
Imports only the standard library here, so a missing dependency is one line, not a traceback."""

from sparkshim.console import main_of, run


def slaq() -> int:
    return run("slaq", main_of("slaq.cli"))
