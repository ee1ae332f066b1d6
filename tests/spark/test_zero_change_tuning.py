"""Zero-change tuning on a real local-cluster Spark: every leaf spark.ml fit of CrossValidator /
TrainValidationSplit (and of any thread) is its own SLAQ job with its own captured loss history, and
the results equal those of the same run with SLAQ off; a tuned Pipeline's fit is one job of its candidate and fold."""

from __future__ import annotations

import logging
import re
import threading
from multiprocessing.pool import ThreadPool

import numpy as np
import pytest
from pyspark import InheritableThread, inheritable_thread_target

import slaq
from slaq.integrations import sparkml
from tests.fixtures import linear_labels
from tests.spark.pipeline_tuning import check_roles, pipeline_cross_validator, roles

FIT_JOB = re.compile(r"^LogisticRegression\[(?P<params>[^\]]*)\]#\d+$")


@pytest.fixture(scope="module")
def scheduler(spark):
    s = slaq.attach(spark)
    assert s.enabled and sparkml.installed()
    return s


@pytest.fixture(scope="module")
def data(spark):
    return linear_labels(spark, 600, [1.0, -2.0, 0.5, 0.0], seed=7, partitions=4).cache()


def _grid():
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.tuning import ParamGridBuilder

    lr = LogisticRegression(maxIter=12)
    # two candidates, one for each of spark.ml's optimizers (L-BFGS without an L1 term, OWL-QN with one)
    return lr, ParamGridBuilder().addGrid(lr.regParam, [0.1]).addGrid(lr.elasticNetParam, [0.0, 0.5]).build()


def _new_fit_jobs(scheduler, before):
    return [j for j in scheduler.jobs.finished()[before:] if FIT_JOB.match(j.name)]


def _objective_histories(models):
    return sorted(tuple(np.round(m.summary.objectiveHistory[1:], 12)) for m in models)


def _assert_histories_match(jobs, models):
    """Each job's captured losses are one fit's objective history (breeze logs all but the initial point)."""
    captured = sorted(tuple(j.history.losses) for j in jobs)
    expected = _objective_histories(models)
    assert len(captured) == len(expected)
    for c, e in zip(captured, expected):
        assert len(c) == len(e) > 3
        np.testing.assert_allclose(c, e, rtol=1e-5)


def _cross_validate(data, parallelism):
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.tuning import CrossValidator

    lr, grid = _grid()
    cv = CrossValidator(estimator=lr, estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(), numFolds=2,
                        parallelism=parallelism, seed=11, collectSubModels=True)
    return cv.fit(data)


def test_cross_validator_fits_are_separate_jobs_with_results_equal_to_slaq_off(scheduler, data):
    before = len(scheduler.jobs.finished())
    on = _cross_validate(data, parallelism=4)
    jobs = _new_fit_jobs(scheduler, before)
    # 2 folds x 2 param maps, then the best map refit on the whole data: 5 jobs, all different names
    assert len(jobs) == 5 and len({j.name for j in jobs}) == 5
    assert sorted({FIT_JOB.match(j.name)["params"] for j in jobs}) == sorted(
        f"elasticNetParam={e:g},maxIter=12,regParam=0.1" for e in (0.0, 0.5))
    _assert_histories_match(jobs, [m for fold in on.subModels for m in fold] + [on.bestModel])

    scheduler.stop()  # SLAQ off: the hook is gone, the pools are open (plain FAIR scheduling)
    try:
        assert not sparkml.installed()
        before_off = len(scheduler.jobs.finished())
        off = _cross_validate(data, parallelism=4)
        assert len(scheduler.jobs.finished()) == before_off
    finally:
        scheduler.start()
    # the same fits: equal up to floating-point reassociation (Spark sums task results as they finish)
    np.testing.assert_allclose(on.avgMetrics, off.avgMetrics, rtol=1e-9)
    np.testing.assert_allclose(on.bestModel.coefficients.toArray(), off.bestModel.coefficients.toArray(), rtol=1e-7, atol=1e-12)
    def chosen(model):
        return {p.name: v for p, v in model.extractParamMap().items()}

    assert chosen(on.bestModel) == chosen(off.bestModel)


def test_train_validation_split_fits_are_separate_jobs_with_results_equal_to_slaq_off(scheduler, data):
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.tuning import TrainValidationSplit

    lr, grid = _grid()

    def run():
        tvs = TrainValidationSplit(estimator=lr, estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(),
                                   trainRatio=0.7, parallelism=4, seed=5, collectSubModels=True)
        return tvs.fit(data)

    before = len(scheduler.jobs.finished())
    on = run()
    jobs = _new_fit_jobs(scheduler, before)
    assert len(jobs) == 3  # 2 param maps, then the best refit
    _assert_histories_match(jobs, list(on.subModels) + [on.bestModel])
    scheduler.stop()
    try:
        off = run()
    finally:
        scheduler.start()
    np.testing.assert_allclose(on.validationMetrics, off.validationMetrics, rtol=1e-9)
    np.testing.assert_allclose(on.bestModel.coefficients.toArray(), off.bestModel.coefficients.toArray(), rtol=1e-7, atol=1e-12)


def test_an_explicit_job_wins_over_the_automatic_one(scheduler, data):
    before = len(scheduler.jobs.finished())
    with slaq.job("my-tuning") as job:
        model = _cross_validate(data, parallelism=2)
        losses = job.losses
    assert _new_fit_jobs(scheduler, before) == []  # no job of their own: all 5 fits' losses are in the block's job
    assert len(losses) == sum(len(m.summary.objectiveHistory) - 1 for fold in model.subModels for m in fold) + (
        len(model.bestModel.summary.objectiveHistory) - 1)


def test_concurrent_fits_in_plain_threads_are_separate_jobs(scheduler, data):
    from pyspark.ml.classification import LogisticRegression

    before = len(scheduler.jobs.finished())
    models = {}

    def fit(reg):
        models[reg] = LogisticRegression(maxIter=10, regParam=reg).fit(data)

    threads = [threading.Thread(target=fit, args=(reg,)) for reg in (0.05, 0.2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    jobs = _new_fit_jobs(scheduler, before)
    assert sorted(FIT_JOB.match(j.name)["params"] for j in jobs) == ["maxIter=10,regParam=0.05", "maxIter=10,regParam=0.2"]
    _assert_histories_match(jobs, list(models.values()))


def test_work_from_a_reused_thread_pool_belongs_to_the_job_that_submitted_it(scheduler, spark):
    sc = spark.sparkContext
    assert sc.getLocalProperty("spark.scheduler.pool") is None, "an earlier test left a pool on the main thread"
    pool = ThreadPool(2)
    seen: list[tuple[str, str | None, str | None]] = []

    def task(tag):
        seen.append((tag, sc.getLocalProperty("spark.scheduler.pool"), getattr(slaq.current_job(), "name", None)))
        slaq.report_loss(1.0 if tag == "a" else 2.0)
        sc.parallelize(range(2), 2).count()

    try:
        for name in ("a", "b", "a2"):
            with slaq.job(f"reuse-{name}") as job:
                wrapped = inheritable_thread_target(spark)
                pool.map(lambda t: wrapped(task)(t), [name[0]] * 4)
                assert job.losses == [1.0 if name[0] == "a" else 2.0] * 4
        pool.map(inheritable_thread_target(spark)(lambda _: seen.append(("none", sc.getLocalProperty("spark.scheduler.pool"),
                                                                             getattr(slaq.current_job(), "name", None)))), [0, 1])
    finally:
        pool.close()
    by_job = {(tag, p, j) for tag, p, j in seen}
    assert by_job == {("a", "slaq.reuse-a", "reuse-a"), ("b", "slaq.reuse-b", "reuse-b"), ("a", "slaq.reuse-a2", "reuse-a2"),
                      ("none", None, None)}


def test_the_hook_is_gone_when_slaq_is_detached(scheduler, spark):
    from pyspark.ml.wrapper import JavaEstimator

    assert getattr(JavaEstimator._fit, "__slaq_hook__", False)
    scheduler.stop()
    try:
        assert not getattr(JavaEstimator._fit, "__slaq_hook__", False)
    finally:
        scheduler.start()
    assert getattr(JavaEstimator._fit, "__slaq_hook__", False)


def test_inheritable_thread_started_in_a_fit_free_block_keeps_its_job(scheduler, data):
    from pyspark.ml.classification import LogisticRegression

    with slaq.job("outer") as job:
        t = InheritableThread(target=lambda: LogisticRegression(maxIter=6).fit(data))
        t.start()
        t.join(120)
        assert len(job.losses) >= 3


def test_a_fit_without_per_iteration_loss_is_a_job_and_says_so_once(scheduler, data, caplog):
    from pyspark.ml.clustering import KMeans

    before = len(scheduler.jobs.finished())
    with caplog.at_level(logging.INFO, logger="slaq"):
        KMeans(k=3, seed=1, maxIter=5).fit(data)
    jobs = [j for j in scheduler.jobs.finished()[before:] if j.name.startswith("KMeans[")]
    assert len(jobs) == 1 and jobs[0].history.losses == []
    said = [r.getMessage() for r in caplog.records if jobs[0].name in r.getMessage() and "loss" in r.getMessage()]
    assert len(said) == 1, said


def test_a_tuned_pipelines_fit_is_one_job_of_its_candidate_and_fold_and_only_the_refit_is_the_refit(scheduler, data):
    cv = pipeline_cross_validator([0.01, 0.1], folds=2)
    before = len(scheduler.jobs.finished())
    model = cv.fit(data)
    check_roles(roles(scheduler, before), cv, candidates=2, folds=2, best=int(np.argmax(model.avgMetrics)))
