"""Gradient descent (logistic regression, linear SVM), Lloyd's K-Means and boosted stumps, one
Spark pass per iteration, each iteration's training loss reported to the current SLAQ job."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from slaq.api import current_job


@dataclass
class TrainResult:
    model: Any
    losses: list[float] = field(default_factory=list)
    stopped_early: bool = False


def _add(a: tuple, b: tuple) -> tuple:
    return tuple(x + y for x, y in zip(a, b))


def _iterate(result: TrainResult, iterations: int, step: Callable[[int], float]) -> TrainResult:
    """Run ``step`` (one pass; returns the loss) up to ``iterations`` times, reporting each loss."""
    job = current_job()
    for k in range(iterations):
        loss = step(k)
        result.losses.append(loss)
        if job is not None and not job.done:
            job.report(loss)
            if job.should_stop():
                result.stopped_early = True
                break
    return result


def _logistic_pass(block: tuple, w: np.ndarray) -> tuple:
    X, y = block
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    loss = float(np.sum(np.logaddexp(0.0, z) - y * z))
    return loss, X.T @ (p - y), float(len(y))


def _hinge_pass(block: tuple, w: np.ndarray) -> tuple:
    X, y = block
    s = 2.0 * y - 1.0
    margin = s * (X @ w)
    active = margin < 1.0
    loss = float(np.sum(np.maximum(0.0, 1.0 - margin)))
    return loss, -(X[active].T @ s[active]), float(len(y))


def _gradient_descent(blocks: Any, one_pass: Callable, iterations: int, step: float, reg: float, decay: bool) -> TrainResult:
    dim = blocks.first()[0].shape[1]
    result = TrainResult(np.zeros(dim))

    def iteration(k: int) -> float:
        w = result.model
        loss, grad, n = blocks.map(lambda b: one_pass(b, w)).treeReduce(_add)
        objective = loss / n + 0.5 * reg * float(w @ w)
        rate = step / np.sqrt(k + 1.0) if decay else step
        result.model = w - rate * (grad / n + reg * w)
        return objective

    return _iterate(result, iterations, iteration)


def logistic_regression(blocks: Any, iterations: int = 50, step: float = 1.0, reg: float = 0.0) -> TrainResult:
    """Logistic regression by gradient descent with a constant step; reports the regularized log-loss."""
    return _gradient_descent(blocks, _logistic_pass, iterations, step, reg, decay=False)


def svm(blocks: Any, iterations: int = 50, step: float = 1.0, reg: float = 0.01) -> TrainResult:
    """Linear SVM by subgradient descent (step / sqrt(k)) on the hinge loss (labels 0/1); reports the regularized loss."""
    return _gradient_descent(blocks, _hinge_pass, iterations, step, reg, decay=True)


def _lloyd_pass(block: tuple, centers: np.ndarray) -> tuple:
    X = block[0]
    d = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
    label = d.argmin(axis=1)
    sums = np.zeros_like(centers)
    np.add.at(sums, label, X)
    return float(d[np.arange(len(X)), label].sum()), sums, np.bincount(label, minlength=len(centers)).astype(float)


def kmeans(blocks: Any, k: int, iterations: int = 30, seed: int = 0) -> TrainResult:
    """Lloyd's algorithm from ``k`` random rows of the first block; reports the mean squared distance."""
    X0 = blocks.first()[0]
    if k < 1 or k > len(X0):
        raise ValueError(f"k must be between 1 and {len(X0)} (rows of the first block), got {k}")
    rng = np.random.default_rng(seed)
    result = TrainResult(X0[rng.choice(len(X0), size=k, replace=False)].copy())

    def iteration(_: int) -> float:
        centers = result.model
        cost, sums, counts = blocks.map(lambda b: _lloyd_pass(b, centers)).treeReduce(_add)
        moved = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1.0)[:, None], centers)
        result.model = moved
        return cost / max(counts.sum(), 1.0)

    return _iterate(result, iterations, iteration)


def _stump_predict(X: np.ndarray, stumps: list, base: float) -> np.ndarray:
    f = np.full(len(X), base)
    for feature, threshold, left, right in stumps:
        f += np.where(X[:, feature] <= threshold, left, right)
    return f


def _stump_pass(block: tuple, stumps: list, base: float, edges: np.ndarray) -> tuple:
    """Squared loss and, per feature and bin, the residual sums and counts for the next split."""
    X, y = block
    r = y - _stump_predict(X, stumps, base)
    nbins = edges.shape[1] + 1
    sums = np.zeros((X.shape[1], nbins))
    counts = np.zeros((X.shape[1], nbins))
    for j in range(X.shape[1]):
        b = np.searchsorted(edges[j], X[:, j])
        sums[j] = np.bincount(b, weights=r, minlength=nbins)
        counts[j] = np.bincount(b, minlength=nbins)
    return float(r @ r), sums, counts, float(len(y))


def boosted_stumps(blocks: Any, rounds: int = 40, learning_rate: float = 0.3, bins: int = 16) -> TrainResult:
    """Gradient boosting of depth-1 trees on squared loss, one Spark pass per round (histogram
    splits on quantile bins of the first block); reports the mean squared error before each round."""
    X0, y0 = blocks.first()
    edges = np.quantile(X0, np.linspace(0, 1, bins + 1)[1:-1], axis=0).T
    base = float(np.mean(y0))
    result = TrainResult([])

    def iteration(_: int) -> float:
        stumps = list(result.model)
        sse, sums, counts, n = blocks.map(lambda b: _stump_pass(b, stumps, base, edges)).treeReduce(_add)
        left_s, left_c = np.cumsum(sums, axis=1)[:, :-1], np.cumsum(counts, axis=1)[:, :-1]
        tot_s, tot_c = sums.sum(axis=1, keepdims=True), counts.sum(axis=1, keepdims=True)
        right_s, right_c = tot_s - left_s, tot_c - left_c
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = np.where((left_c > 0) & (right_c > 0), left_s**2 / left_c + right_s**2 / right_c, -np.inf)
        j, b = np.unravel_index(int(np.argmax(gain)), gain.shape)
        left = learning_rate * left_s[j, b] / max(left_c[j, b], 1.0)
        right = learning_rate * right_s[j, b] / max(right_c[j, b], 1.0)
        result.model = stumps + [(int(j), float(edges[j, b]), float(left), float(right))]
        return sse / n

    return _iterate(result, rounds, iteration)
