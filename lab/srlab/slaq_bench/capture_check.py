"""Whether SLAQ captured every spark.ml iteration, each in the job of the fit that ran it.

Breeze logs one line per iteration after the initial point, so a fit's captured history should equal
its model's ``objectiveHistory[1:]`` (relative 1e-5: the line has 6 significant digits). Jobs and fits
are paired by content, not by name, because a zero-change fit's job name is generated inside the fit:
the pairing that explains the most values wins, so a history that lost or gained values is still
paired with the fit it came from. Pure functions over plain lists.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

RTOL = 1e-5  # breeze logs the objective with %.6g


@dataclass(frozen=True)
class CaptureCheck:
    """``lost``: iterations a fit ran that its job's history lacks (or no job holds at all);
    ``misattributed``: captured values that are not iterations of the fit their job ran.
    ``unmatched_fits``/``unmatched_jobs``: fits (jobs) with no job (fit) to pair with, by name."""

    fits: int
    iterations: int
    lost: int
    misattributed: int
    unmatched_fits: tuple[str, ...] = ()
    unmatched_jobs: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {"fits": self.fits, "iterations": self.iterations, "lost_iterations": self.lost,
                "misattributed_iterations": self.misattributed, "unmatched_fits": list(self.unmatched_fits),
                "unmatched_jobs": list(self.unmatched_jobs)}


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=1e-12)


def common_values(expected: Sequence[float], captured: Sequence[float]) -> int:
    """Length of the longest common subsequence of two loss sequences (values equal within :data:`RTOL`)."""
    previous = [0] * (len(captured) + 1)
    for e in expected:
        row = [0]
        for j, c in enumerate(captured):
            row.append(previous[j] + 1 if _same(e, c) else max(previous[j + 1], row[j]))
        previous = row
    return previous[-1]


def check_capture(expected: Mapping[str, Sequence[float]], captured: Mapping[str, Sequence[float]]) -> CaptureCheck:
    """Pairs each fit (``expected``: name -> ``objectiveHistory[1:]``) with the job (``captured``: name ->
    history) sharing the most values with it, greedily, best pairs first, and counts what differs.
    A job with no values (a fit that logs no iterations) needs no partner."""
    scores = sorted(((common_values(e, c), f, j) for f, e in expected.items() for j, c in captured.items()),
                    key=lambda s: (-s[0], s[1], s[2]))
    fit_of: dict[str, str] = {}
    job_of: dict[str, str] = {}
    for score, f, j in scores:
        if score > 0 and f not in job_of and j not in fit_of:
            job_of[f], fit_of[j] = j, f
    lost = misattributed = 0
    for f, e in expected.items():
        paired = job_of.get(f)
        common = 0 if paired is None else common_values(e, captured[paired])
        lost += len(e) - common
        if paired is not None:
            misattributed += len(captured[paired]) - common
    misattributed += sum(len(c) for j, c in captured.items() if j not in fit_of)
    return CaptureCheck(fits=len(expected), iterations=sum(len(e) for e in expected.values()), lost=lost,
                        misattributed=misattributed,
                        unmatched_fits=tuple(sorted(f for f, e in expected.items() if e and f not in job_of)),
                        unmatched_jobs=tuple(sorted(j for j, c in captured.items() if c and j not in fit_of)))
