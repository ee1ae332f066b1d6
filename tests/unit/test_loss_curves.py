import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slaq.predict.loss_curves import (
    EXPONENTIAL,
    LINEAR,
    SUBLINEAR,
    Curve,
    decay_weights,
    fit_exponential,
    fit_loss_curve,
    fit_sublinear,
    geometric,
    strawman,
)


def test_sublinear_fit_recovers_curve_and_extrapolates():
    k = np.arange(30, dtype=float)
    y = 1.0 / (0.02 * k * k + 0.5 * k + 1.0) + 0.3
    sse, curve = fit_sublinear(k[:20], y[:20], decay_weights(20))
    assert curve.family == SUBLINEAR and sse < 1e-8
    assert np.allclose(curve(k[20:]), y[20:], rtol=1e-3)


def test_exponential_fit_recovers_curve_and_extrapolates():
    k = np.arange(30, dtype=float)
    y = 0.8 ** (k - 2.0) + 0.1
    sse, curve = fit_exponential(k[:15], y[:15], decay_weights(15))
    assert curve.family == EXPONENTIAL and sse < 1e-8
    assert np.allclose(curve(k[15:]), y[15:], rtol=1e-3)


def test_fit_picks_the_better_family():
    k = np.arange(20, dtype=float)
    assert fit_loss_curve(0.7 ** k + 1.0).family == EXPONENTIAL
    assert fit_loss_curve(1.0 / (0.3 * k + 1.0) + 2.0).family == SUBLINEAR


def test_weighted_fit_beats_strawman_ten_ahead_on_gd_curve():
    k = np.arange(60, dtype=float)
    y = 1.0 / (0.1 * k + 1.0) + 0.2
    fit_err = abs(fit_loss_curve(y[:30])(39.0) - y[39])
    straw_err = abs(strawman(y[:30])(39.0) - y[39])
    assert fit_err < straw_err / 5


def test_anchored_on_last_observation():
    rng = np.random.default_rng(3)
    y = 1.0 / (0.2 * np.arange(25) + 1.0) + 0.05 * rng.random(25)
    curve = fit_loss_curve(y)
    assert np.isclose(curve(24.0), y[-1])


def test_short_history_falls_back_to_geometric_decay():
    curve = fit_loss_curve([10.0, 6.0, 4.0])
    assert curve.family == EXPONENTIAL  # geometric: reductions shrink by 2/4 each iteration
    assert np.isclose(curve(3.0), 3.0) and np.isclose(curve(4.0), 2.5)
    assert fit_loss_curve([5.0]).family == LINEAR


def test_flat_or_rising_history_predicts_no_reduction():
    assert fit_loss_curve([1.0] * 10)(20.0) == 1.0
    assert geometric([1.0, 1.2]).family == LINEAR and geometric([1.0, 1.2])(5.0) == 1.2


def test_nonnegative_losses_never_predicted_below_zero():
    curve = fit_loss_curve([11.3, 6.9, 1.65, 1.36, 1.05])
    assert curve(50.0) >= 0.0


def test_strawman_repeats_last_reduction():
    assert strawman([5.0, 4.0, 3.5])(4.0) == 2.5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=40), st.floats(0.01, 100), st.integers(1, 30))
def test_prediction_is_finite_and_never_rises_above_last_loss(steps, start, ahead):
    losses = start - np.cumsum(np.asarray(steps) * start / (2 * len(steps)))
    losses = np.concatenate([[start], losses])
    curve = fit_loss_curve(losses)
    k_last = len(losses) - 1
    future = curve(np.arange(k_last, k_last + ahead + 1, dtype=float))
    assert np.all(np.isfinite(future))
    assert np.all(future <= losses[-1] + 1e-9 * max(1.0, abs(losses[-1])))


def test_curve_floor():
    assert Curve(SUBLINEAR, (1.0, 1.0, 1.0, 0.25)).floor == 0.25
    assert Curve(EXPONENTIAL, (-0.1, 0.0, 0.5, 0.0)).floor == 0.5
    assert Curve(LINEAR, (1.0, 0.1, 3.0, 0.0)).floor == -np.inf


def test_noisy_minibatch_losses_fit_without_numeric_warnings():
    """Minibatch losses scatter around their curve, so for many asymptotes neither family fits; the search over
    the asymptote must stay finite (scipy's bounded search warned on them, on stderr of every driver)."""
    rng = np.random.default_rng(7)
    k = np.arange(40, dtype=float)
    for _ in range(40):
        losses = 0.6 * np.exp(-0.4 * k) + rng.normal(0, 0.1, k.size)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            curve = fit_loss_curve(losses)
        assert np.isfinite(curve(50.0))
