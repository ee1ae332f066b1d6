"""The figures SLAQ reports about a job, each defined once: its normalized loss as shown (the tab, its
JSON, the charts, the metrics, the console), its time to X% of its loss reduction (the paper's "time to
90%", §6.2: the tab, the application-end summary, the simulator, the live sweep, the calibration, the
plots and the CLI), its time to the target it declared, the JSON keys they are reported under, and a
policy's change against a baseline (negative: less time).

A job has reached X% when its loss, normalized by its whole reduction (1 at its first loss, 0 at its
lowest), is at most ``1 - X``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from slaq.predict.loss_curves import MIN_FIT_POINTS

THRESHOLDS = (0.9, 0.95)
NINETY = THRESHOLDS[0]  # the headline figure: time to 90% of a job's loss reduction
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


def time_to_reduction(times: Sequence[float], losses: Sequence[float], fraction: float) -> float | None:
    """The first of ``times`` at which the loss had made ``fraction`` of the job's whole loss reduction
    (from its first loss to its lowest). ``times[i]`` is when ``losses[i]`` was reported.

    None without a time per loss, without two losses, or for a loss that never fell below its first:
    such a job reduced nothing, so it reached no share of a reduction.
    """
    at = reduction_index(losses, fraction)
    return None if at is None or len(times) != len(losses) else times[at]


def reduction_index(losses: Sequence[float], fraction: float) -> int | None:
    """The index of the first loss that had made ``fraction`` of the job's whole loss reduction (from its first loss
    to its lowest); None without two losses, or for a loss that never fell below its first."""
    if len(losses) < 2:
        return None
    first, lowest = losses[0], min(losses)
    span = first - lowest
    if span <= 0:
        return None
    return next(k for k, v in enumerate(losses) if reached((v - lowest) / span, fraction))


def seconds_to_target(start: float, reached_at: float | None) -> float | None:
    """Seconds from a job's start until it reached the target it declared (``target_loss`` or
    ``target_reduction``); None for a job without a target and for one that has not reached it."""
    return None if reached_at is None else max(reached_at - start, 0.0)


def loss_reference(losses: Sequence[float], fitted_floor: float) -> tuple[float, float]:
    """``(first, floor)``: what a job's shown normalized loss is measured against,
    ``(loss - floor) / (first - floor)`` (:func:`slaq.stats.history.normalized_loss`), 1 at its first loss.

    ``floor`` is the floor its fitted loss curve predicts (``fitted_floor``) once it has
    :data:`~slaq.predict.loss_curves.MIN_FIT_POINTS` losses. A curve through fewer says nothing about
    the floor (through two it puts every job at exactly 0.5), so until then the floor is 0, the bound of
    a loss that never goes below it (squared error, log-loss, hinge): the shown value is the loss over
    the first loss. A loss already below 0 has no such bound: its floor is then one first loss's
    magnitude below its lowest loss. The whole series of a job is drawn against its latest reference, so
    a floor that moves never makes a falling loss look like a rising one.
    """
    if not losses:
        return 1.0, 0.0
    first = float(losses[0])
    if len(losses) >= MIN_FIT_POINTS:
        return first, float(fitted_floor)
    lowest = float(min(losses))
    return first, 0.0 if lowest >= 0 else lowest - abs(first)


def mean_times(jobs: Iterable[Mapping], ndigits: int) -> dict[str, float | None]:
    """``{mean_time_to_XXpct_s: mean over jobs}`` for every threshold, skipping jobs without the figure."""
    rows = list(jobs)
    out: dict[str, float | None] = {}
    for thr in THRESHOLDS:
        values = [j[time_to_key(thr)] for j in rows if j.get(time_to_key(thr)) is not None]
        out[mean_time_to_key(thr)] = round(float(np.mean(values)), ndigits) if values else None
    return out


def change_vs(ours: Mapping, baseline: Mapping) -> dict[str, float]:
    """``ours / baseline - 1`` for mean normalized loss and every mean time to X%: negative is less time (or
    loss), the one sign every report and table of the project uses.

    Figures the baseline lacks or reports as zero are left out rather than divided by.
    """
    pairs = [("mean_normalized_loss", "mean_normalized_loss_change")]
    pairs += [(mean_time_to_key(thr), f"time_to_{pct(thr)}pct_change") for thr in THRESHOLDS]
    out = {}
    for key, name in pairs:
        if baseline.get(key) and ours.get(key) is not None:
            out[name] = round(ours[key] / baseline[key] - 1, 4)
    return out
