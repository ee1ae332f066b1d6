"""The loss history of a GBT fit in ``slaq bench mllib`` (variant ``gbt``), and the references it is checked against.

A GBT model keeps no loss history. Spark's boosting logs its training error after each tree (DEBUG, on the
``GradientBoostedTrees`` logger), which the bench's iteration clock records in every configuration. The fit's
history is that, after one initial value: the error of the empty model (every prediction 0), where boosting
starts, as a breeze fit's ``objectiveHistory`` starts at its initial point. Two references check the logged
values: the fitted model's number of trees (one error per tree, else the run fails, as it does for a breeze fit
with a missing iteration line), and, on data small enough to collect to the driver, each value against the
error recomputed from the model's trees (:mod:`srsupport.gbt_error`). SLAQ's captured histories are then
checked against the logged ones (:mod:`srlab.slaq_bench.capture_check`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from srsupport.gbt_error import Loss, log_loss, squared_error, staged_training_error

GBT_MODELS = ("GBTClassificationModel", "GBTRegressionModel")
LOSSES: dict[str, tuple[Loss, str]] = {"gbt-c": (log_loss, "label"), "gbt-r": (squared_error, "y")}  # family -> (loss, label)
# The value check collects every tree's predictions to the driver: about a second per fit at --small's 4,000
# rows, minutes per fit at the default 400,000. Above this the trees are counted and the values not recomputed.
VALUE_CHECK_MAX_ROWS = 50_000
VALUE_RTOL = 1e-9  # the same double, summed in another order


def is_gbt(model: Any) -> bool:
    return type(model).__name__ in GBT_MODELS


def empty_model_errors(data: Any) -> dict[str, float]:
    """Each GBT family's training error before its first tree (every prediction 0): the logistic loss
    ``2·log(1 + exp(0))`` whatever the label, the squared error the mean of ``y²`` (one Spark job)."""
    from pyspark.sql import functions as F

    label = LOSSES["gbt-r"][1]
    return {"gbt-c": 2.0 * math.log(2.0), "gbt-r": float(data.select(F.avg(F.col(label) * F.col(label))).first()[0])}


def histories(fits: Mapping[str, tuple[str, int]], logged: Mapping[str, Sequence[float]], empty: Mapping[str, float]) -> dict[str, list[float]]:
    """Each GBT fit's history (``fits``: name -> (family, trees of its model)): the empty model's error, then
    the error logged after each tree. Raises when a fit logged other than one error per tree."""
    out = {}
    for name, (family, trees) in fits.items():
        values = list(logged.get(name, ()))
        if len(values) != trees:
            raise RuntimeError(f"{name}: {len(values)} logged training errors for a model of {trees} trees (expected one per tree)")
        out[name] = [empty[family], *values]
    return out


def reference_check(models: Mapping[str, tuple[str, Any]], logged: Mapping[str, Sequence[float]], data: Any, rows: int) -> dict[str, object]:
    """Under :data:`VALUE_CHECK_MAX_ROWS` rows, each GBT fit's logged errors (``models``: name -> (family, fitted
    model)) against the errors recomputed from its model's trees; ``values_off``: values beyond :data:`VALUE_RTOL`.
    (That there is one per tree, :func:`histories` made sure.)"""
    out: dict[str, object] = {"fits": len(models), "trees": sum(len(model.trees) for _, model in models.values()),
                              "values_checked": rows <= VALUE_CHECK_MAX_ROWS, "values_off": 0, "max_relative_difference": None}
    if rows > VALUE_CHECK_MAX_ROWS:
        return out
    worst, off = 0.0, 0
    for name, (family, model) in models.items():
        loss, label = LOSSES[family]
        for value, reference in zip(logged.get(name, ()), staged_training_error(model, data, loss, label), strict=True):
            diff = abs(value - reference) / max(abs(reference), 1e-300)
            worst, off = max(worst, diff), off + (diff > VALUE_RTOL)
    out["values_off"], out["max_relative_difference"] = off, worst
    return out


def reference_totals(checks: list[dict[str, Any]]) -> dict[str, object] | None:
    """:func:`reference_check` summed over the runs of a variant (None: no GBT fit)."""
    if not checks:
        return None
    diffs = [c["max_relative_difference"] for c in checks if c["max_relative_difference"] is not None]
    return {"fits": sum(c["fits"] for c in checks), "trees": sum(c["trees"] for c in checks),
            "values_checked": all(c["values_checked"] for c in checks), "values_off": sum(c["values_off"] for c in checks),
            "max_relative_difference": max(diffs) if diffs else None}
