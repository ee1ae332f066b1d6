"""Pruning CrossValidator candidates (``spark.slaq.prune``) on a real local-cluster Spark: the same
best model as without pruning, the survivors' metrics unchanged, the pruned candidates marked and
their remaining folds never fitted."""

from __future__ import annotations

import dataclasses
import logging
import math
import re

import numpy as np
import pytest

import slaq
from tests.fixtures import linear_labels

FIT_JOB = re.compile(r"^LogisticRegression\[(?P<params>[^\]]*)\]#\d+$")
STRONG_L1 = 10.0  # regParam with elasticNetParam=1 that zeroes every coefficient: AUC 0.5, hopeless


@pytest.fixture(scope="module")
def runtime(spark):
    """The session's SLAQ runtime, restarted with pruning on for this module and restored after it."""
    s = slaq.attach(spark)
    assert s.enabled
    before = s.config
    s.stop()
    s.config = dataclasses.replace(before, prune=True)
    s.start()
    yield s
    s.stop()
    s.config = before
    s.start()


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
    from slaq import tuning

    before = len(runtime.finished)
    with caplog.at_level(logging.INFO, logger="slaq.prune"):
        pruned = _cross_validate(data)
    jobs = [j for j in list(runtime.finished)[before:] if FIT_JOB.match(j.name)]
    assert any("pruned candidate 1" in r.getMessage() for r in caplog.records)
    # 3 candidates on fold 0, the 2 survivors on fold 1, the refit of the best: 6 fits, not 7
    assert len(jobs) == 6
    assert sum(FIT_JOB.match(j.name)["params"].endswith(f"regParam={STRONG_L1:g}") for j in jobs) == 1

    tuning.install(None)  # pyspark's own CrossValidator fit, as with spark.slaq.prune=false
    try:
        stock = _cross_validate(data)
    finally:
        tuning.install(runtime._on_prune)

    assert pruned.avgMetrics[1] == -math.inf and math.isnan(pruned.stdMetrics[1])
    assert pruned.subModels[1][1] is None and pruned.subModels[0][1] is not None
    np.testing.assert_allclose([pruned.avgMetrics[i] for i in (0, 2)], [stock.avgMetrics[i] for i in (0, 2)], rtol=1e-9)
    np.testing.assert_allclose([pruned.stdMetrics[i] for i in (0, 2)], [stock.stdMetrics[i] for i in (0, 2)], rtol=1e-6, atol=1e-12)
    assert pruned.bestModel.getRegParam() == stock.bestModel.getRegParam() != STRONG_L1
    np.testing.assert_allclose(pruned.bestModel.coefficients.toArray(), stock.bestModel.coefficients.toArray(), rtol=1e-6)


# -- a fit stopped while it runs: evidence that came in meanwhile condemns its candidate ----------------------------

HOLD_S = 60.0  # how long a held fit waits for the test (it fails the test when it runs out) or for its cancel


class _Held:
    """What the test and the fits share: which fits are running held, which were cancelled."""

    def __init__(self):
        import threading

        self.lock = threading.Lock()
        self.release_best = threading.Event()
        self.both_held = threading.Event()
        self.fits: dict[float, int] = {}
        self.held: list[float] = []
        self.cancelled: list[float] = []


def _held_estimator(held: _Held):
    """A pure-Python estimator whose fit runs real Spark jobs: the best level (1.0) holds its first fit until
    released; the others' fits after their first run Spark jobs until cancelled (or HOLD_S passes)."""
    import time

    from py4j.protocol import Py4JJavaError
    from pyspark.ml import Estimator, Model
    from pyspark.ml.param import Param, Params, TypeConverters
    from pyspark.sql import functions as F

    class LevelModel(Model):
        def __init__(self, level: float):
            super().__init__()
            self.level_value = level

        def _transform(self, dataset):
            return dataset.withColumn("level", F.lit(self.level_value))

    class Level(Estimator):
        level = Param(Params._dummy(), "level", "the model's metric", typeConverter=TypeConverters.toFloat)

        def __init__(self):
            super().__init__()
            self._setDefault(level=0.0)

        def _fit(self, dataset):
            level = self.getOrDefault(self.level)
            with held.lock:
                n = held.fits[level] = held.fits.get(level, 0) + 1
            if level == 1.0 and n == 1:
                assert held.release_best.wait(HOLD_S), "the best fit was never released"
            elif level < 1.0 and n == 2:
                with held.lock:
                    held.held.append(level)
                    if len(held.held) == 2:
                        held.both_held.set()
                deadline = time.monotonic() + HOLD_S
                try:
                    while time.monotonic() < deadline:
                        dataset.rdd.map(lambda r: time.sleep(0.02) or 1).count()
                except Py4JJavaError:
                    with held.lock:
                        held.cancelled.append(level)
                    raise
            dataset.count()
            return LevelModel(level)

    return Level()


class _LevelMetric:
    @staticmethod
    def make():
        from pyspark.ml.evaluation import Evaluator

        class LevelMetric(Evaluator):
            def _evaluate(self, dataset):
                return float(dataset.select("level").first()[0])

            def isLargerBetter(self):
                return True

        return LevelMetric()


def test_a_running_fit_is_stopped_when_a_better_candidate_s_fold_condemns_it(runtime, data, caplog):
    import threading

    from pyspark.ml.tuning import CrossValidator

    held = _Held()
    est = _held_estimator(held)
    maps = [{est.level: v} for v in (0.500, 0.501, 1.0)]  # two close candidates (neither condemns the other), the best
    cv = CrossValidator(estimator=est, estimatorParamMaps=maps, evaluator=_LevelMetric.make(), numFolds=3, parallelism=3, seed=1)
    out: dict = {}

    def fit():
        try:
            out["model"] = cv.fit(data)
        except BaseException as e:  # noqa: BLE001 (the test thread reports it)
            out["error"] = e

    with caplog.at_level(logging.INFO, logger="slaq.prune"):
        worker = threading.Thread(target=fit, daemon=True)
        worker.start()
        # the close pair scored fold 0 and started fold 1 while the best candidate's fold 0 is held: no barrier
        assert held.both_held.wait(HOLD_S), f"the close candidates' fold-1 fits did not start: {held.fits}"
        held.release_best.set()
        worker.join(HOLD_S)
    assert not worker.is_alive() and "error" not in out, out
    model = out["model"]
    assert sorted(held.cancelled) == [0.5, 0.501]  # both stopped through their Spark jobs, not run out
    assert model.avgMetrics[:2] == [-math.inf, -math.inf] and model.avgMetrics[2] == 1.0
    assert held.fits == {0.5: 2, 0.501: 2, 1.0: 4}  # 3 folds and the refit for the best; no third fold for the others
    assert sum("running fold-1 fit is stopped" in r.getMessage() for r in caplog.records) == 2
