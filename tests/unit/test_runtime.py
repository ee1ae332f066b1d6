import numpy as np

from slaq.predict.runtime import estimate_runtime, iterations_in


def test_learns_core_seconds_per_iteration():
    cost, overhead = estimate_runtime([8.0] * 10, [2.0] * 10, [4.0] * 10)
    assert cost == 8.0 and overhead == 0.0


def test_learns_fixed_overhead():
    cores = [1.0, 2.0, 4.0, 8.0, 2.0]
    walls = [8.0 / c + 0.5 for c in cores]
    cost, overhead = estimate_runtime([8.0] * 5, walls, cores)
    assert cost == 8.0 and np.isclose(overhead, 0.5)


def test_recent_costs_weigh_more():
    cost, _ = estimate_runtime([1.0] * 10 + [3.0] * 5)
    assert np.mean([1.0] * 10 + [3.0] * 5) + 0.5 < cost < 3.0


def test_nothing_observed():
    assert estimate_runtime([]) == (None, 0.0)


def test_iterations_scale_with_fractional_cores():
    n = iterations_in(2.0, np.array([0.0, 0.25, 1.0, 4.0]), np.full(4, 1.0), np.zeros(4))
    assert np.allclose(n, [0.0, 0.5, 2.0, 8.0])
    with_overhead = iterations_in(2.0, np.array([1.0]), np.array([1.0]), np.array([1.0]))
    assert np.allclose(with_overhead, [1.0])
