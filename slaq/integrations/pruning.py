"""Pruning of hopeless CrossValidator candidates (``spark.slaq.prune``, off by default).

A CrossValidator fits every candidate (param map) on fold 0, then every candidate on fold 1, and so
on; a candidate's cross-validated metric is the mean of its folds' metrics. Between two folds every
candidate's finished folds are known, which is the one point where a candidate can be stopped
cheaply and safely in unmodified Spark: its remaining fits are simply not started. A fit is never
cut short, so every model CrossValidator evaluates, and the refit of the best candidate, is a
complete fit.

The rule (:func:`hopeless`), applied before each fold after the first: scores are the metrics
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

The rule treats the folds as exchangeable: each fold's gap a draw around the final one. CrossValidator's
own random folds are; the user's own folds (``foldCol``) need not be (one fold may hold another season,
region or customer group than the next), so a fold that favours another candidate would prune the true
best. A CrossValidator with ``foldCol`` is therefore never pruned (:func:`not_prunable`): it runs
pyspark's own fit. When candidates were pruned, one line at the end names the chosen candidate and the
pruned ones (:func:`chosen_among_pruned`), so the choice is never silently made among fewer candidates.

A pruned candidate's ``avgMetrics`` entry is the worst value there is (``-inf`` when the evaluator's
larger metric is better, ``+inf`` otherwise), so CrossValidator's own choice of the best never picks
it and a reader sees it was not evaluated in full; its ``stdMetrics`` entry is NaN and its sub-models
of the folds it skipped are None. TrainValidationSplit has one split, so no point between a
candidate's fits: it is not pruned.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.pool import ThreadPool
from typing import Any

import numpy as np

from slaq.integrations.pyspark_private import tuning_helpers

log = logging.getLogger("slaq.prune")

Z = 2.0  # one-sided normal quantile: ~97.7% confidence that the leader's final metric beats the pruned one's
CONFIDENCE = 0.5 * (1.0 + math.erf(Z / math.sqrt(2.0)))
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


def not_prunable(cv: Any) -> str | None:
    """Why ``cv``'s candidates are never pruned (it runs pyspark's own fit), or None when they may be: the
    user's own folds (``foldCol``) need not be alike, so the rule's prediction from the first folds does not hold."""
    col = cv.getFoldCol() if hasattr(cv, "getFoldCol") else ""
    return f"it uses the user's own folds (foldCol={col}), which need not be alike" if col else None


def chosen_among_pruned(uid: str, best: int, epm: Sequence[Any], pruned: dict[int, Pruned], folds: int) -> str | None:
    """The line that says ``uid`` chose ``best`` among candidates some of which were pruned; None when none were."""
    if not pruned:
        return None
    stopped = ", ".join(f"candidate {j} after {p.after_folds} of {folds} folds" for j, p in sorted(pruned.items()))
    return (f"SLAQ: {uid} chose candidate {best} ({_params(epm[best])}) among {len(epm)} candidates, "
            f"{len(pruned)} of them pruned ({stopped}); "
            "stock CrossValidator, which fits every fold, chooses another only if a pruned candidate's remaining folds "
            f"overturned the prediction it was pruned on (its final metric behind the leader's, ~{CONFIDENCE:.1%} confident)")


def worst(larger_better: bool) -> float:
    """A pruned candidate's ``avgMetrics`` entry: never the best, whichever way the metric points."""
    return -math.inf if larger_better else math.inf


def cross_validate(cv: Any, dataset: Any, on_prune: OnPrune | None = None) -> Any:
    """pyspark's ``CrossValidator._fit`` with :func:`hopeless` candidates' remaining folds skipped.

    Same folds, same fits, same evaluation and the same refit of the best as pyspark's own (the
    structure follows it line by line); only the candidates a fold fits differ."""
    from pyspark import inheritable_thread_target
    from pyspark.ml.tuning import CrossValidatorModel

    helpers = tuning_helpers()
    if isinstance(helpers, str):  # tuning.install checked this already; a direct caller gets the same sentence
        raise RuntimeError(f"cannot prune: {helpers}")
    est = cv.getOrDefault(cv.estimator)
    epm = cv.getOrDefault(cv.estimatorParamMaps)
    n_models = len(epm)
    eva = cv.getOrDefault(cv.evaluator)
    n_folds = cv.getOrDefault(cv.numFolds)
    larger_better = eva.isLargerBetter()
    metrics_all: list[list[float]] = []
    alive = list(range(n_models))
    pruned: dict[int, Pruned] = {}

    pool = ThreadPool(processes=min(cv.getParallelism(), n_models))
    collect = cv.getCollectSubModels()
    sub_models: list[list[Any]] | None = [[None] * n_models for _ in range(n_folds)] if collect else None
    datasets = helpers.k_fold(cv, dataset)
    try:
        for i in range(n_folds):
            stopped = hopeless(metrics_all, alive, n_folds, larger_better)
            if stopped:
                pruned.update((p.candidate, p) for p in stopped)
                alive = [j for j in alive if j not in pruned]
                _report(cv.uid, stopped, n_folds, epm)
                if on_prune is not None:
                    on_prune(cv.uid, stopped)
            fold = [math.nan] * n_models
            with helpers.cache_dataset(datasets[i][0]) as train, helpers.cache_dataset(datasets[i][1]) as validation:
                maps = [epm[j] for j in alive]
                tasks = map(inheritable_thread_target(dataset.sparkSession),
                            helpers.parallel_fit_tasks(est, train, eva, validation, maps, collect))
                for k, metric, model in pool.imap_unordered(lambda f: f(), tasks):
                    fold[alive[k]] = metric
                    if sub_models is not None:
                        sub_models[i][alive[k]] = model
            metrics_all.append(fold)
    finally:
        pool.close()

    avg = [float(np.mean([m[j] for m in metrics_all])) if j not in pruned else worst(larger_better) for j in range(n_models)]
    std = [float(np.std([m[j] for m in metrics_all])) if j not in pruned else math.nan for j in range(n_models)]
    best = int(np.argmax(avg) if larger_better else np.argmin(avg))
    line = chosen_among_pruned(cv.uid, best, epm, pruned, n_folds)
    if line is not None:
        log.info("%s", line)
    best_model = est.fit(dataset, epm[best])
    return cv._copyValues(CrossValidatorModel(best_model, avg, sub_models, std))


def _params(param_map: Any) -> str:
    return ", ".join(f"{param.name}={value}" for param, value in param_map.items())


def _report(uid: str, stopped: list[Pruned], folds: int, epm: Sequence[Any]) -> None:
    for p in stopped:
        params = _params(epm[p.candidate])
        log.info("SLAQ: %s pruned candidate %d (%s) after %d of %d folds: mean metric %.6g, best candidate %d's %.6g; "
                 "its remaining folds are not fitted", uid, p.candidate, params, p.after_folds, folds, p.mean, p.leader,
                 p.leader_mean)
