"""What a driver's log (its stderr, at Spark's default log4j settings) says about SLAQ and Riffle."""

from __future__ import annotations

import re

ON_LINE = re.compile(r"\b(SLAQ: on \(|Riffle: on for )")
OURS = re.compile(r"SLAQ|Riffle|io\.slaqriffle|sparkshim|brain:")


def on_lines(log: str) -> list[str]:
    """The "on" lines: one per product switched on."""
    return [line for line in log.splitlines() if ON_LINE.search(line)]


def our_warnings(log: str) -> list[str]:
    """WARN and ERROR lines from SLAQ, Riffle or the shim."""
    return [line for line in log.splitlines() if re.search(r"\b(WARN|ERROR)\b", line) and OURS.search(line)]
