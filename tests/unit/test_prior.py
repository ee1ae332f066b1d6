"""The prior before a spark.ml fit's first losses: its sources, its blending with the fit's own
losses, and the allocation it changes."""

from __future__ import annotations

import numpy as np
import pytest

from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.predict.forecast import ForecastTable
from slaq.predict.prior import (
    ESTIMATOR_DEFAULT,
    PRIOR_UNTIL,
    SAME_ESTIMATOR,
    SAME_PARAMS,
    STRENGTH,
    PriorBook,
    build_prior,
    default_prior,
    fit_key,
    placed,
    prior_forecast,
    reference,
    uses_prior,
)
from slaq.stats.history import JobHistory
from srsupport.slaq_watch import FirstLossCores
from tests.fixtures import FakePools

LR = fit_key("LogisticRegression", {"regParam": 0.01, "maxIter": 40})


def history(losses, cost=1.0) -> JobHistory:
    h = JobHistory()
    for i, v in enumerate(losses):
        h.report(v, *(() if i == 0 else (cost, cost / 2, 2.0)))
    return h


def curve(first, floor, ratio, n):
    return [floor + (first - floor) * ratio**k for k in range(n)]


def test_a_key_is_the_same_from_pyspark_values_and_spark_connect_text():
    assert fit_key("LinearSVC", {"regParam": 0.01, "maxIter": 40, "fitIntercept": True}) == \
        fit_key("LinearSVC", {"maxIter": "40", "regParam": "0.01", "fitIntercept": "true"})
    assert fit_key("LinearSVC", {"regParam": 0.01}) != fit_key("LinearSVC", {"regParam": 0.1})


def test_the_same_params_win_over_other_candidates_and_the_default():
    same = reference(LR, history(curve(1.0, 0.2, 0.5, 8)), finished=True)
    other = reference(fit_key("LogisticRegression", {"regParam": 0.0}), history(curve(1.0, 0.2, 0.9, 30)), finished=True)
    svc = reference(fit_key("LinearSVC", {}), history(curve(1.0, 0.2, 0.1, 3)), finished=True)
    prior = build_prior(LR, [other, same, svc])
    assert (prior.source, prior.strength, prior.iterations) == (SAME_PARAMS, STRENGTH[SAME_PARAMS], 7)
    assert prior.shape == pytest.approx(np.minimum.accumulate((np.array(curve(1.0, 0.2, 0.5, 8)) - curve(1.0, 0.2, 0.5, 8)[-1])
                                                              / (0.8 - 0.8 * 0.5**7)))
    assert prior.relative_span == pytest.approx(0.8 * (1 - 0.5**7))
    assert build_prior(LR, [other, svc]).source == SAME_ESTIMATOR
    assert build_prior(LR, [svc]).source == ESTIMATOR_DEFAULT
    assert build_prior(LR, [svc]).cost is None


def test_a_running_fit_teaches_nothing_before_its_curve_can_be_fitted():
    """A running reference with fewer than MIN_FIT_POINTS losses has no floor to normalize by: the
    next fit of its estimator falls back to the estimator default, as without it."""
    for n in (2, 3):
        running = reference(LR, history(curve(1.0, 0.2, 0.5, n)), finished=False)
        assert build_prior(LR, [running]).source == ESTIMATOR_DEFAULT
    assert build_prior(LR, [reference(LR, history(curve(1.0, 0.2, 0.5, 4)), finished=False)]).source == SAME_PARAMS
    assert build_prior(LR, [reference(LR, history(curve(1.0, 0.2, 0.5, 2)), finished=True)]).source == SAME_PARAMS


def test_a_running_fit_of_the_same_params_teaches_its_shape_but_not_its_end():
    running = reference(LR, history(curve(1.0, 0.2, 0.5, 6)), finished=False)
    prior = build_prior(LR, [running])
    assert prior.source == SAME_PARAMS
    assert prior.iterations >= 6  # it has not ended: at least as long as it ran, at least the default
    assert prior.shape[1] == pytest.approx(0.5, abs=0.05)  # its normalized first reduction, by its fitted floor


def test_the_estimator_default_follows_max_iter_and_the_closed_form_solver():
    assert default_prior(fit_key("LogisticRegression", {"maxIter": 5})).iterations == 4
    assert default_prior(fit_key("LogisticRegression", {})).iterations == 10
    assert default_prior(fit_key("MultilayerPerceptronClassifier", {"maxIter": 40})).iterations == 39
    assert default_prior(fit_key("LinearRegression", {"solver": "normal"})).iterations == 1
    assert default_prior(fit_key("SomethingNew", {})).shape[0] == 1.0


def test_the_span_blends_the_prior_with_the_fits_own_reductions_by_strength():
    ref = reference(LR, history(curve(2.0, 1.0, 0.5, 10)), finished=True)  # relative span ~0.5
    prior = build_prior(LR, [ref])
    assert placed(prior, []) == (1.0, 1.0)
    first, span = placed(prior, [4.0])  # one loss: the prior's relative span in the fit's units
    assert (first, span) == (4.0, pytest.approx(prior.relative_span * 4.0))
    own = curve(4.0, 0.0, 0.5, 3)  # the fit's reductions say its span is 4
    _, blended = placed(prior, own)
    s = prior.strength
    assert blended == pytest.approx((s * prior.relative_span * 4.0 + 2 * 4.0) / (s + 2), rel=0.02)


def test_the_prior_predicts_a_new_fold_from_the_other_folds():
    folds = [curve(0.7, 0.3, 0.55 + 0.02 * f, 14) for f in range(3)]
    book = PriorBook()
    for f in folds[:2]:
        book.record(LR, history(f))
    prior = build_prior(LR, book.finished())
    held_out = np.array(folds[2])
    span = held_out[0] - held_out[-1]
    for n in (0, 1, 3):
        f = prior_forecast("new", history(folds[2][:n]), prior)
        k = np.arange(max(n, 1), 14, dtype=float)
        predicted = f.curve(k)
        truth = (held_out[k.astype(int)] - held_out[-1]) / span if n == 0 else held_out[k.astype(int)]
        err = np.abs(predicted - truth) / (1.0 if n == 0 else span)
        assert err.mean() < 0.05, (n, err)


def test_the_fits_own_curve_takes_over_after_enough_losses():
    assert uses_prior(LR, history([1.0] * (PRIOR_UNTIL - 1)))
    assert not uses_prior(LR, history([1.0] * PRIOR_UNTIL))
    assert not uses_prior(None, history([]))


def test_before_any_loss_a_known_long_fit_gets_the_cores_a_known_short_one_cannot_use():
    """Two fits arrive together; the application already ran one of each estimator: a LinearRegression
    that converged in 4 iterations and an MLP that was still falling after 40. Today both are new jobs,
    told apart by nothing; with the prior, SLAQ gives the short one what finishes it within the epoch
    and the rest to the long one."""
    short = fit_key("LinearRegression", {"regParam": 0.0})
    long_ = fit_key("MultilayerPerceptronClassifier", {"layers": [20, 8, 2]})
    allocations = {}
    for prior in (False, True):
        for policy in ("slaq", "slaq-maxmin"):
            loop = EpochLoop(FakePools(), policy, 2.0, prior=prior, setup_order=False)  # the prior alone: no set-up queue
            for name, key, losses in (("s0", short, curve(2.0, 1.0, 0.2, 5)), ("l0", long_, curve(2.0, 1.0, 0.93, 40))):
                loop.add(LiveJob(name, 1.0, reports=True, history=history(losses), fit=key))
                loop.remove(name)
            loop.add(LiveJob("short", 1.0, reports=True, fit=short))
            loop.add(LiveJob("long", 1.0, reports=True, fit=long_))
            allocations[prior, policy] = loop.allocate(8.0)
    for policy in ("slaq", "slaq-maxmin"):
        assert allocations[True, policy]["long"] > 2 * allocations[True, policy]["short"]
    assert allocations[False, "slaq-maxmin"]["long"] == allocations[False, "slaq-maxmin"]["short"]


def test_the_prior_cost_per_iteration_replaces_the_median_of_other_jobs():
    prior = build_prior(LR, [reference(LR, history(curve(1.0, 0.0, 0.5, 6), cost=7.0), finished=True)])
    table = ForecastTable([prior_forecast("new", history([]), prior)], 2.0)
    assert table.cost[0] == pytest.approx(7.0)


def test_a_watcher_sees_each_jobs_cores_before_its_first_loss():
    watch = FirstLossCores()
    loop = EpochLoop(FakePools(), "fair", 2.0, observers=[watch])
    job = loop.add(LiveJob("a", 1.0, reports=True, fit=LR))
    loop.add(LiveJob("b", 1.0, reports=True))
    loop.allocate(4.0)
    job.history.report(1.0)
    loop.allocate(4.0)  # after its first loss: not counted
    loop.remove("a")
    assert watch.ended == {"a": 2.0}
    assert [r.key for r in loop.prior_book.finished()] == []  # one loss teaches no curve
