"""Loss prediction by weighted curve fitting (SLAQ paper §4.2.2).

Two families cover the optimizers SLAQ schedules:

* sublinear (first-order methods, O(1/k)):   f(k) = 1 / (a k^2 + b k + c) + d
* linear / superlinear (L-BFGS, boosting):    f(k) = mu^(k - b) + c

Recent iterations matter most for the near future, so each point gets a weight that decays
exponentially with its age. Both families are fitted by variable projection: for a fixed asymptote
(``d`` or ``c``) the model is linear in the remaining parameters after a transform, so the fit is a
bounded 1-D search over the asymptote with a weighted linear least-squares solve inside. That is
fast (sub-millisecond), has no divergent starting points, and always yields a curve that decreases
towards its asymptote.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

SUBLINEAR = 0
EXPONENTIAL = 1
LINEAR = 2  # the strawman: last reduction repeated
FAMILY_NAMES = {SUBLINEAR: "sublinear", EXPONENTIAL: "exponential", LINEAR: "strawman"}

DEFAULT_DECAY = 0.8
MIN_FIT_POINTS = 4
# What the 1-D search sees for an asymptote no curve of the family fits: worse than any fit, but finite, because
# Brent's parabolic step subtracts objective values (inf - inf is NaN, and scipy warns about it).
INFEASIBLE_SSE = 1e100


@dataclass(frozen=True)
class Curve:
    """A fitted loss curve ``f(k)``; ``k`` is the iteration index of the loss history.

    ``p`` holds the family's parameters: sublinear ``(a, b, c, d)``, exponential
    ``(alpha, beta, c, 0)`` meaning ``exp(alpha k + beta) + c``, strawman ``(y_last, slope, k_last, 0)``.
    """

    family: int
    p: tuple[float, float, float, float]

    def __call__(self, k: np.ndarray | float) -> np.ndarray:
        return evaluate(np.full(np.shape(k), self.family), np.asarray(self.p, float), np.asarray(k, float))

    @property
    def floor(self) -> float:
        """The loss the curve converges to (-inf for the strawman, which never stops falling)."""
        if self.family == SUBLINEAR:
            return self.p[3]
        if self.family == EXPONENTIAL:
            return self.p[2]
        return -math.inf if self.p[1] > 0 else self.p[0]

    @property
    def name(self) -> str:
        return FAMILY_NAMES[self.family]


def evaluate(family: np.ndarray, params: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Vectorized ``f(k)`` for many curves at once; ``params`` has shape ``family.shape + (4,)``."""
    p0, p1, p2, p3 = (params[..., i] for i in range(4))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        sub = 1.0 / (p0 * k * k + p1 * k + p2) + p3
        exp = np.exp(np.minimum(p0 * k + p1, 700.0)) + p2
        lin = p0 - p1 * (k - p2)
    return np.where(family == SUBLINEAR, sub, np.where(family == EXPONENTIAL, exp, lin))


def decay_weights(n: int, decay: float = DEFAULT_DECAY) -> np.ndarray:
    """Weight ``decay**age`` for each of ``n`` points, newest last."""
    return decay ** np.arange(n - 1, -1, -1, dtype=float)


def strawman(losses: np.ndarray | list[float]) -> Curve:
    """Repeat the last observed reduction forever (the paper's baseline predictor)."""
    y = np.asarray(losses, dtype=float)
    if y.size == 0:
        return Curve(LINEAR, (0.0, 0.0, 0.0, 0.0))
    slope = float(y[-2] - y[-1]) if y.size >= 2 else 0.0
    return Curve(LINEAR, (float(y[-1]), slope, float(y.size - 1), 0.0))


def geometric(losses: np.ndarray | list[float], default_ratio: float = 0.5, max_ratio: float = 0.95) -> Curve:
    """Short-history fallback: reductions shrink by the ratio of the last two reductions.

    With a single reduction the ratio is ``default_ratio``. The total future reduction is capped at
    the last loss when no loss seen is negative. Degenerates to a flat strawman when the loss is
    not falling.
    """
    y = np.asarray(losses, dtype=float)
    if y.size < 2 or y[-2] - y[-1] <= 0:
        return strawman(y) if y.size < 2 else Curve(LINEAR, (float(y[-1]), 0.0, float(y.size - 1), 0.0))
    last = float(y[-2] - y[-1])
    ratio = default_ratio
    if y.size >= 3 and y[-3] - y[-2] > 0:
        ratio = float(np.clip(last / (y[-3] - y[-2]), 0.05, max_ratio))
    remaining = last * ratio / (1 - ratio)
    if y.min() >= 0:
        remaining = min(remaining, float(y[-1]))
    k_last = float(y.size - 1)
    alpha = math.log(ratio)
    if remaining <= 0:
        return Curve(LINEAR, (float(y[-1]), 0.0, k_last, 0.0))
    return Curve(EXPONENTIAL, (alpha, math.log(remaining) - alpha * k_last, float(y[-1]) - remaining, 0.0))


def _weighted_lstsq(design: np.ndarray, target: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
    root = np.sqrt(weights)
    try:
        coef, *_ = np.linalg.lstsq(design * root[:, None], target * root, rcond=None)
    except np.linalg.LinAlgError:
        return None
    return coef if np.all(np.isfinite(coef)) else None


def _search_asymptote(y: np.ndarray, inner) -> tuple[float, tuple] | None:
    """Minimize ``inner(asymptote)`` for asymptotes below ``min(y)`` by a bounded 1-D search.

    The asymptote is ``min(y) - span * exp(t)``. When no loss seen is negative the loss is taken to
    be bounded below by 0 (true of squared error, log-loss, hinge, distances, count likelihoods),
    which keeps early extrapolations of steep L-BFGS drops from predicting impossible values.
    """
    lo, span = float(y.min()), float(y.max() - y.min())
    if span <= 0:
        return None
    upper = 5.0
    if lo > 0:
        upper = min(upper, math.log(lo / span))
    lower = min(-9.0, upper - 1.0)

    def objective(t: float) -> float:
        sse = inner(lo - span * math.exp(t))[0]
        return sse if sse < INFEASIBLE_SSE else INFEASIBLE_SSE  # also for NaN

    res = minimize_scalar(objective, bounds=(lower, upper), method="bounded", options={"xatol": 1e-3})
    sse, params = inner(lo - span * math.exp(float(res.x)))
    if not math.isfinite(sse) or params is None:
        return None
    return sse, params


def fit_sublinear(k: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, Curve] | None:
    """Weighted fit of ``1/(a k^2 + b k + c) + d`` with ``a >= 0`` and a rising denominator."""
    design = np.stack([k * k, k, np.ones_like(k)], axis=1)
    k_last = float(k[-1])

    def inner(d: float) -> tuple[float, tuple | None]:
        gap = y - d
        z = 1.0 / gap
        zw = w * gap**4  # first-order map of y-space weights into z-space
        coef = _weighted_lstsq(design, z, zw)
        if coef is not None and coef[0] < 0:
            lin = _weighted_lstsq(design[:, 1:], z, zw)
            coef = None if lin is None else np.array([0.0, lin[0], lin[1]])
        if coef is None:
            return math.inf, None
        a, b, c = coef
        denom = design @ coef
        if np.any(denom <= 0) or 2 * a * k_last + b <= 0:
            return math.inf, None
        resid = y - (1.0 / denom + d)
        return float(np.sum(w * resid * resid)), (float(a), float(b), float(c), float(d))

    found = _search_asymptote(y, inner)
    return None if found is None else (found[0], Curve(SUBLINEAR, found[1]))


def fit_exponential(k: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, Curve] | None:
    """Weighted fit of ``mu^(k - b) + c`` (stored as ``exp(alpha k + beta) + c``) with ``mu < 1``."""
    design = np.stack([k, np.ones_like(k)], axis=1)

    def inner(c: float) -> tuple[float, tuple | None]:
        gap = y - c
        coef = _weighted_lstsq(design, np.log(gap), w * gap * gap)
        if coef is None or coef[0] >= 0:
            return math.inf, None
        alpha, beta = coef
        resid = y - (np.exp(alpha * k + beta) + c)
        return float(np.sum(w * resid * resid)), (float(alpha), float(beta), float(c), 0.0)

    found = _search_asymptote(y, inner)
    return None if found is None else (found[0], Curve(EXPONENTIAL, found[1]))


def fit_loss_curve(
    losses: np.ndarray | list[float],
    decay: float = DEFAULT_DECAY,
    min_points: int = MIN_FIT_POINTS,
    window: int = 40,
) -> Curve:
    """The better-fitting of the two families over the last ``window`` losses, else the strawman.

    Falls back to :func:`geometric` when the history is shorter than ``min_points``, is flat, or
    neither family fits (e.g. a rising loss). The returned curve is anchored on the last observed
    loss so a prediction never jumps away from where the job actually is.
    """
    y_all = np.asarray(losses, dtype=float)
    n = y_all.size
    if n < min_points:
        return geometric(y_all)
    start = max(0, n - window)
    y = y_all[start:]
    k = np.arange(start, n, dtype=float)
    w = decay_weights(y.size, decay)
    fits = [f for f in (fit_sublinear(k, y, w), fit_exponential(k, y, w)) if f is not None]
    if not fits:
        return geometric(y_all)
    _, best = min(fits, key=lambda f: f[0])
    return _anchor(best, float(n - 1), float(y_all[-1]))


def _anchor(curve: Curve, k_last: float, y_last: float) -> Curve:
    """Shift the curve vertically so it passes through the last observed loss."""
    shift = y_last - float(curve(k_last))
    a, b, c, d = curve.p
    if curve.family == SUBLINEAR:
        return Curve(SUBLINEAR, (a, b, c, d + shift))
    return Curve(EXPONENTIAL, (a, b, c + shift, d))
