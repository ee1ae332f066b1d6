"""Every spark.ml fit's history is complete under concurrency: many fits of mixed estimators at once
(plain threads, some inside ``slaq.job`` blocks, a ``CrossValidator`` with parallelism, a ``Pipeline``),
on the shared local-cluster session, repeated; each job's captured history equals its fit's own
``objectiveHistory[1:]`` (relative 1e-5), with no iteration lost to another fit or to the job's close.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import slaq
from srlab.slaq_bench.capture_check import check_capture

ROUNDS = 2
MAX_ITER = 5  # per fit: 13 fits at once, 65 iterations a round interleaved (each history needs 2)


@pytest.fixture(scope="module")
def scheduler(spark):
    s = slaq.attach(spark)
    assert s.enabled and s.loop is not None
    return s


@pytest.fixture(scope="module")
def data(spark) -> Any:
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(23)
    X = rng.normal(size=(240, 3))
    margin = X @ [1.5, -2.0, 0.5]
    label = (margin + rng.normal(size=240) > 0).astype(float)
    three = np.digitize(margin + rng.normal(scale=0.5, size=240), [-1.0, 1.0]).astype(float)
    y = X @ [2.0, -1.0, 0.5] + 1.0 + rng.normal(scale=0.3, size=240)
    rows = [(Vectors.dense(x), float(a), float(b), float(c)) for x, a, b, c in zip(X, label, three, y)]
    df = spark.createDataFrame(rows, ["features", "label", "three", "y"]).repartition(2).cache()
    df.count()
    return df


def _history(model: Any) -> list[float]:
    summary = model.summary
    summary = summary() if callable(summary) else summary
    return [float(v) for v in summary.objectiveHistory][1:]


def _fits(data: Any) -> dict[str, Callable[[], list[tuple[str, list[float]]]]]:
    """Each entry runs one or more fits and returns ``(fit, objectiveHistory[1:])`` per fit it made."""
    from pyspark.ml import Pipeline
    from pyspark.ml.classification import LinearSVC, LogisticRegression, MultilayerPerceptronClassifier
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.feature import StandardScaler
    from pyspark.ml.regression import LinearRegression
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    def single(estimator: Any) -> Callable[[], list[tuple[str, list[float]]]]:
        return lambda: [(type(estimator).__name__, _history(estimator.fit(data)))]

    def cv() -> list[tuple[str, list[float]]]:
        lr = LogisticRegression(maxIter=MAX_ITER, tol=1e-9)
        grid = ParamGridBuilder().addGrid(lr.regParam, [0.01, 0.1]).build()
        model = CrossValidator(estimator=lr, estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(), numFolds=2,
                               parallelism=2, collectSubModels=True, seed=3).fit(data)
        out = [(f"cv-fold{k}-p{p}", _history(m)) for k, fold in enumerate(model.subModels) for p, m in enumerate(fold)]
        return out + [("cv-refit", _history(model.bestModel))]

    def pipeline() -> list[tuple[str, list[float]]]:
        scaled = StandardScaler(inputCol="features", outputCol="scaled")
        model = Pipeline(stages=[scaled, LinearSVC(featuresCol="scaled", maxIter=MAX_ITER, regParam=0.01)]).fit(data)
        return [("pipeline-svc", _history(model.stages[-1]))]

    return {
        "lr-l2": single(LogisticRegression(maxIter=MAX_ITER, regParam=0.01, tol=1e-9)),
        "lr-l1": single(LogisticRegression(maxIter=MAX_ITER, regParam=0.01, elasticNetParam=0.5, tol=1e-9)),
        "lr-multinomial": single(LogisticRegression(labelCol="three", maxIter=MAX_ITER, tol=1e-9)),
        "svc": single(LinearSVC(maxIter=MAX_ITER, regParam=0.1, tol=1e-9)),
        "linreg": single(LinearRegression(labelCol="y", solver="l-bfgs", maxIter=MAX_ITER, regParam=0.1, tol=1e-9)),
        "huber": single(LinearRegression(labelCol="y", loss="huber", maxIter=MAX_ITER, tol=1e-9)),
        "mlp": single(MultilayerPerceptronClassifier(layers=[3, 4, 2], maxIter=MAX_ITER, seed=5, tol=1e-9)),
        "pipeline": pipeline,  # explicit: the scaler's fit logs nothing, the SVC's iterations are the job's
        "cv": cv,  # zero-change: each candidate fit and the refit are jobs of their own
    }


def _round(scheduler: Any, data: Any, round_: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """All fits at once; odd entries inside an explicit ``slaq.job``, the rest as zero-change jobs."""
    expected: dict[str, list[float]] = {}
    explicit: dict[str, list[float]] = {}
    splits: dict[str, list[Any]] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()
    earlier = scheduler.jobs.finished()  # held, so no new job can reuse an earlier one's id
    before = {id(job) for job in earlier}
    start = threading.Barrier(len(_fits(data)))

    def run(i: int, name: str, fit: Callable[[], list[tuple[str, list[float]]]]) -> None:
        try:
            start.wait()
            if i % 2:
                with slaq.job(f"r{round_}-{name}") as job:
                    made = fit()
                    losses = job.losses
                    split = list(scheduler.loop.jobs[job.name].driver.samples)
                with lock:
                    explicit[job.name] = losses
                    splits[job.name] = split
            else:
                made = fit()
            with lock:
                expected.update((f"{name}/{fit_name}", history) for fit_name, history in made)
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, name, fit)) for i, (name, fit) in enumerate(_fits(data).items())]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    captured = {job.name: list(job.history.losses) for job in scheduler.jobs.finished() if id(job) not in before}
    assert all(captured[name] == losses for name, losses in explicit.items())  # job.losses is complete when the block ends
    # each iteration's wall time splits into time with a stage of the job in the scheduler and driver time
    for name, split in splits.items():
        assert split and all(0 <= s.stage <= s.wall for s in split) and sum(s.stage for s in split) > 0, (name, split)
    return expected, captured


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_every_concurrent_fit_history_is_complete(scheduler, data, round_):
    expected, captured = _round(scheduler, data, round_)
    assert len(expected) == 13  # 7 single fits, the CrossValidator's 4 candidate fits and its refit, the pipeline's SVC
    check = check_capture(expected, captured)
    assert (check.lost, check.misattributed) == (0, 0), check
    for name, history in expected.items():
        assert len(history) >= 2, name
