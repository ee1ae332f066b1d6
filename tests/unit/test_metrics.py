import pytest

from slaq.metrics import THRESHOLDS, mean_time_to_key, mean_times, reached, reduction_vs, time_to_key, time_to_threshold


def test_keys():
    assert [time_to_key(t) for t in THRESHOLDS] == ["time_to_90pct_s", "time_to_95pct_s"]
    assert mean_time_to_key(0.9) == "mean_time_to_90pct_s"


def test_time_to_threshold_uses_first_and_last_loss():
    times = [0.0, 1.0, 2.0, 3.0]
    losses = [10.0, 4.0, 1.5, 1.0]  # normalized: 1, 1/3, 1/18, 0
    assert time_to_threshold(times, losses, 0.9) == 2.0
    assert time_to_threshold(times, losses, 0.95) == 3.0
    assert time_to_threshold([0.0], [3.0], 0.9) is None
    assert time_to_threshold([0.0, 1.0], [3.0, 3.0], 0.9) == 0.0  # never fell: done at once
    assert reached(0.1, 0.9) and not reached(0.11, 0.9)


def test_mean_times_skips_missing():
    jobs = [{"time_to_90pct_s": 2.0, "time_to_95pct_s": None}, {"time_to_90pct_s": 4.0, "time_to_95pct_s": 5.0}]
    assert mean_times(jobs, 2) == {"mean_time_to_90pct_s": 3.0, "mean_time_to_95pct_s": 5.0}
    assert mean_times([], 2) == {"mean_time_to_90pct_s": None, "mean_time_to_95pct_s": None}


def test_reduction_vs_baseline():
    ours = {"mean_normalized_loss": 0.05, "mean_time_to_90pct_s": 20.0, "mean_time_to_95pct_s": 40.0}
    base = {"mean_normalized_loss": 0.1, "mean_time_to_90pct_s": 80.0, "mean_time_to_95pct_s": 0.0}
    assert reduction_vs(ours, base) == {"mean_normalized_loss_reduction": pytest.approx(0.5), "time_to_90pct_reduction": pytest.approx(0.75)}
