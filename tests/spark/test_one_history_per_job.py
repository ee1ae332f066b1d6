"""One history per job on a real local-cluster Spark: losses spark.ml logs in the JVM and losses
reported from Python land in the same job history, and targets work for spark.ml fits (minimum share
once reached, never killed mid-fit)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import slaq
from slaq.policy.base import unit
from tests.fixtures import linear_labels


@pytest.fixture(scope="module")
def scheduler(spark):
    s = slaq.attach(spark)
    assert s.enabled
    return s


@pytest.fixture(scope="module")
def data(spark):
    return linear_labels(spark, 500, [1.5, -1.0, 0.5], seed=5, partitions=4).cache()


def _wait_epochs(loop, n):
    target = loop.epochs + n
    deadline = time.monotonic() + 30
    while loop.epochs < target and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.mark.parametrize("target", [{"target_reduction": 0.9}, {"target_loss": 10.0}])
def test_a_spark_ml_fit_that_reaches_its_target_finishes_on_the_minimum_share(scheduler, data, target):
    from pyspark.ml.classification import LogisticRegression

    name = f"lr-target-{sorted(target)[0]}"
    with slaq.job(name, **target) as job:
        model = LogisticRegression(maxIter=25, regParam=0.01).fit(data)
        losses = job.losses  # everything the JVM captured, there when the fit returns
        assert job.satisfied and not job.done  # reached during the fit, which ran to its end
        _wait_epochs(scheduler.loop, 2)
        live = scheduler.loop.jobs[name]
        assert live.satisfied and live.cores == pytest.approx(unit(scheduler.pools.capacity(), len(scheduler.loop.jobs)))
        assert job.should_stop() and job.done
    history = model.summary.objectiveHistory
    assert len(losses) == len(history) - 1
    np.testing.assert_allclose(losses, history[1:], rtol=1e-5)


def test_python_reports_and_captured_losses_share_one_history(scheduler, data):
    from pyspark.ml.regression import LinearRegression

    with slaq.job("mixed") as job:
        job.report(100.0)
        model = LinearRegression(solver="l-bfgs", maxIter=8, regParam=0.1).fit(data)
        slaq.report_loss(0.0)
        losses = job.losses
        assert not job.should_stop()  # no target declared
    history = model.summary.objectiveHistory
    assert losses[0] == 100.0 and losses[-1] == 0.0
    np.testing.assert_allclose(losses[1:-1], history[1:], rtol=1e-5)
    assert job.losses == losses  # closed: the history stays with the job
