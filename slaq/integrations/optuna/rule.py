"""The pure parts of SLAQ's Optuna integration: a trial's values as a falling loss, and the pruning rule
of :class:`slaq.optuna.Pruner` (a trial's job name is :func:`slaq.names.trial_job_name`). No Optuna, no Spark.

The rule (:func:`judge`). A trial's reported values are oriented so lower is better (:func:`as_loss`);
``y`` is its latest one, at step ``s``, ``S`` the study's final step and ``b`` the best completed
trial's value. Two predictions say how much the trial can still improve by ``S``, each as an
*optimistic* final value that grants ``1 + slack`` times the improvement predicted:

* **the completed trials' histories** (from the first report on), as SLAQ predicts a job from job
  histories: each completed trial ``c`` that reported step ``s`` improved by ``d_c = c(s) − c(final)``
  after it; the trial is granted the largest of those (none if all are negative):
  ``y − (1 + slack)·max(0, max_c d_c)``. Not in force when no completed trial reported step ``s``.
* **the trial's own loss curve** (once it reported ``min_steps`` values): SLAQ's curve
  (:func:`slaq.predict.loss_curves.fit_loss_curve`, the one the scheduler predicts every job with) read
  at ``S``, ``ŷ(S)``, never above ``y``: ``y − (1 + slack)·(y − ŷ(S))``. A curve that has levelled off
  predicts little; one still falling steeply predicts much.

The trial is pruned only when **every prediction in force** says that even its optimistic value is worse
than ``b`` by more than ``margin·|b|``: the optimistic value used is the lower (the more hopeful) of the
two. Pruning cannot be undone and a wrongly kept trial only costs time, so the trial gets the benefit of
either kind of evidence: the history knows how this study's trials behave after step ``s`` (so a
trial can be judged at its first report, when pruning saves the most), the curve knows how this trial
itself is moving (so one improving faster than any completed trial did is kept). With neither in force
nothing is pruned, nor is a trial at or past ``S``: nothing is left to save, and its completion adds a
history. Every part of the rule only ever keeps more trials as ``slack`` or ``margin`` grows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from slaq.predict.loss_curves import fit_loss_curve

SLACK = 1.0  # the optimistic final value grants twice the improvement predicted (by the histories or the curve)
MARGIN = 0.0  # relative to |best|: how much worse than the best the optimistic value must be
MIN_STEPS = 3  # reported values before the curve is in force (with fewer it is a one-ratio guess)


def as_loss(value: float, maximize: bool) -> float:
    """A reported value as a loss that falls while the trial improves: ``1 − value`` for a maximized
    objective (a score in [0, 1] becomes a loss in [0, 1], which SLAQ's curve fit bounds below by 0),
    the value itself for a minimized one."""
    return 1.0 - value if maximize else value


@dataclass(frozen=True)
class Judgement:
    """One decision of :func:`judge`: the optimistic final value by each prediction in force (``nan`` when
    one is not), the curve's value at the final step (``nan`` without the curve), the optimistic value the
    decision used, the value it had to beat (``best`` plus the margin) and whether the trial is pruned."""

    by_history: float
    by_curve: float
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


def curve_prediction(steps: Sequence[int], losses: Sequence[float], final_step: int) -> float:
    """SLAQ's loss curve fitted to ``losses`` and read at ``final_step``, never above the latest loss."""
    last = float(losses[-1])
    with np.errstate(all="ignore"):  # a flat history (a converged trial) makes the fit's candidates divide by zero before it falls back
        predicted = min(float(fit_loss_curve(list(losses))(final_index(steps, final_step))), last)
    return predicted if math.isfinite(predicted) else last


def judge(steps: Sequence[int], losses: Sequence[float], final_step: int, best: float, slack: float = SLACK,
          margin: float = MARGIN, *, gains: Sequence[float] = (), min_steps: int = MIN_STEPS) -> Judgement:
    """The rule of the module docstring. ``steps`` ascending and ``losses`` the trial's values at them
    (already :func:`as_loss`); ``best`` the best completed trial's value as a loss; ``gains`` what each
    completed trial that reported step ``steps[-1]`` improved after it (its loss there minus its final
    loss; none: the history is not in force); the curve is in force from ``min_steps`` losses on."""
    if len(steps) != len(losses) or not losses:
        raise ValueError(f"need one loss per step and at least one, got {len(steps)} steps and {len(losses)} losses")
    last = float(losses[-1])
    clean = [g for g in gains if math.isfinite(g)]
    by_history = last - (1.0 + slack) * max(0.0, *clean) if clean else math.nan
    predicted = curve_prediction(steps, losses, final_step) if len(losses) >= min_steps else math.nan
    by_curve = last - (1.0 + slack) * (last - predicted) if len(losses) >= min_steps else math.nan
    in_force = [v for v in (by_history, by_curve) if not math.isnan(v)]
    bound = best + margin * abs(best)
    if not in_force or steps[-1] >= final_step:
        return Judgement(by_history, by_curve, predicted, last, bound, False)
    optimistic = min(in_force)
    return Judgement(by_history, by_curve, predicted, optimistic, bound, optimistic > bound)


__all__ = ["MARGIN", "MIN_STEPS", "SLACK", "Judgement", "as_loss", "curve_prediction", "final_index", "judge"]
