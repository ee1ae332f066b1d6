"""The Python side of Spark Connect fits: the shim's param text back to values, and what the catalogue says of a fit."""

from __future__ import annotations

from slaq import messages
from slaq.connect import estimator_kind, fit_job, param_value


def test_param_values_come_back_as_python_values():
    assert param_value("true") is True and param_value("false") is False
    assert param_value("10") == 10 and isinstance(param_value("10"), int)
    assert param_value("0.1") == 0.1
    assert param_value("l-bfgs") == "l-bfgs"


def test_a_connect_fit_job_knows_its_estimator_and_whether_it_reports():
    lr = fit_job("LogisticRegression@op", "op", "org.apache.spark.ml.classification.LogisticRegression", {"maxIter": "5"})
    assert estimator_kind(lr.estimator) == "LogisticRegression" and lr.params == {"maxIter": 5}
    assert lr.reports is True and lr.losses == [] and lr.core_seconds == 0.0
    km = fit_job("KMeans@op2", "op2", "org.apache.spark.ml.clustering.KMeans", {"k": "3"})
    assert km.reports is False


def test_connect_fit_messages_round_trip():
    m = messages.ConnectFit("LogisticRegression@op", "op", "org.apache.spark.ml.classification.LogisticRegression", {"regParam": "0.1"}, False)
    assert messages.decode(messages.encode([m])) == [m]
