"""The pure parts of SLAQ's Optuna integration: a trial's job name, its values as a falling loss, and
the pruning rule of :class:`slaq.optuna.Pruner`. No Optuna, no Spark.

The rule (:func:`judge`): a trial's reported values, oriented so lower is better (:func:`as_loss`),
are fitted with SLAQ's own loss curve (:func:`slaq.predict.loss_curves.fit_loss_curve`, the curve the
scheduler predicts every job with) and the curve is read at the study's final step ``S``: ``ŷ(S)``,
never above the trial's latest value ``y``. The trial's *optimistic* final value grants it
``1 + slack`` times the improvement the curve still predicts: ``y − (1 + slack)·(y − ŷ(S))``. It is
pruned when even that is worse than the best completed trial's value ``b`` by more than
``margin·|b|``. A curve that has flattened out above ``b`` is pruned; one still falling steeply
enough to reach ``b`` is not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from slaq.predict.loss_curves import fit_loss_curve
from slaq.sparkml import one_line

MAX_NAME = 160  # characters of a trial's job name (study, number and parameters), as for a spark.ml fit's
SLACK = 1.0  # the optimistic final value grants twice the improvement the curve predicts
MARGIN = 0.0  # relative to |best|: how much worse than the best the optimistic value must be
MIN_STEPS = 3  # reported values before a trial is judged (with fewer the curve is a one-ratio guess)


def as_loss(value: float, maximize: bool) -> float:
    """A reported value as a loss that falls while the trial improves: ``1 − value`` for a maximized
    objective (a score in [0, 1] becomes a loss in [0, 1], which SLAQ's curve fit bounds below by 0),
    the value itself for a minimized one."""
    return 1.0 - value if maximize else value


def _short(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def trial_job_name(study: str, number: int, params: Mapping[str, object]) -> str:
    """``study#3 regParam=0.01 elasticNetParam=0.5``: the study, the trial's number (unique in its study)
    and the parameters suggested so far, on one line and at most :data:`MAX_NAME` characters."""
    head = one_line(f"{study}#{number}", MAX_NAME)
    body = " ".join(f"{k}={_short(v)}" for k, v in params.items())
    return one_line(f"{head} {body}", MAX_NAME) if body else head


@dataclass(frozen=True)
class Judgement:
    """One decision of :func:`judge`: the curve's value at the final step, the optimistic final value,
    the value it had to beat (``best`` plus the margin) and whether the trial is pruned."""

    predicted: float
    optimistic: float
    bound: float
    prune: bool


def final_index(steps: Sequence[int], final_step: int) -> float:
    """Where ``final_step`` falls on the curve's axis (the index of each reported value): steps are
    taken to be evenly spaced, at the mean spacing of the ones reported."""
    n = len(steps)
    stride = (steps[-1] - steps[0]) / (n - 1) if n > 1 and steps[-1] > steps[0] else 1.0
    return (n - 1) + max(final_step - steps[-1], 0) / stride


def judge(steps: Sequence[int], losses: Sequence[float], final_step: int, best: float, slack: float = SLACK,
          margin: float = MARGIN) -> Judgement:
    """The rule of the module docstring. ``steps`` ascending and ``losses`` the trial's values at them
    (already :func:`as_loss`); ``best`` the best completed trial's value as a loss."""
    if len(steps) != len(losses) or not losses:
        raise ValueError(f"need one loss per step and at least one, got {len(steps)} steps and {len(losses)} losses")
    last = float(losses[-1])
    curve = fit_loss_curve(list(losses))
    predicted = min(float(curve(final_index(steps, final_step))), last)
    if not math.isfinite(predicted):
        predicted = last
    optimistic = last - (1.0 + slack) * (last - predicted)
    bound = best + margin * abs(best)
    return Judgement(predicted, optimistic, bound, optimistic > bound)


__all__ = ["MARGIN", "MAX_NAME", "MIN_STEPS", "SLACK", "Judgement", "as_loss", "final_index", "judge", "trial_job_name"]
