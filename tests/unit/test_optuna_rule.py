"""SLAQ's Optuna integration without Spark: the job name, the direction of losses, the pruning rule, the
Pruner on real in-process studies (SLAQ off: a pure prediction) and the hook that waits for optuna's import."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys

import pytest

from slaq.integrations.optuna.rule import as_loss, final_index, judge
from slaq.names import MAX_NAME, trial_job_name


def test_a_trials_job_name_is_its_study_number_and_params_on_one_bounded_line():
    assert trial_job_name("tune-lr", 3, {"regParam": 0.0123456, "elasticNetParam": 0.5, "solver": "l-bfgs"}) == \
        "tune-lr#3 regParam=0.01235 elasticNetParam=0.5 solver=l-bfgs"
    assert trial_job_name("s", 0, {}) == "s#0"
    long = trial_job_name("a\tstudy\nname", 7, {f"p{i}": i * 0.1 for i in range(100)})
    assert len(long) == MAX_NAME and long.startswith("a study name#7 p0=0 ") and long.endswith("…") and "\t" not in long


def test_a_maximized_value_becomes_a_falling_loss():
    rising = [0.6, 0.75, 0.8]
    losses = [as_loss(v, maximize=True) for v in rising]
    assert losses == pytest.approx([0.4, 0.25, 0.2]) and losses == sorted(losses, reverse=True)
    assert as_loss(0.3, maximize=False) == 0.3


def test_the_final_step_is_read_at_the_mean_spacing_of_the_reported_steps():
    assert final_index([0, 1, 2], 9) == 9.0
    assert final_index([0, 10, 20], 90) == 9.0
    assert final_index([4], 9) == 5.0  # one step: spacing 1
    assert final_index([0, 1, 2], 1) == 2.0  # at or past the final step: where it is


def test_a_curve_flat_above_the_best_is_pruned():
    j = judge([0, 1, 2, 3], [0.70, 0.69, 0.69, 0.69], 9, best=0.30)
    assert j.prune and j.predicted == pytest.approx(0.69, abs=0.01) and j.bound == 0.30


def test_a_curve_still_falling_towards_the_best_is_kept():
    falling = [1.0 / (1 + 0.5 * k) for k in range(4)]  # 1, .67, .5, .4: still falling fast
    j = judge([0, 1, 2, 3], falling, 19, best=0.30)
    assert not j.prune and j.predicted < falling[-1] and j.optimistic < j.predicted


def test_slack_and_margin_only_ever_keep_more_trials():
    losses, steps = [0.60, 0.50, 0.46, 0.44], [0, 1, 2, 3]
    plain = judge(steps, losses, 9, best=0.40, slack=0.0)
    assert plain.prune  # the curve levels off above 0.40
    assert not judge(steps, losses, 9, best=0.40, slack=0.0, margin=0.5).prune  # worse by less than 50% of |best|
    assert judge(steps, losses, 9, best=0.40, slack=1.0).optimistic < plain.optimistic
    history = judge([0], [0.60], 9, best=0.40, slack=0.0, gains=[0.1])
    assert history.prune and not judge([0], [0.60], 9, best=0.40, slack=1.0, gains=[0.1]).prune
    assert not judge([0], [0.60], 9, best=0.40, slack=0.0, margin=0.5, gains=[0.1]).prune


def test_a_trial_as_good_as_the_best_is_never_pruned():
    assert not judge([0, 1, 2], [0.5, 0.4, 0.3], 2, best=0.30).prune
    assert not judge([0], [0.3], 4, best=0.30, gains=[0.0]).prune


def test_a_trial_bad_at_its_first_report_against_the_completed_histories_is_pruned_then():
    # the completed trials improved by at most 0.04 after step 0; this one would need 0.39
    j = judge([0], [0.69], 4, best=0.30, gains=[0.04, 0.02, -0.001])
    assert j.prune and j.by_history == pytest.approx(0.69 - 2 * 0.04) and math.isnan(j.by_curve) and math.isnan(j.predicted)
    # one that twice the best completed gain could bring to the best is kept
    assert not judge([0], [0.37], 4, best=0.30, gains=[0.04, 0.02]).prune
    # gains that are all negative (the completed trials got worse after the step) grant nothing
    assert judge([1], [0.31], 4, best=0.30, gains=[-0.01]).optimistic == pytest.approx(0.31)


def test_nothing_is_judged_without_a_prediction_in_force_nor_at_the_final_step():
    none = judge([0, 1], [0.9, 0.9], 4, best=0.1)  # no completed history at step 1, too few values for the curve
    assert not none.prune and math.isnan(none.by_history) and math.isnan(none.by_curve)
    assert not judge([0, 1, 2, 3, 4], [0.9] * 5, 4, best=0.1, gains=[0.0]).prune  # at the final step: nothing left to save
    assert not judge([0], [0.9], 9, best=0.1, gains=[math.nan]).prune  # a non-finite gain is no history


def test_a_trial_is_pruned_only_when_every_prediction_in_force_says_so():
    steep = [0.57, 0.5145, 0.467]  # still falling fast: its curve reaches ~0.28 by step 9
    both = judge([0, 1, 2], steep, 9, best=0.40, gains=[0.018])
    assert both.by_history > 0.40 > both.by_curve and not both.prune and both.optimistic == both.by_curve
    history_only = judge([0, 1, 2], steep, 9, best=0.40, gains=[0.018], min_steps=4)
    assert history_only.prune and math.isnan(history_only.by_curve)
    flat = judge([0, 1, 2, 3], [0.70, 0.69, 0.69, 0.69], 9, best=0.30, gains=[0.01])
    assert flat.prune and flat.optimistic == min(flat.by_history, flat.by_curve) > 0.30


def test_the_rule_refuses_mismatched_input():
    with pytest.raises(ValueError):
        judge([0, 1], [0.5], 3, best=0.1)


needs_optuna = pytest.mark.skipif(importlib.util.find_spec("optuna") is None, reason="needs optuna (the optuna extra)")


def _study(direction, pruner, curves):
    """A study whose trial i reports ``curves[i]`` step by step (pruned when the pruner says so), one trial at a time."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction=direction, pruner=pruner)

    def objective(trial):
        curve = curves[trial.number]
        for step, value in enumerate(curve):
            trial.report(value, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return curve[-1]

    study.optimize(objective, n_trials=len(curves))
    return study


@needs_optuna
@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_the_pruner_stops_a_hopeless_trial_and_keeps_the_promising_ones(direction):
    from slaq.optuna import Pruner

    good = [0.9 * 0.6**k + 0.1 for k in range(10)]  # reaches ~0.1
    flat = [0.75, 0.7, 0.69, 0.69, 0.69, 0.69, 0.69, 0.69, 0.69, 0.69]  # levels off at 0.69
    late = [0.95 * 0.72**k for k in range(10)]  # behind good at steps 1-5, ends better
    curves = [good, flat, late]
    if direction == "maximize":
        curves = [[1.0 - v for v in c] for c in curves]
    study = _study(direction, Pruner(), curves)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "PRUNED", "COMPLETE"]
    # good improved by 0.19 after step 3 and flat's curve has levelled off: both predictions give up on it there
    assert len(study.trials[1].intermediate_values) == 4
    assert study.best_trial.number == 2


@needs_optuna
@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_a_trial_hopeless_at_its_first_report_is_pruned_at_once(direction):
    from slaq.optuna import Pruner

    done = [0.45, 0.35, 0.32, 0.31, 0.30]  # improved by 0.15 after step 0
    stuck = [0.69] * 5  # would need 0.39
    close = [0.55, 0.38, 0.31, 0.295, 0.29]  # within twice 0.15 of the best at step 0, best at the end
    curves = [done, stuck, close]
    if direction == "maximize":
        curves = [[1.0 - v for v in c] for c in curves]
    study = _study(direction, Pruner(), curves)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "PRUNED", "COMPLETE"]
    assert list(study.trials[1].intermediate_values) == [0]
    assert study.best_trial.number == 2


@needs_optuna
def test_the_eventual_best_with_a_steep_curve_is_kept():
    from slaq.optuna import Pruner

    early = [0.40 + 0.2 * 0.3**k for k in range(10)]  # levels off at 0.40 by step 3: gains 0.2, 0.06, 0.018, ...
    steep = [0.2 + 0.37 * 0.85**k for k in range(10)]  # behind early's best at step 2 by more than twice 0.018, ends at 0.29
    study = _study("minimize", Pruner(), [early, steep])
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"] and study.best_trial.number == 1
    # the completed history alone would have given up on it at step 2: its own falling curve is what keeps it
    alone = _study("minimize", Pruner(min_steps=4), [early, steep])
    assert alone.trials[1].state.name == "PRUNED" and list(alone.trials[1].intermediate_values) == [0, 1, 2]


@needs_optuna
def test_the_pruner_waits_for_a_completed_trial_and_for_enough_steps():
    from slaq.optuna import Pruner

    flat = [0.7] * 6
    assert all(t.state.name == "COMPLETE" for t in _study("minimize", Pruner(n_startup_trials=3), [[0.2] * 6, flat, flat]).trials)
    short = _study("minimize", Pruner(min_steps=7), [[0.2] * 2, flat])  # no completed trial reported steps 2-5: judged at 0 and 1 only
    assert short.trials[1].state.name == "PRUNED" and list(short.trials[1].intermediate_values) == [0]
    assert _study("minimize", Pruner(min_steps=7), [[0.3, 0.2], [0.1, 0.9]]).trials[1].state.name == "COMPLETE"  # step 1 is the final step
    with pytest.raises(ValueError):
        Pruner(slack=math.nan)


@needs_optuna
def test_optuna_imported_after_attach_is_patched_then_and_given_back_at_detach():
    script = (
        "import sys\n"
        "from slaq.integrations.optuna import trials\n"
        "trials.install()\n"
        "assert 'optuna' not in sys.modules and not trials.installed()\n"
        "import optuna\n"
        "assert trials.installed() and hasattr(optuna.study.Study.optimize, '__wrapped__')\n"
        "assert hasattr(optuna.trial.Trial.report, '__wrapped__')\n"
        "trials.uninstall()\n"
        "assert not hasattr(optuna.study.Study.optimize, '__wrapped__') and not trials.installed()\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
