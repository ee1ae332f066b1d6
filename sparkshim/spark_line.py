"""The Spark lines slaq-riffle supports, read from the one place they are declared: the package's pyspark requirement.

``pyproject.toml`` declares ``pyspark>=4.0,<4.4`` (the lines the one shim jar, compiled against the newest
of them, links and is tested on); a wheel carries it as ``Requires-Dist``. The attach-time check
(:mod:`sparkshim.bridge`) and the build read it from there (pyproject in a checkout, the installed metadata
otherwise), so widening or moving the range is one edit.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "slaq-riffle"
PACKAGE_DIR = Path(__file__).resolve().parent
_REQUIREMENT = re.compile(r"^\s*pyspark\s*(?:\[[^\]]*\])?\s*\(?\s*([^;)]*)")
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|<|>)\s*(\d+(?:\.\d+)*)\s*$")
_VERSION = re.compile(r"^\s*(\d+(?:\.\d+)*)")


def pyspark_specifier(requirements: list[str]) -> str | None:
    """The version clauses of the (first, unconditional) pyspark requirement, e.g. ``>=4.0,<4.4``."""
    for requirement in requirements:
        if ";" in requirement:  # an extra's or a platform's requirement, not the package's own
            continue
        m = _REQUIREMENT.match(requirement)
        if m and m.group(1).strip():
            return ",".join(sorted((c.strip() for c in m.group(1).split(",")), key=lambda c: c[0] != ">"))
    return None


def supported_spark(package_dir: Path = PACKAGE_DIR) -> str | None:
    """The supported Spark lines as a specifier: from ``pyproject.toml`` when ``package_dir`` lies in a
    checkout, else from the installed distribution; None when neither can be read (then nothing is checked)."""
    pyproject = package_dir.parent / "pyproject.toml"
    if pyproject.exists():
        return pyspark_specifier(tomllib.loads(pyproject.read_text()).get("project", {}).get("dependencies", []))
    try:
        return pyspark_specifier(metadata.requires(DISTRIBUTION) or [])
    except metadata.PackageNotFoundError:
        return None


def _numbers(text: str) -> tuple[int, ...] | None:
    m = _VERSION.match(text)
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def in_line(version: str, specifier: str) -> bool | None:
    """Whether Spark ``version`` (``4.3.0``, ``4.3.1-SNAPSHOT``) meets every clause of ``specifier``;
    None when either cannot be read (an unknown version, an operator other than the plain comparisons)."""
    have = _numbers(version)
    if have is None:
        return None
    for clause in specifier.split(","):
        m = _CLAUSE.match(clause)
        if m is None:
            return None
        want = tuple(int(p) for p in m.group(2).split("."))
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        ok = {">=": a >= b, "<=": a <= b, "==": a == b, "!=": a != b, "<": a < b, ">": a > b}[m.group(1)]
        if not ok:
            return False
    return True
