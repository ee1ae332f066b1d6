"""Training data for the recorded traces: generated data and the datasets that ship inside pyspark."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def pyspark_data_dir() -> Path | None:
    """``pyspark/data/mllib`` of the installed pyspark, or None when pyspark is not installed."""
    try:
        import pyspark
    except ImportError:
        return None
    path = Path(pyspark.__file__).parent / "data" / "mllib"
    return path if path.is_dir() else None


def read_libsvm(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Dense features and labels from a LIBSVM text file (1-based feature indices)."""
    rows, labels, width = [], [], 0
    for line in path.read_text().splitlines():
        parts = line.split()
        if not parts:
            continue
        labels.append(float(parts[0]))
        entries = [(int(i) - 1, float(v)) for i, v in (p.split(":") for p in parts[1:])]
        width = max([width] + [i + 1 for i, _ in entries])
        rows.append(entries)
    X = np.zeros((len(rows), width))
    for r, entries in enumerate(rows):
        for i, v in entries:
            X[r, i] = v
    return X, np.asarray(labels)


def read_dense(path: Path) -> np.ndarray:
    """Whitespace-separated numeric rows."""
    return np.asarray([[float(v) for v in line.split()] for line in path.read_text().splitlines() if line.strip()])


def standardize(X: np.ndarray) -> np.ndarray:
    std = X.std(0)
    std[std == 0] = 1.0
    return (X - X.mean(0)) / std


def classification(n: int, d: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Linearly separable-ish binary data with label noise, correlated features."""
    rng = np.random.default_rng(seed)
    mix = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)
    X = rng.normal(size=(n, d)) @ mix
    w = rng.normal(size=d)
    y = (X @ w + noise * rng.normal(size=n) * np.linalg.norm(w) > 0).astype(float)
    return standardize(X), y


def multiclass(n: int, d: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=0.6, size=(k, d))
    labels = rng.integers(0, k, n)
    return standardize(centers[labels] + rng.normal(size=(n, d))), labels


def regression(n: int, d: int, noise: float, seed: int, condition: float = 30.0) -> tuple[np.ndarray, np.ndarray]:
    """Ill-conditioned linear data so that iterative solvers need many iterations."""
    rng = np.random.default_rng(seed)
    scales = np.geomspace(1.0, 1.0 / condition, d)
    X = rng.normal(size=(n, d)) * scales
    y = X @ rng.normal(size=d) + np.sin(3 * X[:, 0]) + noise * rng.normal(size=n)
    return X, y


def blobs(n: int, d: int, k: int, spread: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-10, 10, size=(k, d))
    return centers[rng.integers(0, k, n)] + spread * rng.normal(size=(n, d))


def documents(docs: int, words: int, topics: int, length: int, seed: int) -> np.ndarray:
    """Bag-of-words counts drawn from a latent topic model."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(words, 0.05), topics)
    theta = rng.dirichlet(np.full(topics, 0.3), docs)
    return np.stack([rng.multinomial(length, p) for p in theta @ phi]).astype(float)
