import pytest

from slaq.metrics import THRESHOLDS, change_vs, loss_reference, mean_time_to_key, mean_times, reached, seconds_to_target, time_to_key, time_to_reduction
from slaq.stats.history import normalized_loss


def test_keys():
    assert [time_to_key(t) for t in THRESHOLDS] == ["time_to_90pct_s", "time_to_95pct_s"]
    assert mean_time_to_key(0.9) == "mean_time_to_90pct_s"


def test_time_to_reduction_is_the_first_time_past_that_share_of_the_whole_drop():
    times = [0.0, 1.0, 2.0, 3.0, 4.0]
    losses = [10.0, 4.0, 1.5, 1.0, 1.2]  # against first to lowest: 1, 1/3, 1/18, 0, 2/90
    assert time_to_reduction(times, losses, 0.9) == 2.0
    assert time_to_reduction(times, losses, 0.95) == 3.0
    assert time_to_reduction([0.0], [3.0], 0.9) is None
    assert time_to_reduction([0.0, 1.0], [3.0, 3.0], 0.9) is None  # never fell: no reduction to make 90% of
    assert time_to_reduction([0.0, 1.0], [1.0, 1.2], 0.9) is None
    assert time_to_reduction([], losses, 0.9) is None  # no time per loss
    assert reached(0.1, 0.9) and not reached(0.11, 0.9)


def test_time_to_target_exists_only_once_reached():
    assert seconds_to_target(10.0, 13.5) == 3.5
    assert seconds_to_target(10.0, None) is None  # no target, or not reached


def test_normalized_loss_before_a_floor_can_be_fitted_is_the_loss_over_the_first():
    """Two losses put a fitted floor anywhere (0.500 at every job's second loss); until the fit has its
    points the shown value is the loss over the first, so it falls with the raw loss."""
    losses = [0.6931, 0.6779, 0.6650]
    shown = [float(normalized_loss(losses[k], *loss_reference(losses[:k + 1], fitted_floor=losses[k] - 0.01))) for k in range(3)]
    assert shown == pytest.approx([1.0, 0.6779 / 0.6931, 0.6650 / 0.6931])
    assert loss_reference([0.6931, 0.6779, 0.6650, 0.66], fitted_floor=0.5) == (0.6931, 0.5)  # enough points: the fitted floor
    assert loss_reference([-1.0, -2.0], fitted_floor=-2.0) == (-1.0, -3.0)  # no bound at 0: a first loss's magnitude below the lowest
    assert loss_reference([], fitted_floor=0.0) == (1.0, 0.0)


def test_mean_times_skips_missing():
    jobs = [{"time_to_90pct_s": 2.0, "time_to_95pct_s": None}, {"time_to_90pct_s": 4.0, "time_to_95pct_s": 5.0}]
    assert mean_times(jobs, 2) == {"mean_time_to_90pct_s": 3.0, "mean_time_to_95pct_s": 5.0}
    assert mean_times([], 2) == {"mean_time_to_90pct_s": None, "mean_time_to_95pct_s": None}


def test_change_vs_baseline_is_negative_for_less_time_as_every_report_and_table_shows_it():
    ours = {"mean_normalized_loss": 0.05, "mean_time_to_90pct_s": 20.0, "mean_time_to_95pct_s": 40.0}
    base = {"mean_normalized_loss": 0.1, "mean_time_to_90pct_s": 80.0, "mean_time_to_95pct_s": 0.0}
    assert change_vs(ours, base) == {"mean_normalized_loss_change": pytest.approx(-0.5), "time_to_90pct_change": pytest.approx(-0.75)}
