"""The ``riffle`` and ``riffle-merger`` console scripts (pyproject.toml), run as every command runs
(:mod:`sparkshim.console`); the merger's imports no driver-side module, so it runs on a merger-only node."""

from sparkshim.console import main_of, run


def riffle() -> int:
    return run("riffle", main_of("riffle.cli"))


def riffle_merger() -> int:
    return run("riffle-merger", main_of("riffle.merger.cli"))
