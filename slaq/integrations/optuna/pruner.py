"""``slaq.optuna.Pruner``: an Optuna pruner that predicts a trial's final value with SLAQ's loss curve.

Needs ``optuna`` (the ``optuna`` extra). It reads only what Optuna stores (the trial's reported values
and the completed trials), so it works with SLAQ off as well, and with SLAQ on its verdict changes nothing
else either: the trial's SLAQ job ends when the trial does (:mod:`slaq.integrations.optuna.trials`), whether the
objective raised ``TrialPruned`` on it or went on.
"""

from __future__ import annotations

import logging
import math

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from slaq.integrations.optuna.rule import MARGIN, MIN_STEPS, SLACK, as_loss, judge
from slaq.names import shown

log = logging.getLogger("slaq.optuna")


class Pruner(optuna.pruners.BasePruner):
    """Prunes a trial whose optimistic final value cannot beat the best completed trial's.

    The rule is :func:`slaq.integrations.optuna.rule.judge` (its module docstring), on the trial's values as losses
    (``1 − value`` when the study maximizes). From its first report on, the trial is granted ``1 + slack``
    times the largest improvement any completed trial made after the same step; from ``min_steps``
    reports on, also ``1 + slack`` times the improvement SLAQ's loss curve predicts for it by the final
    step (``max_step``, or by default the largest step any completed trial reported). It is pruned only
    when both (or the one in force) leave it worse than the best completed trial's value by more than
    ``margin × |best|``. Nothing is pruned before ``n_startup_trials`` trials completed, at or past the
    final step, nor in a multi-objective study.
    """

    def __init__(self, *, max_step: int | None = None, min_steps: int = MIN_STEPS, slack: float = SLACK, margin: float = MARGIN,
                 n_startup_trials: int = 1):
        if max_step is not None and max_step < 0:
            raise ValueError(f"max_step must be >= 0, got {max_step}")
        if min_steps < 1 or n_startup_trials < 1:
            raise ValueError(f"min_steps and n_startup_trials must be >= 1, got {min_steps} and {n_startup_trials}")
        if not (slack >= 0 and margin >= 0 and math.isfinite(slack) and math.isfinite(margin)):
            raise ValueError(f"slack and margin must be finite and >= 0, got {slack} and {margin}")
        self.max_step, self.min_steps, self.slack, self.margin, self.n_startup_trials = max_step, min_steps, slack, margin, n_startup_trials

    def prune(self, study: optuna.study.Study, trial: FrozenTrial) -> bool:
        values = {s: v for s, v in trial.intermediate_values.items() if math.isfinite(v)}
        if len(study.directions) != 1 or not values:
            return False
        done = [(t, v) for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) if (v := t.value) is not None and math.isfinite(v)]
        if len(done) < self.n_startup_trials:
            return False
        maximize = study.direction == StudyDirection.MAXIMIZE
        final = self.max_step if self.max_step is not None else max((max(t.intermediate_values) for t, _ in done if t.intermediate_values),
                                                                     default=None)
        if final is None:
            return False
        steps = sorted(values)
        at = steps[-1]
        gains = [as_loss(t.intermediate_values[at], maximize) - as_loss(v, maximize) for t, v in done if at in t.intermediate_values]
        best = min(as_loss(v, maximize) for _, v in done)
        verdict = judge(steps, [as_loss(values[s], maximize) for s in steps], final, best, self.slack, self.margin, gains=gains,
                        min_steps=self.min_steps)
        if verdict.prune:
            log.info("SLAQ: Optuna trial %d of %s should be pruned at step %d: at best %.6g by the completed trials' gains, %.6g by "
                     "the curve, to beat %.6g", trial.number, shown(study.study_name), at, verdict.by_history, verdict.by_curve, verdict.bound)
        return verdict.prune
