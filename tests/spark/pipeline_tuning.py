"""A CrossValidator over a Pipeline (StandardScaler, LogisticRegression) whose param maps set the classifier's params
only, and the roles SLAQ gave its jobs as the SLAQ tab's JSON shows them: shared by the zero-change and the pruning
tests, which check that each candidate's fit on each fold is one job and only the refit is the refit."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

PIPELINE_JOB = re.compile(r"^Pipeline\[(?P<params>[^\]]*)\]#\d+$")


def pipeline_cross_validator(reg_params: list[float], folds: int, parallelism: int = 2, seed: int = 11) -> Any:
    from pyspark.ml import Pipeline
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.feature import StandardScaler
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    scaler = StandardScaler(inputCol="features", outputCol="scaled")
    lr = LogisticRegression(featuresCol="scaled", maxIter=8)
    grid = ParamGridBuilder().addGrid(lr.regParam, reg_params).build()
    return CrossValidator(estimator=Pipeline(stages=[scaler, lr]), estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(),
                          numFolds=folds, parallelism=parallelism, seed=seed)


@dataclass(frozen=True)
class Role:
    """A SLAQ job as the tab's final row shows it, with when it ran on the loop's clock and how many losses it has."""

    name: str
    group: str
    candidate: int
    fold: int
    refit: bool
    start: float
    end: float
    losses: int


def roles(runtime: Any, before: int, deadline_s: float = 30.0) -> list[Role]:
    """Every SLAQ job that ended since the runtime's ``before``-th finished one, once the tab's JSON (the status
    report) holds each one's final row: the row with its whole history, which the loop publishes at its next epoch."""
    jobs = runtime.jobs.finished()[before:]
    deadline = time.monotonic() + deadline_s
    while True:
        rows = {r.job: r for r in runtime.pools.status_report().finished}
        if all(j.name in rows and rows[j.name].iterations == len(j.history.losses) for j in jobs) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert all(j.name in rows for j in jobs), [j.name for j in jobs if j.name not in rows]
    return [Role(j.name, rows[j.name].group, rows[j.name].candidate, rows[j.name].fold, rows[j.name].refit, j.added_at,
                 j.added_at + rows[j.name].wall_seconds, len(j.history.losses)) for j in jobs]


def check_roles(got: list[Role], cv: Any, candidates: int, folds: int, best: int) -> None:
    """``got`` are the CrossValidator ``cv``'s jobs: one per candidate and fold, then one refit of ``best``, started
    after every fold's fit ended; each a Pipeline fit with its classifier's captured losses."""
    assert [PIPELINE_JOB.match(r.name) is not None for r in got] == [True] * len(got), [r.name for r in got]
    assert len(got) == candidates * folds + 1 and {r.group for r in got} == {cv.uid}
    fits = [r for r in got if not r.refit]
    refit = [r for r in got if r.refit]
    assert sorted((r.candidate, r.fold) for r in fits) == [(c, f) for c in range(candidates) for f in range(folds)]
    assert len(refit) == 1 and refit[0].candidate == best
    assert refit[0].start >= max(r.end for r in fits) - 1e-6
    assert all(r.losses > 3 for r in got)  # the LogisticRegression stage's captured iterations are its Pipeline's job's
