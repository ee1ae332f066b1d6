"""The Python side of Spark Connect fits: the shim's param text back to values, and what the catalogue says of a fit."""

from __future__ import annotations

from slaq import messages
from slaq.integrations.connect import estimator_kind, fit_job, param_value


def test_param_values_come_back_as_python_values():
    assert param_value("true") is True and param_value("false") is False
    assert param_value("10") == 10 and isinstance(param_value("10"), int)
    assert param_value("0.1") == 0.1
    assert param_value("l-bfgs") == "l-bfgs"


def test_a_connect_fit_job_knows_its_estimator_and_whether_it_reports():
    lr = fit_job("LogisticRegression@op", "op", "org.apache.spark.ml.classification.LogisticRegression", {"maxIter": "5"})
    assert estimator_kind(lr.estimator) == "LogisticRegression" and lr.params == {"maxIter": 5}
    assert lr.reports is True
    km = fit_job("KMeans@op2", "op2", "org.apache.spark.ml.clustering.KMeans", {"k": "3"})
    assert km.reports is False


def test_connect_fit_messages_round_trip():
    m = messages.ConnectFit("LogisticRegression@op", "op", "org.apache.spark.ml.classification.LogisticRegression", {"regParam": "0.1"}, False)
    assert messages.decode(messages.encode([m])) == [m]


def test_connect_fits_join_the_loop_before_the_drain_with_their_first_losses_and_leave_after_it_with_their_last():
    from slaq.integrations.connect import ConnectFits
    from slaq.live.loop import EpochLoop
    from tests.fixtures import FakePools

    name, lr = "LogisticRegression@op", "org.apache.spark.ml.classification.LogisticRegression"

    class ConnectPools(FakePools):
        def __init__(self):
            super().__init__()
            self.script = [([messages.ConnectFit(name, "op", lr, {}, False)], [messages.Iteration(name, 1.0, 1.0, 0.0, 0.0, "mllib")]),
                           ([messages.ConnectFit(name, "op", lr, {}, True)], [messages.Iteration(name, 0.5, 2.0, 1.0, 0.0, "mllib")])]
            self.fits, self.iterations = [], []

        def poll_connect_fits(self):
            self.fits, self.iterations = self.script.pop(0)
            return self.fits

        def drain(self):
            return self.iterations, {}

    loop = EpochLoop(ConnectPools(), "fair", 1.0)
    loop.observers.append(ConnectFits(loop.pools, loop))
    loop.poll()
    assert list(loop.jobs) == [name] and loop.jobs[name].history.losses == [1.0] and loop.jobs[name].owner.reports is True
    loop.poll()
    (ended,) = loop.jobs.finished()
    assert list(loop.jobs) == [] and ended.name == name and ended.history.losses == [1.0, 0.5]
