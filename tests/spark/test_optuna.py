"""Optuna studies under SLAQ on a real local-cluster Spark (the study of examples/tune_with_optuna.py): every
trial is one SLAQ job whose losses are its reported values and whose fits run in its pool, the best trial is
the one SLAQ off finds, and a trial's job ends when the trial does, its row in the SLAQ tab saying how (complete,
pruned, failed). SLAQ never changes what a study computes: trials of a long-named study running at once each get
their job, a trial that goes on after ``should_prune()`` keeps its job and its reports, and one whose parameter
cannot cross py4j completes as it does without SLAQ."""

from __future__ import annotations

import importlib.util
import logging
import threading
import time

import pytest
from py4j.protocol import Py4JError

import slaq
from slaq.enforce.pools import JOB_PROPERTY, enter_thread
from slaq.integrations.optuna.trials import installed
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


def test_a_pruned_trial_ends_its_job_as_pruned_when_it_raises(runtime, example, data, caplog):
    from slaq.optuna import Pruner

    inner = example.objective_for(*data, steps=5, iterations=2)
    job_after_prune = {}

    def objective(trial):
        try:
            return inner(trial)
        except optuna.TrialPruned:
            job_after_prune[trial.number] = getattr(slaq.current_job(), "name", None)  # the pruner's verdict closed nothing
            raise

    study = optuna.create_study(study_name="pruned", pruner=Pruner())
    for point in ({"regParam": 0.002, "elasticNetParam": 0.0}, {"regParam": 1.0, "elasticNetParam": 1.0}):  # the second cannot catch up with the first
        study.enqueue_trial(point)
    before = len(runtime.jobs.finished())
    with caplog.at_level(logging.INFO, logger="slaq"):
        study.optimize(objective, n_trials=2)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "PRUNED"]
    jobs = {j.name.split(" ")[0]: j for j in runtime.jobs.finished()[before:]}
    assert job_after_prune == {1: jobs["pruned#1"].name}
    assert len(jobs["pruned#1"].history.losses) == len(study.trials[1].intermediate_values) == 1  # pruned at its first report
    assert (jobs["pruned#0"].ending, jobs["pruned#1"].ending) == ("complete", "pruned")
    assert any("Optuna trial 1 of pruned pruned; its job pruned#1" in r.getMessage() for r in caplog.records)
    assert not any("ended with TrialPruned" in r.getMessage() for r in caplog.records)  # a pruned trial is no failure


def _count(spark):
    """A little Spark work in the calling thread's pool."""
    return spark.sparkContext.parallelize(range(4), 2).count()


def _trial_jobs(runtime, before, study):
    """The finished SLAQ jobs of ``study``'s trials since ``before``, by trial number (the name's ``#<number>``)."""
    head = study[: 40]
    return {int(j.name.rsplit("#", 1)[1].split(" ")[0]): j for j in runtime.jobs.finished()[before:] if j.name.startswith(head)}


def test_trials_of_a_long_named_study_running_at_once_each_get_their_own_job(runtime, spark, caplog):
    name = "a-study-named-at-length-" * 9  # 216 characters: the job name's cut falls inside it
    together = threading.Barrier(3, timeout=120)

    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        trial.report(x, 0)  # opens the trial's job
        together.wait()  # the 3 trials of a wave hold their jobs at once
        _count(spark)
        return x

    study = optuna.create_study(study_name=name)
    before = len(runtime.jobs.finished())
    with caplog.at_level(logging.WARNING, logger="slaq"):
        study.optimize(objective, n_trials=6, n_jobs=3)
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 6
    assert not [r.getMessage() for r in caplog.records if "plain Spark work" in r.getMessage()]
    jobs = _trial_jobs(runtime, before, name)
    assert sorted(jobs) == list(range(6)) and len({j.name for j in jobs.values()}) == 6
    assert all(j.history.losses == [study.trials[n].intermediate_values[0]] for n, j in jobs.items())


def test_a_trial_that_goes_on_after_should_prune_keeps_its_job_and_reports_to_its_end(runtime, caplog):
    from slaq.optuna import Pruner

    curves = {0: [0.5, 0.4, 0.3], 1: [5.0, 4.0, 3.0]}  # trial 1 is hopeless at its first report against trial 0
    asked = {}

    def objective(trial):
        for step, value in enumerate(curves[trial.number]):
            trial.report(value, step)
            if step == 0:
                asked[trial.number] = trial.should_prune()  # the objective asks, and goes on whatever the answer
        return curves[trial.number][-1]

    study = optuna.create_study(study_name="goes-on", pruner=Pruner())
    before = len(runtime.jobs.finished())
    with caplog.at_level(logging.INFO, logger="slaq"):
        study.optimize(objective, n_trials=2)
    assert asked == {0: False, 1: True} and [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]
    jobs = _trial_jobs(runtime, before, "goes-on")
    assert jobs[1].history.losses == curves[1] and jobs[1].ending == "complete"
    assert not any("goes-on pruned" in r.getMessage() for r in caplog.records)  # a completed trial is not called pruned
    rows = _tab_rows(runtime, {jobs[0].name: 3, jobs[1].name: 3})
    assert {r.job: r.why for r in rows.values()} == {jobs[0].name: "complete", jobs[1].name: "complete"}


def test_the_tab_says_how_each_trial_ended(runtime):
    def objective(trial):
        trial.report(1.0, 0)
        if trial.number == 1:
            raise optuna.TrialPruned()
        if trial.number == 2:
            raise ValueError("a trial of the user's that fails")
        return 1.0

    study = optuna.create_study(study_name="ends")
    before = len(runtime.jobs.finished())
    study.optimize(objective, n_trials=3, catch=(ValueError,))
    assert [t.state.name for t in study.trials] == ["COMPLETE", "PRUNED", "FAIL"]
    jobs = _trial_jobs(runtime, before, "ends")
    rows = _tab_rows(runtime, {j.name: 1 for j in jobs.values()})  # what /slaq/json/ serves
    assert {r.job: r.why for r in rows.values()} == {"ends#0": "complete", "ends#1": "pruned", "ends#2": "failed"}


def test_a_trial_whose_parameter_cannot_cross_py4j_completes_as_without_slaq(runtime, spark):
    def objective(trial):
        path = trial.suggest_categorical("file", ["\udcff"])  # what os.listdir gives for an undecodable byte
        trial.report(1.0, 0)
        _count(spark)
        return float(len(path))

    study = optuna.create_study(study_name="undecodable")
    before = len(runtime.jobs.finished())
    study.optimize(objective, n_trials=1)
    assert study.trials[0].state.name == "COMPLETE"
    jobs = _trial_jobs(runtime, before, "undecodable")
    assert jobs[0].name == "undecodable#0 file=\\udcff" and jobs[0].ending == "complete"  # escaped in the name it is given


def test_a_job_name_that_cannot_cross_py4j_is_refused_and_the_thread_keeps_its_properties(runtime, spark):
    sc = spark.sparkContext
    sc.setLocalProperty("app.mine", "kept")
    try:
        with pytest.raises(ValueError, match="encodable as UTF-8"):
            with slaq.job("bad-\udcff"):
                pass
        assert sc.getLocalProperty("app.mine") == "kept" and not [j for j in runtime.running_jobs() if j.startswith("bad-")]
    finally:
        sc.setLocalProperty("app.mine", None)


def test_a_thread_whose_routing_into_a_job_fails_part_way_gets_back_its_properties(spark):
    sc = spark.sparkContext
    sc.setLocalProperty("app.mine", "kept")
    try:
        with pytest.raises(Py4JError):  # the pool's name fails on its way through py4j, after the thread's properties were copied
            enter_thread(sc, "ok", "slaq.\udcff")
        assert sc.getLocalProperty("app.mine") == "kept" and sc.getLocalProperty(JOB_PROPERTY) is None
    finally:
        sc.setLocalProperty("app.mine", None)
