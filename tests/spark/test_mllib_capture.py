"""Every spark.ml optimizer that logs breeze iterations is captured: for each estimator, a real fit inside
``slaq.job`` on the shared local-cluster session, and the job's captured losses equal the estimator's
own objective history. docs/mllib-capture.md lists what is and is not captured, and why.

Breeze logs one ``Val and Grad Norm`` line per iteration *after* the initial point, at 6 significant
digits; spark.ml's ``objectiveHistory`` starts with the initial point's objective. So the captured
sequence is ``objectiveHistory[1:]`` to a relative 1e-5.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import slaq
from srsupport.slaq_watch import loop_history


@pytest.fixture(scope="module")
def scheduler(spark):
    s = slaq.attach(spark.sparkContext)
    assert s.enabled and s.loop is not None
    return s


class _Frames(dict):
    """Frames made and cached when first asked for (a spark_line run fits on two of the four)."""

    def __init__(self, make: Callable[[str], Any], **arrays: Any):
        super().__init__(arrays)
        self.make = make

    def __missing__(self, name: str) -> Any:
        df = self[name] = self.make(name).cache()
        df.count()
        return df


@pytest.fixture(scope="module")
def data(spark) -> dict[str, Any]:
    """Small cached frames: binary, three-class, regression (with outliers), survival (each made when first asked for)."""
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 3))
    margin = X @ [1.5, -2.0, 0.5]
    binary = (margin + rng.normal(size=300) > 0).astype(float)
    three = np.digitize(margin + rng.normal(scale=0.5, size=300), [-1.0, 1.0]).astype(float)
    target = X @ [2.0, -1.0, 0.5] + 1.0 + rng.normal(scale=0.3, size=300)
    target[:6] += 15.0  # a few outliers for the Huber loss
    lifetime = np.exp(0.5 * X[:, 0] - 0.3 * X[:, 1] + 1.0 + 0.5 * rng.gumbel(size=300))
    censor = (rng.uniform(size=300) < 0.8).astype(float)
    labels = {"binary": {"label": binary}, "three": {"label": three}, "regression": {"label": target},
              "survival": {"label": lifetime, "censor": censor}}

    def frame(name: str) -> Any:
        columns = labels[name]
        rows = [tuple([Vectors.dense(x)] + [float(col[i]) for col in columns.values()]) for i, x in enumerate(X)]
        return spark.createDataFrame(rows, ["features", *columns])

    return _Frames(frame, X=X, lifetime=lifetime, censor=censor)


def _captured(scheduler, name: str, at_least: int, timeout: float = 15.0) -> list[float]:
    """The job's history in the epoch loop (the drained JVM reports), once it holds ``at_least`` losses."""
    deadline = time.monotonic() + timeout
    while True:
        history = loop_history(scheduler.loop, name)
        if (history is not None and history.iterations >= at_least) or time.monotonic() > deadline:
            return [] if history is None else list(history.losses)
        time.sleep(0.1)


def _fit_in_job(scheduler, name: str, fit: Callable[[], Any], history: Callable[[Any], list[float]]) -> tuple[list[float], list[float]]:
    with slaq.job(name):
        model = fit()
        expected = list(history(model))
        captured = _captured(scheduler, name, len(expected) - 1)
    return captured, expected


def _lr(**params):
    from pyspark.ml.classification import LogisticRegression

    return LogisticRegression(maxIter=12, tol=1e-9, **params)


def _linreg(**params):
    from pyspark.ml.regression import LinearRegression

    return LinearRegression(maxIter=12, tol=1e-9, **params)


def _bounds():
    from pyspark.ml.linalg import Matrices, Vectors

    return {"lowerBoundsOnCoefficients": Matrices.dense(1, 3, [0.0, -1.0, 0.0]), "upperBoundsOnCoefficients": Matrices.dense(1, 3, [1.0, 0.0, 1.0]),
            "lowerBoundsOnIntercepts": Vectors.dense([-0.1])}


def _svc():
    from pyspark.ml.classification import LinearSVC

    return LinearSVC(maxIter=12, regParam=0.01, tol=1e-9)


def _mlp():
    from pyspark.ml.classification import MultilayerPerceptronClassifier

    return MultilayerPerceptronClassifier(layers=[3, 5, 3], maxIter=12, tol=1e-9, seed=3)


def _summary(model):
    return model.summary.objectiveHistory


def _summary_call(model):
    return model.summary().objectiveHistory


# id, frame, estimator (breeze optimizer it runs), where its own objective history is
ESTIMATORS = [
    ("lr-binomial-l2", "binary", lambda: _lr(regParam=0.01), _summary),  # LBFGS
    ("lr-multinomial", "three", lambda: _lr(regParam=0.01, family="multinomial"), _summary),  # LBFGS
    ("lr-l1", "binary", lambda: _lr(regParam=0.02, elasticNetParam=1.0), _summary),  # OWLQN
    ("lr-elastic-net", "binary", lambda: _lr(regParam=0.02, elasticNetParam=0.5), _summary),  # OWLQN
    ("lr-bounds", "binary", lambda: _lr(regParam=0.01, **_bounds()), _summary),  # LBFGSB
    ("linreg-lbfgs", "regression", lambda: _linreg(solver="l-bfgs", regParam=0.1), _summary),  # LBFGS
    ("linreg-lbfgs-elastic-net", "regression", lambda: _linreg(solver="l-bfgs", regParam=0.1, elasticNetParam=0.5), _summary),  # OWLQN
    ("linreg-huber", "regression", lambda: _linreg(loss="huber", regParam=0.1), _summary),  # LBFGSB
    ("linreg-normal-elastic-net", "regression", lambda: _linreg(solver="normal", regParam=0.1, elasticNetParam=0.5), _summary),  # WLS -> OWLQN
    ("linear-svc", "binary", _svc, _summary_call),  # OWLQN (no L1 term)
    ("mlp", "three", _mlp, _summary_call),  # mllib LBFGS -> breeze LBFGS
]


@pytest.mark.parametrize(("name", "frame", "estimator", "history"), ESTIMATORS, ids=[e[0] for e in ESTIMATORS])
def test_captured_losses_equal_the_estimators_objective_history(spark, scheduler, data, name, frame, estimator, history):
    df = data[frame]  # made before the job: only the fit runs in it
    captured, expected = _fit_in_job(scheduler, f"capture-{name}", lambda: estimator().fit(df), history)
    assert len(expected) >= 3, expected  # the fit really iterated
    assert len(captured) == len(expected) - 1, (captured, expected)
    np.testing.assert_allclose(captured, expected[1:], rtol=1e-5)


def _aft_objective(X: np.ndarray, lifetime: np.ndarray, censor: np.ndarray, beta: np.ndarray, intercept: float, scale: float) -> float:
    """Spark's AFT objective (AFTBlockAggregator): mean over rows of δ·log σ − δ·ε + exp(ε), ε = (log t − x·β − b)/σ."""
    eps = (np.log(lifetime) - X @ beta - intercept) / scale
    return float(np.mean(censor * np.log(scale) - censor * eps + np.exp(eps)))


def test_aft_survival_regression_captured_losses_end_at_its_objective(spark, scheduler, data):
    """AFTSurvivalRegression builds its objective history but drops it (no training summary). Its own
    objective, recomputed here from the fitted model, is what the captured sequence must end at; it
    starts below the objective at Spark's initial point (all zeros, σ = 1) and never rises (L-BFGS)."""
    from pyspark.ml.regression import AFTSurvivalRegression

    X, t, delta, survival = data["X"], data["lifetime"], data["censor"], data["survival"]
    name = "capture-aft"
    with slaq.job(name):
        model = AFTSurvivalRegression(maxIter=12, tol=1e-9).fit(survival)
        final = _aft_objective(X, t, delta, model.coefficients.toArray(), model.intercept, model.scale)
        deadline = time.monotonic() + 15
        captured = _captured(scheduler, name, 1)
        while time.monotonic() < deadline and not np.isclose(captured[-1], final, rtol=1e-5):
            time.sleep(0.2)
            captured = _captured(scheduler, name, 1)
    initial = _aft_objective(X, t, delta, np.zeros(3), 0.0, 1.0)
    assert 3 <= len(captured) <= 12
    assert captured[0] < initial
    assert all(b <= a * (1 + 1e-5) for a, b in zip(captured, captured[1:]))
    assert captured[-1] == pytest.approx(final, rel=1e-5)


def test_gaussian_mixture_captures_its_negated_log_likelihood_per_em_step(spark, scheduler, data):
    """GaussianMixture logs its log-likelihood after every EM step at INFO on its instrumentation's logger: one
    captured loss per step (``summary.numIter``), the negated log-likelihood, the last equal to the model's."""
    from pyspark.ml.clustering import GaussianMixture

    name = "capture-gmm"
    with slaq.job(name):
        summary = GaussianMixture(k=3, maxIter=8, tol=0.0, seed=4).fit(data["binary"]).summary
        captured = _captured(scheduler, name, summary.numIter)
    assert len(captured) == summary.numIter == 8, captured
    np.testing.assert_allclose(captured[-1], -summary.logLikelihood, rtol=1e-12)
    assert all(b <= a + 1e-9 * abs(a) for a, b in zip(captured, captured[1:])), captured  # EM never lowers the likelihood


def test_fits_without_breeze_iterations_capture_nothing(spark, scheduler, data):
    """GeneralizedLinearRegression (IRLS, Cholesky per step) and FMRegressor (mllib gradient descent)
    iterate but log no per-iteration loss, and gradient-boosted trees' training error, logged only at DEBUG,
    is not captured: their jobs' histories stay empty (docs/mllib-capture.md)."""
    from pyspark.ml.regression import FMRegressor, GBTRegressor, GeneralizedLinearRegression

    regression = data["regression"]
    for name, estimator in (("glr", GeneralizedLinearRegression(maxIter=5, regParam=0.1)), ("fm", FMRegressor(maxIter=5, seed=1)),
                            ("gbt", GBTRegressor(maxIter=3, maxDepth=2, seed=5))):
        with slaq.job(f"capture-none-{name}"):
            estimator.fit(regression)
            assert _captured(scheduler, f"capture-none-{name}", 1, timeout=1.5) == []
