"""Pruning CrossValidator candidates (``spark.slaq.prune``) on a real local-cluster Spark: the same
best model as without pruning, the survivors' metrics unchanged, the pruned candidates marked and
their remaining folds never fitted, the choice among pruned candidates said; and a CrossValidator on
the user's own folds (``foldCol``), whose first fold favours another candidate, is never pruned."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import re
from collections.abc import Iterator

import numpy as np
import pytest

import slaq
from slaq.runtime import SlaqRuntime
from tests.fixtures import linear_labels
from tests.spark.pipeline_tuning import check_roles, pipeline_cross_validator, roles

FIT_JOB = re.compile(r"^LogisticRegression\[(?P<params>[^\]]*)\]#\d+$")
STRONG_L1 = 10.0  # regParam with elasticNetParam=1 that zeroes every coefficient: AUC 0.5, hopeless


@contextlib.contextmanager
def _pruning(runtime: SlaqRuntime, on: bool) -> Iterator[SlaqRuntime]:
    """``runtime`` restarted with ``spark.slaq.prune`` set to ``on``, and restored after."""
    before = runtime.config
    runtime.stop()
    runtime.config = dataclasses.replace(before, prune=on)
    runtime.start()
    try:
        yield runtime
    finally:
        runtime.stop()
        runtime.config = before
        runtime.start()


@pytest.fixture(scope="module")
def runtime(spark):
    """The session's SLAQ runtime with pruning on for this module."""
    s = slaq.attach(spark)
    assert s.enabled
    with _pruning(s, True):
        yield s


@pytest.fixture(scope="module")
def data(spark):
    return linear_labels(spark, 300, [1.5, -2.0, 0.5], seed=3, partitions=2).cache()


def _cross_validate(data):
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    lr = LogisticRegression(maxIter=5, elasticNetParam=1.0)
    grid = ParamGridBuilder().addGrid(lr.regParam, [0.001, STRONG_L1, 0.01]).build()
    cv = CrossValidator(estimator=lr, estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(), numFolds=2,
                        parallelism=3, seed=5, collectSubModels=True)
    return cv.fit(data)


def test_pruning_keeps_the_best_model_and_skips_the_hopeless_candidates_remaining_folds(runtime, data, caplog):
    before = len(runtime.jobs.finished())
    with caplog.at_level(logging.INFO, logger="slaq.prune"):
        pruned = _cross_validate(data)
    jobs = [j for j in runtime.jobs.finished()[before:] if FIT_JOB.match(j.name)]
    assert any("pruned candidate 1" in r.getMessage() for r in caplog.records)
    chosen = [r.getMessage() for r in caplog.records if " chose candidate " in r.getMessage()]
    assert len(chosen) == 1 and "among 3 candidates, 1 of them pruned (candidate 1 after 1 of 2 folds)" in chosen[0], chosen
    # 3 candidates on fold 0, the 2 survivors on fold 1, the refit of the best: 6 fits, not 7
    assert len(jobs) == 6
    assert sum(FIT_JOB.match(j.name)["params"].endswith(f"regParam={STRONG_L1:g}") for j in jobs) == 1

    with _pruning(runtime, False):  # pyspark's own CrossValidator fit
        stock = _cross_validate(data)

    assert pruned.avgMetrics[1] == -math.inf and math.isnan(pruned.stdMetrics[1])
    assert pruned.subModels[1][1] is None and pruned.subModels[0][1] is not None
    np.testing.assert_allclose([pruned.avgMetrics[i] for i in (0, 2)], [stock.avgMetrics[i] for i in (0, 2)], rtol=1e-9)
    np.testing.assert_allclose([pruned.stdMetrics[i] for i in (0, 2)], [stock.stdMetrics[i] for i in (0, 2)], rtol=1e-6, atol=1e-12)
    assert pruned.bestModel.getRegParam() == stock.bestModel.getRegParam() != STRONG_L1
    np.testing.assert_allclose(pruned.bestModel.coefficients.toArray(), stock.bestModel.coefficients.toArray(), rtol=1e-6)


def _user_folds(spark):
    """Three folds of the user's (``fold``) on which candidate ``fa`` (a feature precise on fold 0 only) beats
    ``fb`` (precise on folds 1 and 2) on fold 0 by far more than the pruning rule's margin, and loses overall."""
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(3)
    rows = []
    for fold, (noise_a, noise_b) in enumerate([(0.1, 0.5), (0.6, 0.1), (0.6, 0.1)]):
        s = rng.normal(size=60)
        y = s + rng.normal(scale=0.1, size=60)
        fa, fb = s + rng.normal(scale=noise_a, size=60), s + rng.normal(scale=noise_b, size=60)
        rows += [(fold, Vectors.dense([a]), Vectors.dense([b]), float(t)) for a, b, t in zip(fa, fb, y)]
    return spark.createDataFrame(rows, ["fold", "fa", "fb", "label"]).cache()


def test_the_users_own_folds_are_never_pruned_so_the_first_fold_cannot_hide_the_best(runtime, spark, caplog):
    from pyspark.ml.evaluation import RegressionEvaluator
    from pyspark.ml.regression import LinearRegression
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    lr = LinearRegression(solver="normal")
    grid = ParamGridBuilder().addGrid(lr.featuresCol, ["fa", "fb"]).build()
    cv = CrossValidator(estimator=lr, estimatorParamMaps=grid, evaluator=RegressionEvaluator(), numFolds=3,
                        foldCol="fold", parallelism=2)
    with caplog.at_level(logging.INFO, logger="slaq"):
        model = cv.fit(_user_folds(spark))
    said = [r.getMessage() for r in caplog.records]
    assert not any("pruned candidate" in m or " chose candidate " in m for m in said), said
    assert any("runs unpruned" in m and "foldCol=fold" in m for m in said), said
    # every candidate ran every fold (stock's avgMetrics); fb, behind on fold 0, is the best over all three
    assert all(math.isfinite(m) for m in model.avgMetrics), model.avgMetrics
    assert model.avgMetrics[1] < model.avgMetrics[0]
    assert model.bestModel.getFeaturesCol() == "fb"


def test_a_tuned_pipelines_fit_is_one_job_of_its_candidate_and_fold_with_pruning_on(runtime, data, caplog):
    cv = pipeline_cross_validator([0.001, 0.002], folds=2)  # alike candidates: neither is pruned
    before = len(runtime.jobs.finished())
    with caplog.at_level(logging.INFO, logger="slaq.prune"):
        model = cv.fit(data)
    assert not any("pruned candidate" in r.getMessage() for r in caplog.records)
    check_roles(roles(runtime, before), cv, candidates=2, folds=2, best=int(np.argmax(model.avgMetrics)))
