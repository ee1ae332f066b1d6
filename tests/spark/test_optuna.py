"""Optuna studies under SLAQ on a real local-cluster Spark (the study of examples/tune_with_optuna.py): every
trial is one SLAQ job whose losses are its reported values and whose fits run in its pool, the best trial is
the one SLAQ off finds, and a trial slaq.optuna.Pruner prunes leaves its job at once."""

from __future__ import annotations

import importlib.util
import logging
import time

import pytest

import slaq
from slaq.optuna.trials import installed
from srsupport.wheel import REPO

optuna = pytest.importorskip("optuna")

# 12 seeded points (regParam, elasticNetParam) far enough apart that the best is not a floating-point tie
POINTS = [{"regParam": r, "elasticNetParam": e} for r, e in
          [(0.5, 0.0), (0.002, 0.0), (0.2, 1.0), (0.05, 0.5), (1.0, 0.3), (0.01, 0.9),
           (0.3, 0.1), (0.1, 0.0), (0.003, 1.0), (0.7, 0.7), (0.02, 0.2), (0.4, 0.5)]]
STEPS, ITERATIONS = 2, 1


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("tune_with_optuna", REPO / "examples" / "tune_with_optuna.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return module


@pytest.fixture(scope="module")
def runtime(spark):
    s = slaq.attach(spark)
    assert s.enabled and installed()
    return s


@pytest.fixture(scope="module")
def data(spark, example):
    train, valid = example.synthetic(spark, 400, seed=3)
    yield train, valid
    train.unpersist()
    valid.unpersist()


def _tab_rows(runtime, expected, deadline_s=30.0):
    """The SLAQ tab's finished rows (what /slaq/json/ serves) of the jobs in ``expected`` (name -> iterations), once they
    show those: a job that ends while an epoch's status is being built is listed with that epoch's row first, and
    with its final row (its whole history) from the next epoch on."""
    deadline = time.monotonic() + deadline_s
    while True:
        rows = {r.job: r for r in runtime.pools.status_report().finished if r.job in expected}
        if {name: r.iterations for name, r in rows.items()} == expected or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)  # the loop publishes at its next epoch (0.5 s here)


def test_every_trial_is_a_job_with_its_reported_values_and_the_best_trial_is_slaq_offs(runtime, example, data):
    before = len(runtime.jobs.finished())
    on = example.tune(*data, trials=len(POINTS), n_jobs=4, name="slaq-on", direction="maximize", points=POINTS, steps=STEPS,
                      iterations=ITERATIONS)
    new = runtime.jobs.finished()[before:]
    assert [j.name for j in new if j.name.startswith("LogisticRegression[")] == []  # every fit ran inside its trial's job
    jobs = {int(j.name.split("#", 1)[1].split(" ", 1)[0]): j for j in new if j.name.startswith("slaq-on#")}
    assert sorted(jobs) == list(range(len(POINTS)))
    for t in on.trials:
        job = jobs[t.number]
        assert job.name == f"slaq-on#{t.number} regParam={t.params['regParam']:.4g} elasticNetParam={t.params['elasticNetParam']:.4g}"
        # maximized: each reported value v is the loss 1 - v, in step order; the fits' own iterations stay out
        assert job.history.losses == pytest.approx([1.0 - t.intermediate_values[s] for s in range(STEPS)], rel=1e-12)
    expected = {j.name: STEPS for j in jobs.values()}
    rows = _tab_rows(runtime, expected)
    assert {r.job: r.iterations for r in rows.values()} == expected
    assert all(r.core_seconds > 0 for r in rows.values())  # the trial's fits ran in its pool

    runtime.stop()  # SLAQ off: plain FAIR scheduling, Optuna's own methods
    try:
        assert not installed()
        off = example.tune(*data, trials=len(POINTS), n_jobs=4, name="slaq-off", direction="maximize", points=POINTS, steps=STEPS,
                           iterations=ITERATIONS)
        assert not [j for j in runtime.jobs.finished() if j.name.startswith("slaq-off#")]
    finally:
        runtime.start()
    assert on.best_trial.number == off.best_trial.number and on.best_params == off.best_params
    assert on.best_value == pytest.approx(off.best_value, rel=1e-9)


def test_a_pruned_trial_leaves_its_job_at_once(runtime, example, data, caplog):
    from slaq.optuna import Pruner

    inner = example.objective_for(*data, steps=5, iterations=2)
    job_after_prune = {}

    def objective(trial):
        try:
            return inner(trial)
        except optuna.TrialPruned:
            job_after_prune[trial.number] = slaq.current_job()  # the thread is out of the trial's job before it raises
            raise

    study = optuna.create_study(study_name="pruned", pruner=Pruner())
    for point in ({"regParam": 0.002, "elasticNetParam": 0.0}, {"regParam": 1.0, "elasticNetParam": 1.0}):  # the second cannot catch up with the first
        study.enqueue_trial(point)
    before = len(runtime.jobs.finished())
    with caplog.at_level(logging.INFO, logger="slaq"):
        study.optimize(objective, n_trials=2)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "PRUNED"]
    assert job_after_prune == {1: None}
    jobs = {j.name.split(" ")[0]: j for j in runtime.jobs.finished()[before:]}
    assert len(jobs["pruned#1"].history.losses) == len(study.trials[1].intermediate_values) == 1  # pruned at its first report
    assert any("Optuna trial 1 of pruned pruned; its job pruned#1" in r.getMessage() for r in caplog.records)
    assert not any("ended with TrialPruned" in r.getMessage() for r in caplog.records)  # a pruned trial is no failure
