"""The pruning rule for CrossValidator candidates (slaq.integrations.pruning) and how the loop marks pruned fits."""

from __future__ import annotations

import math

import pytest

from slaq.integrations.pruning import SIGMA_FLOOR, Z, hopeless, worst
from slaq.live.config import SlaqConfig
from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.live.status import ENDED, PRUNED, Tuning
from srsupport.slaq_watch import Statuses
from tests.fixtures import FakePools


def _pruned(metrics, alive, folds, larger_better=True):
    return [p.candidate for p in hopeless(metrics, alive, folds, larger_better)]


def test_a_candidate_far_behind_after_one_fold_is_pruned_and_a_close_one_is_not():
    # AUCs on fold 0: 0.9 leads; 0.5 is hopeless; 0.899 is within the assumed fold-to-fold spread
    assert _pruned([[0.9, 0.5, 0.899]], [0, 1, 2], folds=3) == [1]


def test_the_threshold_is_z_sd_of_the_predicted_final_gap():
    # one fold of three done: sigma is the floor, sd(final gap) = sigma * sqrt(2 + 4) / 3
    sigma = SIGMA_FLOOR * 1.0
    threshold = Z * sigma * math.sqrt(6) / 3
    assert _pruned([[1.0, 1.0 - threshold * 1.01]], [0, 1], folds=3) == [1]
    assert _pruned([[1.0, 1.0 - threshold * 0.99]], [0, 1], folds=3) == []


def test_smaller_is_better_metrics_prune_the_large_ones():
    p = hopeless([[2.0, 3.0, 2.001]], [0, 1, 2], 3, larger_better=False)
    assert [(x.candidate, x.mean, x.leader, x.leader_mean) for x in p] == [(1, 3.0, 0, 2.0)]
    assert worst(False) == math.inf and worst(True) == -math.inf


def test_a_noisy_pair_measured_over_two_folds_is_kept():
    # the leader beat candidate 1 by 0.1 on fold 0 and lost by 0.08 on fold 1: the spread is large, no confidence
    assert _pruned([[0.9, 0.8], [0.8, 0.88]], [0, 1], folds=4) == []
    # a steady gap with a small spread is pruned
    assert _pruned([[0.9, 0.8], [0.91, 0.81]], [0, 1], folds=4) == [1]


def test_no_decision_before_the_first_or_after_the_last_fold_or_with_one_candidate_alive():
    assert _pruned([], [0, 1], folds=3) == []
    assert _pruned([[0.9, 0.1], [0.9, 0.1], [0.9, 0.1]], [0, 1], folds=3) == []
    assert _pruned([[0.9, 0.1]], [0], folds=3) == []


def test_the_leader_is_never_pruned_and_ties_go_to_the_first_candidate():
    assert _pruned([[0.5, 0.9, 0.9]], [0, 1, 2], folds=2) == [0]
    p = hopeless([[0.5, 0.9, 0.9]], [0, 1, 2], 2, True)
    assert p[0].leader == 1


def test_only_alive_candidates_are_considered():
    # candidate 1 was pruned before (its fold-1 metric is NaN); it is neither leader nor pruned again
    assert _pruned([[0.9, 0.99, 0.5], [0.9, math.nan, 0.5]], [0, 2], folds=3) == [2]


def test_a_candidate_with_a_nan_metric_is_left_alone():
    assert _pruned([[0.9, math.nan, 0.1]], [0, 1, 2], folds=3) == [2]


def test_the_conf_is_off_by_default():
    assert SlaqConfig().prune is False
    assert SlaqConfig.from_conf({"spark.slaq.prune": "true"}.get).prune is True


def test_the_loop_marks_a_pruned_candidates_finished_fits_and_its_later_ones():
    statuses = Statuses()
    published = statuses.published
    loop = EpochLoop(FakePools(), "slaq", 0.5, observers=[statuses])
    loop.add(LiveJob("a0", 1.0, tuning=Tuning("cv", 0, 0, False)))
    loop.add(LiveJob("b0", 1.0, tuning=Tuning("cv", 1, 0, False)))
    loop.add(LiveJob("plain", 1.0))
    for name in ("a0", "b0", "plain"):
        loop.remove(name)
    loop.step()
    assert {r.job: r.why for r in published[-1].finished} == {"a0": ENDED, "b0": ENDED, "plain": ENDED}
    loop.mark_pruned("cv", [1])
    loop.add(LiveJob("b1", 1.0, tuning=Tuning("cv", 1, 1, False)))  # a fit already running when its candidate was pruned
    loop.remove("b1")
    loop.step()
    assert {r.job: r.why for r in published[-1].finished} == {"b0": PRUNED, "b1": PRUNED}
    loop.mark_pruned("cv", [1])  # marking again re-sends nothing
    loop.step()
    assert published[-1].finished == ()


@pytest.mark.parametrize("larger_better", [True, False])
def test_pruning_keeps_the_best_of_a_clear_grid(larger_better):
    sign = 1 if larger_better else -1
    folds = [[sign * v for v in (0.70, 0.92, 0.55, 0.91)], [sign * v for v in (0.71, 0.93, 0.56, 0.92)]]
    pruned = hopeless(folds[:1], [0, 1, 2, 3], 3, larger_better)
    assert {p.candidate for p in pruned} == {0, 2} and all(p.leader == 1 for p in pruned)


def test_a_pyspark_without_cache_spark_dataset_still_prunes_caching_folds_as_pyspark_4_0_does(monkeypatch):
    """pyspark 4.0's CrossValidator._fit caches each fold inline; 4.1 moved that into ``_cache_spark_dataset``."""
    from pyspark.ml import tuning as pyspark_tuning

    from slaq.integrations import pyspark_private
    from slaq.integrations.pyspark_private import TuningHelpers, tuning_helpers

    monkeypatch.delattr(pyspark_tuning, "_cache_spark_dataset")
    tuning_helpers.cache_clear()
    try:
        helpers = tuning_helpers()
        assert isinstance(helpers, TuningHelpers), helpers  # pruning stays on
        assert helpers.cache_dataset is pyspark_private.cached_fold
    finally:
        monkeypatch.undo()
        tuning_helpers.cache_clear()


def test_pyspark_private_helpers_resolve_here_and_a_missing_one_turns_pruning_off_with_one_warning(monkeypatch, caplog):
    from pyspark.ml import tuning as pyspark_tuning

    from slaq.integrations import tuners
    from slaq.integrations.pyspark_private import TuningHelpers, tuning_helpers

    tuning_helpers.cache_clear()
    assert isinstance(tuning_helpers(), TuningHelpers)
    monkeypatch.delattr(pyspark_tuning, "_parallelFitTasks")
    tuning_helpers.cache_clear()
    try:
        assert "lacks _parallelFitTasks" in str(tuning_helpers())
        tuners.install(prune=lambda uid, stopped: None)
        try:
            assert [r.levelname for r in caplog.records if "run unpruned" in r.getMessage()] == ["WARNING"]
        finally:
            tuners.uninstall()
    finally:
        monkeypatch.undo()
        tuning_helpers.cache_clear()
