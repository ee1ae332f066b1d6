"""A spark.ml fit's forecast before its own losses can carry one: the prior.

A spark.ml fit spends most of its first seconds on data passes before its first loss, and a curve
needs :data:`~slaq.predict.loss_curves.MIN_FIT_POINTS` losses. Until then the fit's estimator and
params are known, and so are the fits of the same estimator this application already ran or is
running (a CrossValidator fits every candidate on every fold). The prior predicts the fit's
normalized loss curve, its iterations and its cost per iteration from, strongest first:

1. fits with the same estimator and params (the same candidate on other folds),
2. fits of the same estimator with other params (the other candidates),
3. the estimator's default from its params (:func:`default_prior`: ``maxIter``, the solver).

Blending (:func:`prior_forecast`): the prior is worth ``strength`` observations (:data:`STRENGTH`),
the fit's own short-history curve (what SLAQ reads without a prior) one per own reduction. The prior
is placed in the fit's units by its first loss and a span (first minus final loss) blended from the
prior's relative span and the one the own reductions imply against the prior's shape, and its
prediction after the latest loss is blended with the own curve's in the same ratio
(:func:`own_weight`); the policy reads both curve families fitted over the own losses and that blend.
From :data:`PRIOR_UNTIL` own losses on, the fit's own curve
(:func:`~slaq.predict.forecast.job_forecast`) takes over alone. Pure: no Spark, no clock.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from slaq.predict.forecast import JobForecast, predicted_floor
from slaq.predict.loss_curves import EXPONENTIAL, MIN_FIT_POINTS, Curve, fit_exponential, fit_loss_curve, fit_sublinear
from slaq.predict.runtime import estimate_runtime
from slaq.stats.history import JobHistory

PRIOR_UNTIL = MIN_FIT_POINTS  # own losses from which the fit's own curve takes over
SAME_PARAMS, SAME_ESTIMATOR, ESTIMATOR_DEFAULT = "same params", "same estimator", "estimator default"
# Observations each source is worth against the fit's own reductions. Measured on recorded spark.ml
# fits (docs/benchmarks.md, `slaq bench predict`): other folds of the same params predict a held-out
# fold's remaining curve to ~2% of its span where the fit's own 3-loss curve errs by ~30%; the
# estimator default is no better than that curve once it exists, so it only stands in before it.
STRENGTH = {SAME_PARAMS: 16.0, SAME_ESTIMATOR: 8.0, ESTIMATOR_DEFAULT: 0.0}
DEFAULT_LEFT = 0.01  # estimator default: the share of the span left at the expected last iteration
MAX_ITER_DEFAULT = 100  # spark.ml's maxIter default for the iterative estimators
# Iterations after its first captured loss an estimator took to converge at spark.ml's default tol on
# the ``slaq bench mllib`` sweep's data (the sparkml_traces fixture, median over grid entries and folds;
# the MLP ran to maxIter). A fit stops earlier when its maxIter says so. AFTSurvivalRegression is not in
# the sweep (a guess, as UNKNOWN_ITERATIONS is for unlisted estimators).
TYPICAL_ITERATIONS = {"LogisticRegression": 10, "LinearRegression": 5, "LinearSVC": 32,
                      "MultilayerPerceptronClassifier": MAX_ITER_DEFAULT, "AFTSurvivalRegression": 20}
UNKNOWN_ITERATIONS = 20
FLAT_TAIL = 0.5  # the prior curve stays at its end for this share of its iterations: the fit stops there
FINISHED_KEPT = 256  # finished fits a book remembers


@dataclass(frozen=True)
class FitKey:
    """What identifies "the same fit" across folds: the estimator class and its explicitly set params."""

    estimator: str
    params: tuple[tuple[str, str], ...]

    def param(self, name: str) -> str | None:
        return dict(self.params).get(name)


def _text(value: object) -> str:
    """One spelling per value whether it came from pyspark (Python values) or Spark Connect (proto text)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"{float(value):.12g}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_text(v) for v in value) + "]"
    if isinstance(value, str):
        try:
            return _text(float(value))
        except ValueError:
            return value
    return type(value).__name__


def fit_key(estimator: str, params: Mapping[str, object]) -> FitKey:
    return FitKey(estimator, tuple(sorted((k, _text(v)) for k, v in params.items())))


@dataclass(frozen=True)
class Reference:
    """One fit of the application the prior learns from: its captured losses, its cost per
    iteration, and whether it ended (its last loss is then its final one)."""

    key: FitKey
    losses: tuple[float, ...]
    cost: float | None
    finished: bool


def reference(key: FitKey, history: JobHistory, finished: bool) -> Reference:
    cost, _ = estimate_runtime(list(history.core_seconds), window=50)
    return Reference(key, tuple(history.losses), cost, finished)


class PriorBook:
    """The application's finished fits (bounded, oldest dropped): what later fits learn from."""

    def __init__(self, kept: int = FINISHED_KEPT):
        self._finished: deque[Reference] = deque(maxlen=kept)
        self._lock = threading.Lock()

    def record(self, key: FitKey, history: JobHistory) -> None:
        """A fit ended; one that reported fewer than two losses has no curve to teach."""
        if len(history.losses) >= 2:
            with self._lock:
                self._finished.append(reference(key, history, finished=True))

    def finished(self) -> list[Reference]:
        with self._lock:
            return list(self._finished)


@dataclass(frozen=True)
class Prior:
    """A fit's predicted curve before its own losses carry one.

    ``shape[k]``: the normalized loss after captured iteration ``k`` (1 at the first captured loss, 0
    at the final one). ``relative_span``: (first - final) / |first| of the references, which places
    the shape in the fit's units once its first loss is known (None: unknown).
    """

    shape: tuple[float, ...]
    iterations: float
    cost: float | None
    relative_span: float | None
    strength: float
    source: str


def default_prior(key: FitKey) -> Prior:
    """The estimator's default: ``min(maxIter, typical)`` iterations, geometric reductions down to
    :data:`DEFAULT_LEFT` of the span; a closed-form LinearRegression ("normal" solver) takes one."""
    max_iter = key.param("maxIter")
    limit = (float(max_iter) if max_iter is not None else MAX_ITER_DEFAULT) - 1  # maxIter losses: maxIter - 1 after the first
    n = min(limit, TYPICAL_ITERATIONS.get(key.estimator, UNKNOWN_ITERATIONS))
    if key.estimator == "LinearRegression" and key.param("solver") == "normal":
        n = 1
    n = max(int(round(n)), 1)
    ratio = DEFAULT_LEFT ** (1.0 / n)
    shape = tuple(float(ratio**k) for k in range(n)) + (0.0,)
    return Prior(_normalize(np.asarray(shape)), float(n), None, None, STRENGTH[ESTIMATOR_DEFAULT], ESTIMATOR_DEFAULT)


def _normalize(y: np.ndarray) -> tuple[float, ...]:
    span = float(y[0] - y[-1])
    if span <= 0:
        return (1.0, 0.0)
    return tuple(float(v) for v in np.minimum.accumulate(np.clip((y - y[-1]) / span, 0.0, 1.0)))


def _normalized(ref: Reference) -> tuple[np.ndarray, bool] | None:
    """A reference's losses on the 1-to-0 scale: by its final loss if it ended, else by its curve's
    predicted floor, which takes :data:`MIN_FIT_POINTS` losses (a running fit with fewer teaches
    nothing: traced live, a prior from a reference with 2-3 losses predicted the next fit of its
    estimator to gain ~0 and held it at the minimum share until the reference's 4th loss).
    Returns the values and whether the last one is the end."""
    y = np.asarray(ref.losses, dtype=float)
    if y.size < (2 if ref.finished else MIN_FIT_POINTS):
        return None
    if ref.finished:
        return np.asarray(_normalize(y)), True
    scale = max(float(np.max(y[:-1] - y[1:])), 0.0) or 1.0
    floor = predicted_floor(fit_loss_curve(y), list(y), scale)
    span = float(y[0] - floor)
    if span <= 0:
        return None
    return np.clip((y - floor) / span, 0.0, 1.0), False


def build_prior(key: FitKey, references: Iterable[Reference]) -> Prior:
    """The prior of a fit of ``key`` from the application's other fits (finished or running)."""
    refs = [r for r in references if r.key.estimator == key.estimator]
    same = [r for r in refs if r.key == key]
    for source, group in ((SAME_PARAMS, same), (SAME_ESTIMATOR, refs)):
        curves = [(r, n) for r in group if (n := _normalized(r)) is not None]
        if curves:
            return _pooled(curves, source, key)
    fallback = default_prior(key)
    costs = [r.cost for r in refs if r.cost is not None]
    return fallback if not costs else Prior(fallback.shape, fallback.iterations, float(np.median(costs)), None,
                                            fallback.strength, fallback.source)


def _pooled(curves: list[tuple[Reference, tuple[np.ndarray, bool]]], source: str, key: FitKey) -> Prior:
    """Pointwise median of the references' normalized curves; a finished one stays at 0 after its end."""
    ended = [len(z) - 1 for _, (z, done) in curves if done]
    seen = max(len(z) - 1 for _, (z, _) in curves)
    iterations = float(np.median(ended)) if ended else max(float(seen), default_prior(key).iterations)
    length = int(round(iterations)) + 1
    shape = []
    for k in range(length):
        at = [float(z[k]) if k < len(z) else 0.0 for _, (z, done) in curves if k < len(z) or done]
        if not at:
            break
        shape.append(float(np.median(at)))
    if len(shape) < 2 or shape[0] <= shape[-1]:
        shape = list(default_prior(key).shape)
    costs = [r.cost for r, _ in curves if r.cost is not None]
    spans = [(r.losses[0] - r.losses[-1]) / abs(r.losses[0]) for r, (_, done) in curves
             if done and r.losses[0] != 0 and r.losses[0] > r.losses[-1]]
    return Prior(_normalize(np.asarray(shape)), iterations, float(np.median(costs)) if costs else None,
                 float(np.median(spans)) if spans else None, STRENGTH[source], source)


def _own(losses: Sequence[float]) -> Curve | None:
    """The fit's own short-history curve: what SLAQ reads without a prior."""
    return fit_loss_curve(list(losses)) if len(losses) >= 2 else None


def own_weight(prior: Prior, losses: Sequence[float]) -> float:
    """How much the fit's own curve counts against the prior: own reductions : (own reductions + worth)."""
    reductions = max(len(losses) - 1, 0)
    return reductions / (reductions + prior.strength) if reductions else 0.0


def placed(prior: Prior, losses: Sequence[float]) -> tuple[float, float]:
    """``(first, span)``: where the prior's 1 and 0 sit in the fit's units given its own ``losses``.

    The span blends the prior's (its relative span times |first loss|) with the one the fit's own
    reductions imply against the prior's shape (least squares), by :func:`own_weight`. Before any
    loss the fit is on the prior's own scale (first 1, span 1); with one loss and no relative span
    known, on a span of |first loss| (the policy's gains are ratios of reductions: the span cancels)."""
    if not losses:
        return 1.0, 1.0
    first = float(losses[0])
    size = abs(first) if first != 0 else 1.0
    prior_span = prior.relative_span * size if prior.relative_span else None
    shape = np.asarray(prior.shape)
    n = min(len(losses), len(shape))
    own = None
    if n >= 2:
        drops = -np.diff(np.asarray(losses[:n], dtype=float))
        shape_drops = -np.diff(shape[:n])
        denom = float(shape_drops @ shape_drops)
        if denom > 0:
            own = float(drops @ shape_drops) / denom
    if own is not None and own > 0:
        w = own_weight(prior, losses)
        span = own if prior_span is None else w * own + (1 - w) * prior_span
    else:
        span = prior_span if prior_span is not None else size
    return first, max(span, 1e-12)


def prior_curve(prior: Prior, losses: Sequence[float]) -> Curve:
    """The curve the policy reads: the placed prior continued from the latest own loss, blended with
    the fit's own short-history curve by :func:`own_weight`, then both curve families fitted over the
    own losses and that blend (uniform weights), anchored on the latest own loss."""
    first, span = placed(prior, losses)
    shape = np.asarray(prior.shape)
    n = len(losses)
    tail_end = max(len(shape) + max(int(math.ceil(FLAT_TAIL * (len(shape) - 1))), 2), n + 3)
    z = np.concatenate([shape, np.zeros(tail_end - len(shape))])
    predicted = first - span + span * z
    last = float(losses[-1]) if losses else 1.0
    k_last = float(max(n - 1, 0))
    start = max(n, 1)
    future = np.minimum(predicted[start:] + (last - predicted[start - 1]), last)  # continues from the latest loss
    own = _own(losses)
    k_future = np.arange(start, tail_end, dtype=float)
    if own is not None:
        w = own_weight(prior, losses)
        if w >= 1.0:  # a prior worth nothing (the estimator default) once the fit has its own curve
            return own
        future = w * np.minimum(own(k_future), last) + (1 - w) * future
    y = np.concatenate([np.asarray(losses, dtype=float) if losses else np.asarray([1.0]), future])
    k = np.arange(y.size, dtype=float)
    w8 = np.ones(y.size)
    fits = [f for f in (fit_sublinear(k, y, w8), fit_exponential(k, y, w8)) if f is not None]
    if not fits:
        return Curve(EXPONENTIAL, (-1.0, math.log(max(span, 1e-12)), last - span, 0.0))
    _, best = min(fits, key=lambda f: f[0])
    shift = last - float(best(k_last))
    a, b, c, d = best.p
    return Curve(best.family, (a, b, c, d + shift) if best.family != EXPONENTIAL else (a, b, c + shift, d))


def prior_forecast(job_id: str, history: JobHistory, prior: Prior, weight: float = 1.0, cap: float = math.inf,
                   order: float = 0.0) -> JobForecast:
    """What the policy reads about a fit with fewer than :data:`PRIOR_UNTIL` own losses.

    Before any loss the fit sits at 1 on the prior's scale; after, in its own units. The scale (the
    largest single-iteration reduction) is the prior's, placed, or the fit's own if larger; the cost
    per iteration is the fit's own once measured, else the prior's (its references' median)."""
    losses = list(history.losses)  # a snapshot: the job's thread may append meanwhile
    first, span = placed(prior, losses)
    curve = prior_curve(prior, losses)
    shape = np.asarray(prior.shape)
    scale = max(span * float(np.max(shape[:-1] - shape[1:])), history.max_reduction, 1e-12)
    now = losses[-1] if losses else 1.0
    floor = min(first - span, min(losses) if losses else 1.0)
    own_cost, overhead = estimate_runtime(history.core_seconds, history.wall_seconds, history.cores)
    cost = own_cost if own_cost is not None else prior.cost
    return JobForecast(job_id, curve, float(max(len(losses) - 1, 0)), now, first, scale, floor, cost, overhead, weight, cap, order)


def uses_prior(key: FitKey | None, history: JobHistory) -> bool:
    return key is not None and len(history.losses) < PRIOR_UNTIL
