"""Spark's training error after each tree of a gradient-boosted trees model, recomputed from the model.

``ml.tree.impl.GradientBoostedTrees.boost`` logs ``computeWeightedError`` after every tree: the weighted
mean of ``loss.computeError(prediction, label)`` over the training rows, the prediction after m trees
being the ``treeWeights``-weighted sum of the first m trees' predictions (a classifier's labels remapped
to ±1). A fitted model keeps no such history, so the tests that check SLAQ's captured GBT losses rebuild it
from ``model.trees`` (rows of weight 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Loss = Callable[[np.ndarray, np.ndarray], np.ndarray]


def squared_error(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (y - pred) ** 2  # mllib.tree.loss.SquaredError.computeError


def log_loss(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    return 2.0 * np.log1p(np.exp(-2.0 * (2.0 * y - 1.0) * pred))  # LogLoss.computeError on labels 0/1 -> ±1


def staged_training_error(model: Any, df: Any, loss: Loss, label: str = "label") -> list[float]:
    """The training error after 1, 2, ... trees of ``model`` on ``df`` (its training rows)."""
    y = np.array([r[0] for r in df.select(label).collect()])
    per_tree = np.array([[r[0] for r in tree.transform(df).select("prediction").collect()] for tree in model.trees])
    staged = np.cumsum(np.asarray(model.treeWeights)[:, None] * per_tree, axis=0)
    return [float(np.mean(loss(pred, y))) for pred in staged]
