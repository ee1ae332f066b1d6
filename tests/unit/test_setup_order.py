"""Set-up as scheduled work: spark.ml fits before their first loss are served in turn, shortest
predicted set-up first, and none starves (slaq.predict.setup and its use in the allocation)."""

from __future__ import annotations

import pytest

from slaq.live.config import SlaqConfig
from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.live.registry import ingest
from slaq.live.status import EXPLORING, QUEUED, SETUP
from slaq.messages import Iteration
from slaq.predict.prior import fit_key
from slaq.predict.setup import (
    DEFAULT_SETUP,
    LEFT_AT_LEAST,
    InSetup,
    SetupDone,
    predicted_setup,
    remaining_setup,
    response_ratio,
    setup_queue,
)
from tests.fixtures import FakeClock, FakePools

LR = fit_key("LogisticRegression", {"regParam": 0.01})
SVC = fit_key("LinearSVC", {"regParam": 0.0})
MB = 1e6


def test_a_set_up_is_predicted_per_input_byte_from_the_same_estimator_first():
    done = [SetupDone("LogisticRegression", 100 * MB, 4.0), SetupDone("LogisticRegression", 200 * MB, 8.0),
            SetupDone("LinearSVC", 100 * MB, 20.0)]
    assert predicted_setup("LogisticRegression", 300 * MB, done) == pytest.approx(12.0)
    assert predicted_setup("LinearSVC", 50 * MB, done) == pytest.approx(10.0)
    assert predicted_setup("LinearRegression", 100 * MB, done) == pytest.approx(4.0)  # any estimator: median rate 0.04/MB
    assert predicted_setup("LogisticRegression", None, done) == pytest.approx(6.0)  # bytes unknown: median core-seconds
    assert predicted_setup("LogisticRegression", 100 * MB, []) is None


def test_what_is_left_is_the_prediction_less_what_the_fit_used_never_nothing():
    done = [SetupDone("LogisticRegression", None, 10.0)]
    assert remaining_setup(InSetup("a", "LogisticRegression", None, 4.0, 0.0), done) == pytest.approx(6.0)
    assert remaining_setup(InSetup("a", "LogisticRegression", None, 30.0, 0.0), done) == pytest.approx(10.0 * LEFT_AT_LEAST)
    assert remaining_setup(InSetup("a", "LogisticRegression", None, 0.0, 0.0), []) == pytest.approx(DEFAULT_SETUP)


def test_the_queue_serves_the_shortest_first_and_equals_in_arrival_order():
    done = [SetupDone("LogisticRegression", None, 4.0), SetupDone("LinearSVC", None, 20.0)]
    fits = [InSetup("svc", "LinearSVC", None, 0.0, 0.0), InSetup("lr", "LogisticRegression", None, 0.0, 0.0)]
    assert [f.job for f, _ in setup_queue(fits, done, 2.0, 0.0)] == ["lr", "svc"]
    same = [InSetup("second", "LogisticRegression", None, 0.0, 1.0), InSetup("first", "LogisticRegression", None, 0.0, 0.5)]
    assert [f.job for f, _ in setup_queue(same, done, 2.0, 1.0)] == ["first", "second"]


def test_a_long_set_up_overtakes_shorter_arrivals_once_it_waited_long_enough():
    """Highest response ratio next: a fit needing 20 core-seconds on 2 cores (10 s of service) that
    waited 30 s has ratio 4; a 4 core-second fit (2 s of service) that waited 5 s has 3.5, one that
    waited 7 s has 4.5."""
    done = [SetupDone("LogisticRegression", None, 4.0), SetupDone("LinearSVC", None, 20.0)]
    long_ = InSetup("svc", "LinearSVC", None, 0.0, 0.0)
    assert response_ratio(20.0, 30.0, 2.0) == pytest.approx(4.0)
    assert [f.job for f, _ in setup_queue([long_, InSetup("lr", "LogisticRegression", None, 0.0, 25.0)], done, 2.0, 30.0)] == ["svc", "lr"]
    assert [f.job for f, _ in setup_queue([long_, InSetup("lr", "LogisticRegression", None, 0.0, 23.0)], done, 2.0, 30.0)] == ["lr", "svc"]


def test_fits_in_set_up_get_cores_in_turn_while_a_fit_with_losses_keeps_its_share():
    clock = FakeClock()
    loop = EpochLoop(FakePools(), "slaq", 1.0, clock=clock, setup_order=True)
    running = loop.add(LiveJob("running", reports=True, fit=LR))
    ingest(loop.jobs, [Iteration("running", 1.0 - 0.1 * k, float(k), 2.0 * k, 0.0, "mllib") for k in range(6)])
    assert running.setup_core_seconds == 0.0
    clock.now = 1.0
    first = loop.add(LiveJob("first", reports=True, fit=SVC))
    clock.now = 2.0
    second = loop.add(LiveJob("second", reports=True, fit=SVC))
    alloc = loop.allocate(4.0)
    whys = {name: figures.why for name, figures in zip(loop._decided.jobs, loop._decided.figures)}
    assert whys == {"running": whys["running"], "first": SETUP, "second": QUEUED}
    assert alloc["second"] == 0.0 and alloc["first"] > 0.0 and alloc["running"] > 0.0
    assert sum(alloc.values()) == pytest.approx(4.0)
    assert loop._decided.queued == frozenset({"second"})

    ingest(loop.jobs, [Iteration("first", 5.0, 3.0, 6.0, 0.0, "mllib")])  # its first loss, after 6 core-seconds
    assert first.setup_core_seconds == 6.0
    clock.now = 3.0
    alloc = loop.allocate(4.0)
    whys = {name: figures.why for name, figures in zip(loop._decided.jobs, loop._decided.figures)}
    assert whys["first"] == EXPLORING and whys["second"] == SETUP and alloc["second"] > 0.0
    loop.remove("first")
    assert [d.core_seconds for d in loop.allocator.setup_book.done()] == [6.0]
    assert second.in_setup()


def test_the_queue_is_off_by_default_and_for_policies_that_do_not_rank_by_gain():
    for loop in (EpochLoop(FakePools(), "slaq", 1.0), EpochLoop(FakePools(), "fair", 1.0, setup_order=True)):
        loop.add(LiveJob("a", reports=True, fit=LR))
        loop.add(LiveJob("b", reports=True, fit=LR))
        alloc = loop.allocate(4.0)
        assert alloc["a"] > 0 and alloc["b"] > 0 and not loop._decided.queued
    assert SlaqConfig.from_conf({"spark.slaq.setupOrder": "true"}.get).setup_order is True
    assert SlaqConfig.from_conf({}.get).setup_order is False


def test_a_job_not_known_to_report_losses_is_not_queued():
    loop = EpochLoop(FakePools(), "slaq", 1.0, setup_order=True)
    loop.add(LiveJob("by-hand"))  # a slaq.job reporting by hand: nothing known about its set-up
    loop.add(LiveJob("fit", reports=True, fit=LR))
    loop.add(LiveJob("other-fit", reports=True, fit=LR))
    alloc = loop.allocate(4.0)
    assert alloc["by-hand"] > 0 and alloc["fit"] > 0 and alloc["other-fit"] == 0.0
