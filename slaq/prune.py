"""Pruning of hopeless CrossValidator candidates (``spark.slaq.prune``, off by default).

A CrossValidator fits every candidate (param map) on every fold; a candidate's cross-validated metric
is the mean of its folds' metrics. Once a candidate has finished folds, it can be compared with the
candidates that finished as many: a hopeless one's next fits are not started, and a fit of it that
is running is stopped (when and on which evidence: :mod:`slaq.prune_grid`; the Spark side:
:mod:`slaq.prune_cv`). Every model CrossValidator evaluates, and the refit of the best candidate, is
a complete fit: a stopped fit's model is never scored.

The rule (:func:`hopeless`), over the folds a set of candidates all finished: scores are the metrics
oriented so that larger is better. The *leader* is the candidate with the best mean over the finished
folds. For every other candidate, ``d_f`` is the leader's score minus its score on fold ``f`` (paired:
both were fitted and evaluated on the same split). Its predicted final gap, after all ``k`` folds, is
the mean ``m`` of its ``n`` finished ``d_f``, with the uncertainty of the ``k - n`` folds still to come
(each ``d`` drawn around an unknown mean estimated by ``m``)::

    sd(final gap) = sigma * sqrt((k - n) + (k - n)**2 / n) / k

``sigma`` is the spread of the paired differences, pooled over the candidates (sample standard
deviation, from 2 finished folds on), never below :data:`SIGMA_FLOOR` of the leader's mean metric:
after one fold there is no spread to measure, and a few folds measure it poorly. The candidate is
pruned when ``m > Z * sd(final gap)``: the leader's final metric is predicted to beat it with about
97.7% confidence (one-sided normal). The leader is never pruned, so the best candidate is always
one that ran every fold.

A pruned candidate's ``avgMetrics`` entry is the worst value there is (``-inf`` when the evaluator's
larger metric is better, ``+inf`` otherwise), so CrossValidator's own choice of the best never picks
it and a reader sees it was not evaluated in full; its ``stdMetrics`` entry is NaN and its sub-models
of the folds it skipped are None. TrainValidationSplit has one split, so no evidence before a
candidate's only fit: it is not pruned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Z = 2.0  # one-sided normal quantile: ~97.7% confidence that the leader's final metric beats the pruned one's
SIGMA_FLOOR = 0.01  # the fold-to-fold spread assumed at least, relative to the leader's mean metric
ABS_FLOOR = 1e-9  # ... and in the metric's units, for a leader whose metric is ~0


@dataclass(frozen=True)
class Pruned:
    """A candidate stopped before fold ``after_folds``: its mean metric over those folds, the leader's."""

    candidate: int
    after_folds: int
    mean: float
    leader: int
    leader_mean: float


# (tuner uid, the candidates pruned before one fold) -> None: how the runtime marks them (log line, UI tab)
OnPrune = Callable[[str, list[Pruned]], None]


def hopeless(metrics: Sequence[Sequence[float]], alive: Sequence[int], folds: int, larger_better: bool) -> list[Pruned]:
    """The candidates among ``alive`` to stop before the next fold, by the rule in the module docstring.

    ``metrics[f][j]``: candidate ``j``'s metric on finished fold ``f`` (every alive candidate ran every
    finished fold); ``folds``: the tuner's number of folds. Pure."""
    n = len(metrics)
    if n == 0 or n >= folds or len(alive) < 2:
        return []
    sign = 1.0 if larger_better else -1.0
    scores = {j: np.array([sign * float(metrics[f][j]) for f in range(n)]) for j in alive}
    means = {j: float(s.mean()) for j, s in scores.items() if np.all(np.isfinite(s))}
    if len(means) < 2:
        return []
    leader = max(means, key=lambda j: (means[j], -j))  # ties: the first candidate, as CrossValidator's argmax
    diffs = {j: scores[leader] - scores[j] for j in means if j != leader}
    spread = float(np.sqrt(np.mean([np.var(d, ddof=1) for d in diffs.values()]))) if n >= 2 else 0.0
    sigma = max(spread, SIGMA_FLOOR * abs(means[leader]), ABS_FLOOR)
    left = folds - n
    sd_final = sigma * math.sqrt(left + left * left / n) / folds
    return [Pruned(j, n, sign * means[j], leader, sign * means[leader])
            for j, d in sorted(diffs.items()) if float(d.mean()) > Z * sd_final]


def worst(larger_better: bool) -> float:
    """A pruned candidate's ``avgMetrics`` entry: never the best, whichever way the metric points."""
    return -math.inf if larger_better else math.inf
