"""``slaq.optuna.Pruner``: an Optuna pruner that predicts a trial's final value with SLAQ's loss curve.

Needs ``optuna`` (the ``optuna`` extra). It reads only what Optuna stores (the trial's reported values
and the completed trials), so it works with SLAQ off as well: then it is a pure prediction. With SLAQ
on it also closes the pruned trial's SLAQ job at once (:func:`slaq.optuna.trials.pruned`), so the next
epoch gives its cores to the other trials.
"""

from __future__ import annotations

import logging
import math

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from slaq.live.names import shown
from slaq.optuna import trials
from slaq.optuna.rule import MARGIN, MIN_STEPS, SLACK, as_loss, judge

log = logging.getLogger("slaq.optuna")


class Pruner(optuna.pruners.BasePruner):
    """Prunes a trial whose optimistic final value cannot beat the best completed trial's.

    After ``min_steps`` reported values, SLAQ's loss curve is fitted to the trial's values (``1 − value``
    when the study maximizes) and read at the final step: ``max_step``, or by default the largest step
    any completed trial reported. The trial's optimistic final value grants it ``1 + slack`` times the
    improvement the curve still predicts; the trial is pruned when that is still worse than the best
    completed trial's value by more than ``margin × |best|`` (:func:`slaq.optuna.rule.judge`). Nothing is
    pruned before ``n_startup_trials`` trials completed, nor in a multi-objective study.
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
        if len(study.directions) != 1 or len(values) < self.min_steps:
            return False
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        finals = [v for t in done if (v := t.value) is not None and math.isfinite(v)]
        if len(finals) < self.n_startup_trials:
            return False
        maximize = study.direction == StudyDirection.MAXIMIZE
        final = self.max_step if self.max_step is not None else max((max(t.intermediate_values) for t in done if t.intermediate_values),
                                                                     default=None)
        if final is None:
            return False
        steps = sorted(values)
        best = min(as_loss(v, maximize) for v in finals)
        verdict = judge(steps, [as_loss(values[s], maximize) for s in steps], final, best, self.slack, self.margin)
        if verdict.prune:
            log.info("SLAQ: pruning Optuna trial %d of %s at step %d: predicted %.6g at step %d, %.6g at best, to beat %.6g",
                     trial.number, shown(study.study_name), steps[-1], verdict.predicted, final, verdict.optimistic, verdict.bound)
            trials.pruned(study.study_name, trial.number)
        return verdict.prune
