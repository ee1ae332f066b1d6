"""SLAQ's Optuna integration without Spark: the job name, the direction of losses, the pruning rule, the
Pruner on real in-process studies (SLAQ off: a pure prediction) and the hook that waits for optuna's import."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys

import pytest

from slaq.optuna.rule import MAX_NAME, as_loss, final_index, judge, trial_job_name


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


def test_a_trial_as_good_as_the_best_is_never_pruned():
    assert not judge([0, 1, 2], [0.5, 0.4, 0.3], 2, best=0.30).prune


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
    assert len(study.trials[1].intermediate_values) == 3  # judged as soon as it had min_steps values
    assert study.best_trial.number == 2


@needs_optuna
def test_the_pruner_waits_for_a_completed_trial_and_for_enough_steps():
    from slaq.optuna import Pruner

    flat = [0.7] * 6
    assert all(t.state.name == "COMPLETE" for t in _study("minimize", Pruner(n_startup_trials=3), [[0.2] * 6, flat, flat]).trials)
    assert all(t.state.name == "COMPLETE" for t in _study("minimize", Pruner(min_steps=7), [[0.2] * 6, flat]).trials)
    with pytest.raises(ValueError):
        Pruner(slack=math.nan)


@needs_optuna
def test_optuna_imported_after_attach_is_patched_then_and_given_back_at_detach():
    script = (
        "import sys\n"
        "from slaq.optuna import trials\n"
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
