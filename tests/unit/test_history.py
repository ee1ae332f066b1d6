import math

import numpy as np
import pytest

from slaq.stats.history import InvalidReport, JobHistory, normalized_loss, normalized_reductions


def test_normalized_reductions_divide_by_running_max():
    out = normalized_reductions([10.0, 6.0, 4.0, 3.0, 2.5])
    assert np.allclose(out, [1.0, 0.5, 0.25, 0.125])


def test_later_larger_reduction_resets_scale():
    out = normalized_reductions([10.0, 9.0, 5.0, 4.0])
    assert np.allclose(out, [1.0, 1.0, 0.25])


def test_flat_and_rising_starts_normalize_to_zero_not_nan():
    assert np.allclose(normalized_reductions([1.0, 1.0, 1.0]), [0.0, 0.0])
    out = normalized_reductions([1.0, 1.2, 0.9, 0.8])
    assert np.all(np.isfinite(out))
    assert out[0] == 0.0 and out[1] == 1.0 and math.isclose(out[2], 0.1 / 0.3)


def test_noisy_sgd_increase_gives_negative_value():
    out = normalized_reductions([5.0, 3.0, 3.5, 2.0])
    assert out[1] < 0 and out[2] > 0


def test_normalized_loss_runs_from_one_to_zero():
    out = normalized_loss([8.0, 5.0, 2.0], first=8.0, floor=2.0)
    assert np.allclose(out, [1.0, 0.5, 0.0])
    assert np.allclose(normalized_loss([1.0, 1.0], first=1.0, floor=1.0), [0.0, 0.0])  # no span: no division by zero
    assert np.allclose(normalized_loss([[4.0], [3.0]], first=[[4.0], [5.0]], floor=[[2.0], [1.0]]), [[1.0], [0.5]])  # many jobs at once


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), "0.5", None, True, [1.0]])
def test_bad_loss_rejected_and_history_unchanged(bad):
    h = JobHistory()
    h.report(1.0)
    h.report(0.5, 2.0, 1.0, 2.0)
    before = (list(h.losses), list(h.core_seconds), h.max_reduction)
    with pytest.raises(InvalidReport):
        h.report(bad)
    assert (h.losses, h.core_seconds, h.max_reduction) == before


@pytest.mark.parametrize("kwargs", [{"core_seconds": -1.0}, {"core_seconds": 1.0, "wall_seconds": -0.1},
                                    {"core_seconds": float("nan")}, {"core_seconds": 1.0, "wall_seconds": 1.0, "cores": 0}])
def test_negative_or_nonfinite_times_rejected(kwargs):
    h = JobHistory()
    with pytest.raises(InvalidReport):
        h.report(1.0, **kwargs)
    assert h.iterations == 0 and h.core_seconds == []


def test_scale_is_largest_reduction():
    h = JobHistory()
    for v in (10.0, 7.0, 6.0, 8.0, 2.0):
        h.report(v)
    assert h.scale() == 6.0
    assert JobHistory().scale() == 1.0
