"""The quality metrics every SLAQ comparison reports, defined once: time to X% of a job's loss
reduction, the JSON keys they are reported under, and a policy's reduction relative to a baseline.

A job has reached X% when its normalized loss (1 at its first loss, 0 at its last) is at most
``1 - X``. The simulator, the live sweep, the calibration, the plots and the CLI all use these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

THRESHOLDS = (0.9, 0.95)
_EPS = 1e-12


def pct(threshold: float) -> int:
    """0.9 -> 90."""
    return int(threshold * 100)


def time_to_key(threshold: float) -> str:
    """Per-job key: seconds from arrival until ``threshold`` of the loss reduction, e.g. ``time_to_90pct_s``."""
    return f"time_to_{pct(threshold)}pct_s"


def mean_time_to_key(threshold: float) -> str:
    """Per-policy key: the mean of :func:`time_to_key` over jobs, e.g. ``mean_time_to_90pct_s``."""
    return "mean_" + time_to_key(threshold)


def reached(normalized_loss: float, threshold: float) -> bool:
    """Whether a normalized loss covers ``threshold`` of the job's total reduction."""
    return normalized_loss <= 1 - threshold + _EPS


def time_to_threshold(times: Sequence[float], losses: Sequence[float], threshold: float) -> float | None:
    """The first of ``times`` at which the loss (normalized by its first and last value) reached ``threshold``.

    ``times[i]`` is when ``losses[i]`` was reported. None without two losses; a job whose loss never
    fell counts as done at its first report.
    """
    if len(losses) < 2 or not times:
        return None
    first, last = losses[0], losses[-1]
    span = first - last
    for t, v in zip(times, losses):
        if span <= 0 or reached((v - last) / span, threshold):
            return t
    return times[-1]


def mean_times(jobs: Iterable[Mapping], ndigits: int) -> dict[str, float | None]:
    """``{mean_time_to_XXpct_s: mean over jobs}`` for every threshold, skipping jobs without the figure."""
    rows = list(jobs)
    out: dict[str, float | None] = {}
    for thr in THRESHOLDS:
        values = [j[time_to_key(thr)] for j in rows if j.get(time_to_key(thr)) is not None]
        out[mean_time_to_key(thr)] = round(float(np.mean(values)), ndigits) if values else None
    return out


def reduction_vs(ours: Mapping, baseline: Mapping) -> dict[str, float]:
    """``1 - ours / baseline`` for mean normalized loss and every mean time to X% (positive: ours is better).

    Figures the baseline lacks or reports as zero are left out rather than divided by.
    """
    pairs = [("mean_normalized_loss", "mean_normalized_loss_reduction")]
    pairs += [(mean_time_to_key(thr), f"time_to_{pct(thr)}pct_reduction") for thr in THRESHOLDS]
    out = {}
    for key, name in pairs:
        if baseline.get(key) and ours.get(key) is not None:
            out[name] = round(1 - ours[key] / baseline[key], 4)
    return out
