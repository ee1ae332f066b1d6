"""Real training loops (numpy/scipy) for the algorithm families of SLAQ's Table 1.

Each trainer returns the loss after every iteration and the CPU seconds each iteration took. These
are the curves the simulator replays and the loss predictors are evaluated on: they come from
actually running the optimizers, not from a formula.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp


@dataclass(frozen=True)
class Trace:
    name: str
    family: str
    losses: list[float]
    cpu_seconds: list[float]  # per iteration; len(losses) - 1 entries


class _Clock:
    """Measures CPU seconds per iteration of the calling loop."""

    def __init__(self) -> None:
        self.last = time.process_time()
        self.laps: list[float] = []

    def lap(self) -> None:
        now = time.process_time()
        self.laps.append(max(now - self.last, 1e-6))
        self.last = now


def logreg_gd(X: np.ndarray, y: np.ndarray, lr: float, l2: float, iters: int) -> tuple[list, list]:
    """Logistic regression by full-batch gradient descent (labels in {0, 1})."""
    w = np.zeros(X.shape[1])
    sign = 2 * y - 1

    def loss(w: np.ndarray) -> float:
        return float(-np.mean(log_expit(sign * (X @ w))) + 0.5 * l2 * w @ w)

    losses, clock = [loss(w)], _Clock()
    for _ in range(iters):
        grad = X.T @ (expit(X @ w) - y) / len(y) + l2 * w
        w -= lr * grad
        losses.append(loss(w))
        clock.lap()
    return losses, clock.laps


def svm_gd(X: np.ndarray, y: np.ndarray, lr: float, l2: float, iters: int) -> tuple[list, list]:
    """Linear SVM (squared hinge loss, L2) by full-batch gradient descent (labels in {0, 1})."""
    w = np.zeros(X.shape[1])
    sign = 2 * y - 1

    def loss(w: np.ndarray) -> float:
        margin = np.maximum(0.0, 1 - sign * (X @ w))
        return float(np.mean(margin**2) + 0.5 * l2 * w @ w)

    losses, clock = [loss(w)], _Clock()
    for _ in range(iters):
        margin = np.maximum(0.0, 1 - sign * (X @ w))
        grad = -2 * X.T @ (sign * margin) / len(y) + l2 * w
        w -= lr * grad
        losses.append(loss(w))
        clock.lap()
    return losses, clock.laps


def _lbfgs(fun: Callable, x0: np.ndarray, iters: int, memory: int = 10) -> tuple[list, list]:
    """Run scipy's L-BFGS, recording the objective after each iteration."""
    losses, clock = [float(fun(x0)[0])], _Clock()

    def callback(intermediate_result) -> None:
        losses.append(float(intermediate_result.fun))
        clock.lap()

    minimize(fun, x0, jac=True, method="L-BFGS-B", callback=callback,
             options={"maxiter": iters, "maxcor": memory, "gtol": 1e-12, "ftol": 1e-15})
    return losses, clock.laps


def linreg_lbfgs(X: np.ndarray, y: np.ndarray, l2: float, iters: int) -> tuple[list, list]:
    """Ridge regression by L-BFGS (mean squared error objective)."""
    n = len(y)

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        r = X @ w - y
        return float(r @ r / n + l2 * w @ w), 2 * X.T @ r / n + 2 * l2 * w

    return _lbfgs(fun, np.zeros(X.shape[1]), iters, memory=5)


def mlp_lbfgs(X: np.ndarray, labels: np.ndarray, hidden: int, l2: float, iters: int, seed: int) -> tuple[list, list]:
    """One-hidden-layer perceptron classifier (tanh, softmax cross-entropy) trained by L-BFGS."""
    n, d = X.shape
    k = int(labels.max()) + 1
    onehot = np.eye(k)[labels]
    shapes = [(d, hidden), (hidden,), (hidden, k), (k,)]
    sizes = [int(np.prod(s)) for s in shapes]

    def unpack(theta: np.ndarray) -> list[np.ndarray]:
        parts, at = [], 0
        for shape, size in zip(shapes, sizes):
            parts.append(theta[at:at + size].reshape(shape))
            at += size
        return parts

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        W1, b1, W2, b2 = unpack(theta)
        H = np.tanh(X @ W1 + b1)
        Z = H @ W2 + b2
        logp = Z - logsumexp(Z, axis=1, keepdims=True)
        loss = -np.sum(onehot * logp) / n + 0.5 * l2 * (np.sum(W1**2) + np.sum(W2**2))
        dZ = (np.exp(logp) - onehot) / n
        dW2 = H.T @ dZ + l2 * W2
        dH = dZ @ W2.T * (1 - H**2)
        dW1 = X.T @ dH + l2 * W1
        grad = np.concatenate([dW1.ravel(), dH.sum(0), dW2.ravel(), dZ.sum(0)])
        return float(loss), grad

    rng = np.random.default_rng(seed)
    theta0 = rng.normal(0, 1 / np.sqrt(d), sum(sizes))
    return _lbfgs(fun, theta0, iters)


def kmeans_lloyd(X: np.ndarray, k: int, iters: int, seed: int) -> tuple[list, list]:
    """K-Means by Lloyd iterations; loss is the mean squared distance to the nearest centroid."""
    rng = np.random.default_rng(seed)
    centers = X[rng.choice(len(X), k, replace=False)].copy()

    def assign(centers: np.ndarray) -> tuple[np.ndarray, float]:
        dist = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
        nearest = dist.argmin(1)
        return nearest, float(dist[np.arange(len(X)), nearest].mean())

    nearest, loss = assign(centers)
    losses, clock = [loss], _Clock()
    for _ in range(iters):
        for j in range(k):
            members = X[nearest == j]
            if len(members):
                centers[j] = members.mean(0)
        nearest, loss = assign(centers)
        losses.append(loss)
        clock.lap()
    return losses, clock.laps


def _best_stump(X: np.ndarray, r: np.ndarray) -> tuple[int, float, float, float]:
    """Regression stump minimizing squared error of residuals ``r`` over quantile thresholds."""
    best = (0, 0.0, 0.0, 0.0)
    best_gain = -1.0
    total, n = r.sum(), len(r)
    for j in range(X.shape[1]):
        for t in np.quantile(X[:, j], [0.1, 0.25, 0.5, 0.75, 0.9]):
            left = X[:, j] <= t
            nl = int(left.sum())
            if nl in (0, n):
                continue
            sl = r[left].sum()
            gain = sl * sl / nl + (total - sl) ** 2 / (n - nl)
            if gain > best_gain:
                best_gain, best = gain, (j, float(t), sl / nl, (total - sl) / (n - nl))
    return best


def gbt_rounds(X: np.ndarray, y: np.ndarray, rate: float, rounds: int) -> tuple[list, list]:
    """Gradient-boosted stumps on squared loss; loss is the training mean squared error."""
    pred = np.full(len(y), y.mean())
    losses, clock = [float(np.mean((y - pred) ** 2))], _Clock()
    for _ in range(rounds):
        j, t, vl, vr = _best_stump(X, y - pred)
        pred += rate * np.where(X[:, j] <= t, vl, vr)
        losses.append(float(np.mean((y - pred) ** 2)))
        clock.lap()
    return losses, clock.laps


def topic_em(counts: np.ndarray, topics: int, iters: int, seed: int) -> tuple[list, list]:
    """Topic model (PLSA) by EM, the batch-EM relative of LDA; loss is negative log-likelihood per token."""
    rng = np.random.default_rng(seed)
    docs, words = counts.shape
    theta = rng.dirichlet(np.ones(topics), docs)  # doc x topic
    phi = rng.dirichlet(np.ones(words), topics)  # topic x word
    tokens = counts.sum()

    def nll(theta: np.ndarray, phi: np.ndarray) -> float:
        return float(-np.sum(counts * np.log(theta @ phi + 1e-300)) / tokens)

    losses, clock = [nll(theta, phi)], _Clock()
    for _ in range(iters):
        mix = theta @ phi + 1e-300
        ratio = counts / mix
        new_theta = theta * (ratio @ phi.T)
        new_phi = phi * (theta.T @ ratio)
        theta = new_theta / new_theta.sum(1, keepdims=True)
        phi = new_phi / new_phi.sum(1, keepdims=True)
        losses.append(nll(theta, phi))
        clock.lap()
    return losses, clock.laps
