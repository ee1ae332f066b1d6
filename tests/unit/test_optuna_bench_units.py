"""``slaq bench optuna``'s pure parts: the seeded trial points, the summary of its runs and the offline replay."""

from __future__ import annotations

import pytest

from srlab.slaq_bench.optuna_prune import MEDIAN, NONE, SLAQ, points, summarize


def test_a_seed_draws_the_same_points_every_time_and_another_seed_others():
    assert points(3, 5) == points(3, 5) != points(4, 5)
    assert all(1e-4 <= p["regParam"] <= 1 and p["elasticNetParam"] in (0.0, 0.5, 1.0) for p in points(3, 50))


def _run(config, seed, to_best, best, pruned=0):
    return {"config": config, "seed": seed, "seconds_to_best": to_best, "seconds": to_best + 1, "best_value": best, "pruned": pruned}


def test_the_summary_gives_each_studys_spread_ratios_of_medians_and_same_best_counts():
    runs = [_run("slaq", 1, t, 0.3, 5) for t in (4.0, 5.0, 9.0)] + [_run("median", 1, t, 0.3, 8) for t in (10.0, 10.0, 12.0)] + \
        [_run("none", 1, t, 0.3) for t in (20.0, 21.0, 22.0)] + \
        [_run("slaq", 2, 6.0, 0.25), _run("median", 2, 6.0, 0.2), _run("none", 2, 12.0, 0.2)]
    s = summarize(runs, [SLAQ, MEDIAN, NONE])
    assert s["per_seed"]["slaq"][1]["seconds_to_best"] == {"median": 5.0, "min": 4.0, "max": 9.0}
    assert s["vs"]["slaq/median"]["ratio_per_seed"] == [0.5, 1.0] and s["vs"]["slaq/median"]["median_ratio"] == 0.75
    assert s["same_best_as_none"] == {"slaq": 1, "median": 2} and s["studies"] == 2


def test_the_replay_runs_trials_n_jobs_at_once_on_a_step_clock_and_prunes_through_real_optuna():
    optuna = pytest.importorskip("optuna")
    from srlab.slaq_bench.optuna_replay import clairvoyant, replay_study

    # three trials of two steps (costs 1 and 2), two at once: 0 and 1 end at 3, trial 2 runs from 3 to 6
    values = [[0.5, 0.4], [0.6, 0.55], [0.45, 0.3]]
    none = replay_study(values, optuna.pruners.NopPruner(), n_jobs=2)
    assert (none["to_best"], none["end"], none["best_trial"], none["best_value"], none["pruned"]) == (6.0, 6.0, 2, 0.3, 0)
    # a flat overhead per step: 2 + 1, 2 + 2
    assert replay_study(values, optuna.pruners.NopPruner(), n_jobs=2, overhead=2.0)["to_best"] == 14.0
    # one at a time, trial 1 is worse than the completed trial at step 0 by more than the median allows
    median = replay_study(values, optuna.pruners.MedianPruner(n_startup_trials=1), n_jobs=1)
    assert median["pruned_at"] == {1: 0} and median["to_best"] == 3 + 1 + 3 and median["best_trial"] == 2
    # the clairvoyant prunes every other trial at its first report once one completed
    ahead = replay_study(values, clairvoyant(values), n_jobs=1)
    assert ahead["pruned_at"] == {1: 0} and ahead["best_trial"] == 2
