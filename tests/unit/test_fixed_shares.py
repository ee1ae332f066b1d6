"""The shares the epoch loop hands out by rule, not by the policy: closed pools and jobs at their
target get the minimum share, jobs that report no loss an even share; and the generated names of
zero-change spark.ml fit jobs. Pure: no Spark."""

from __future__ import annotations

import pytest

from slaq.enforce.pools import Iteration, PoolState
from slaq.live.allocation import fixed_shares
from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.live.registry import NO_LOSS_EPOCHS
from slaq.live.target import Target
from slaq.names import MAX_NAME, check_job_name, fit_job_name
from tests.fixtures import FakePools


class ScriptedPools(FakePools):
    """:class:`FakePools` (4 cores) whose drain() answers are scripted per epoch."""

    def __init__(self):
        super().__init__()
        self.script: list[tuple[list, dict]] = []

    def drain(self):
        return self.script.pop(0) if self.script else ([], {})


def _job(name, losses=(), weight=1.0, **kw):
    j = LiveJob(name, weight, **kw)
    for v in losses:
        j.history.report(v)
    return j


def test_target_reached_and_closed_pools_get_the_minimum_share_silent_jobs_an_even_one():
    jobs = [_job("learning", [1.0, 0.5]), _job("done", [1.0, 0.1], satisfied=True),
            _job("silent", silent_epochs=NO_LOSS_EPOCHS, weight=2.0), _job("new", silent_epochs=NO_LOSS_EPOCHS - 1)]
    shares = fixed_shares(jobs, ["closed"], capacity=8.0)
    # 5 pools on 8 cores: the minimum share is one core; the silent job's even share is 8 x 2 / 6
    assert shares == pytest.approx({"done": 1.0, "closed": 1.0, "silent": 8.0 * 2.0 / 6.0})
    assert fixed_shares([], [], 8.0) == {} and fixed_shares(jobs, [], 0.0) == {}
    many_closed = fixed_shares([], [f"c{i}" for i in range(10)], capacity=4.0)
    assert sum(many_closed.values()) <= 4.0 and len(set(many_closed.values())) == 1  # more pools than cores: half an even share each


def test_the_loop_steers_the_rest_and_keeps_a_closed_pool_throttled_until_it_is_gone():
    pools = ScriptedPools()
    loop = EpochLoop(pools, "fair", 1.0)
    loop.add(LiveJob("a", 1.0))
    loop.add(LiveJob("b", 1.0, Target(loss=0.5)))
    pools.script = [([Iteration("a", 1.0, 1.0, 1.0, 0.0, "python"), Iteration("b", 2.0, 1.0, 1.0, 0.0, "mllib")],
                     {"a": PoolState("a", 1.0, 0.0, 1, False), "gone": PoolState("gone", 3.0, 0.0, 2, True)}),
                    ([], {}), ([Iteration("b", 0.3, 2.0, 2.0, 0.0, "mllib")], {})]
    first = loop.step()
    assert first == pytest.approx({"gone": 1.0, "a": 1.5, "b": 1.5})  # a closed pool with work: the minimum share
    assert loop.step() == pytest.approx({"a": 2.0, "b": 2.0})  # its pool was removed (no longer reported): nothing
    assert loop.step() == pytest.approx({"a": 3.0, "b": 1.0})
    assert pools.deposits[-1] == pytest.approx({"a": 3.0, "b": 1.0})


def test_a_job_without_losses_is_explored_then_gets_an_even_share_then_is_steered_once_it_reports():
    pools = ScriptedPools()
    loop = EpochLoop(pools, "slaq", 1.0)
    loop.add(LiveJob("kmeans", 1.0))
    loop.add(LiveJob("lr", 1.0))
    lr = [Iteration("lr", v, float(k), float(k), 0.0, "mllib") for k, v in enumerate([1.0, 0.6, 0.4, 0.3, 0.25])]
    pools.script = [(lr[:2], {}), (lr[2:3], {}), (lr[3:4], {})]
    for _ in range(NO_LOSS_EPOCHS - 1):
        loop.step()
    assert loop.jobs["kmeans"].silent_epochs == NO_LOSS_EPOCHS - 1 and "kmeans" not in fixed_shares(list(loop.jobs.values()), [], 4.0)
    alloc = loop.step()
    assert alloc["kmeans"] == pytest.approx(2.0)  # no loss after NO_LOSS_EPOCHS epochs: an even share
    pools.script = [([Iteration("kmeans", 5.0, 9.0, 9.0, 0.0, "python")], {})]
    loop.step()
    assert loop.jobs["kmeans"].silent_epochs == 0  # it reported: steered by the policy again


def test_the_target_is_checked_where_the_losses_are_ingested_and_said_once(caplog):
    pools = ScriptedPools()
    loop = EpochLoop(pools, "fair", 1.0)
    job = loop.add(LiveJob("a", 1.0, Target(loss=0.6)))
    pools.script = [([Iteration("a", 1.0, 1.0, 1.0, 0.0, "mllib"), Iteration("ghost", 1.0, 1.0, 1.0, 0.0, "mllib"),
                      Iteration("a", 0.5, 2.0, 2.0, 0.0, "python")], {}),
                    ([Iteration("a", 0.4, 3.0, 3.0, 0.0, "python")], {})]
    with caplog.at_level("INFO", logger="slaq"):
        loop.poll()
        assert job.history.losses == [1.0, 0.5] and job.satisfied  # in order; a job it does not know is dropped
        loop.poll()
    said = [r.getMessage() for r in caplog.records if "target" in r.getMessage()]
    assert said == ["SLAQ: job a reached its target after 2 losses; it keeps running on the minimum share"]


def test_fit_job_names_are_readable_unique_and_valid():
    name = fit_job_name("LogisticRegression", {"regParam": 0.1, "elasticNetParam": 0.0, "fitIntercept": True, "thresholds": [0.3, 0.7]}, 3)
    assert name == "LogisticRegression[elasticNetParam=0,fitIntercept=true,regParam=0.1,thresholds=[0.3,0.7]]#3"
    assert fit_job_name("KMeans", {}, 12) == "KMeans[]#12"
    long = fit_job_name("X", {"solver": "a\tb\nc" * 100}, 1)
    assert check_job_name(long) == long and len(long) <= MAX_NAME + len("X[]#1")
    assert fit_job_name("X", {"m": object()}, 1) == "X[m=object]#1"


def test_a_fit_known_to_report_stays_with_the_policy_until_its_first_loss_one_known_not_to_gets_an_even_share_at_once():
    """spark.ml's first iteration can come many epochs after the fit starts (summary passes over the
    data): an iterative fit must not be put on the even share meanwhile, and a KMeans need not wait."""
    pools = ScriptedPools()
    loop = EpochLoop(pools, "slaq", 1.0)
    loop.add(LiveJob("lr", 1.0, reports=True))
    loop.add(LiveJob("kmeans", 1.0, reports=False))
    loop.add(LiveJob("explicit", 1.0))
    for _ in range(NO_LOSS_EPOCHS + 2):
        loop.step()
    shares = fixed_shares(list(loop.jobs.values()), [], 3.0)
    assert shares == pytest.approx({"kmeans": 1.0, "explicit": 1.0})  # lr is still the policy's (a new job)
    assert loop.step()["lr"] > 0


def test_which_spark_ml_fits_report_a_loss_is_known_from_the_estimator_and_its_params():
    from slaq.integrations.catalogue import reports_loss

    assert reports_loss("LogisticRegression", {}) is True
    assert reports_loss("LinearSVC", {"regParam": 0.1}) is True
    assert reports_loss("MultilayerPerceptronClassifier", {}) is True
    assert reports_loss("MultilayerPerceptronClassifier", {"solver": "gd"}) is False
    assert reports_loss("LinearRegression", {"solver": "l-bfgs"}) is True
    assert reports_loss("LinearRegression", {"solver": "normal"}) is False
    assert reports_loss("LinearRegression", {"solver": "normal", "elasticNetParam": 0.5, "regParam": 0.1}) is True
    assert reports_loss("LinearRegression", {}) is None  # "auto": the normal equation or l-bfgs, by the data
    assert reports_loss("KMeans", {"k": 3}) is False and reports_loss("RandomForestClassifier", {}) is False
    assert reports_loss("GBTClassifier", {}) is False and reports_loss("GBTRegressor", {"maxIter": 5}) is False  # error per tree not captured
    assert reports_loss("SomeThirdPartyEstimator", {}) is None


def test_a_silent_job_is_logged_once_whether_it_ends_early_or_late(caplog):
    """One line per job that reports no loss: at its NO_LOSS_EPOCHS-th silent epoch, or at its end if
    it ends sooner; none for a job that reported, or that was known in advance to report none."""
    pools = ScriptedPools()
    loop = EpochLoop(pools, "fair", 1.0)
    for name, reports in (("short", None), ("long", None), ("lr", None), ("kmeans", False)):
        loop.add(LiveJob(name, 1.0, reports=reports))
    pools.script = [([Iteration("lr", 1.0, 0.0, 0.0, 0.0, "python")], {})]
    with caplog.at_level("INFO", logger="slaq"):
        loop.step()
        loop.remove("short")
        for _ in range(NO_LOSS_EPOCHS):
            loop.step()
        for name in ("long", "lr", "kmeans"):
            loop.remove(name)
    silent = [r.getMessage() for r in caplog.records if "no loss" in r.getMessage() or "without any loss" in r.getMessage()]
    assert [m.split()[2] for m in silent] == ["short", "long"], silent
