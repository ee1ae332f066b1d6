"""An Optuna study of spark.ml LogisticRegressions, 3 trials at a time: no SLAQ code beyond the pruner.

    pip install "slaq-riffle[optuna]"
    spark-submit --master "local-cluster[2,1,1024]" --conf spark.scheduler.mode=FAIR \
        --conf spark.slaq.enabled=true examples/tune_with_optuna.py

With SLAQ on, each running trial is one SLAQ job (``tune-lr#3 regParam=0.01 elasticNetParam=0.5``)
whose losses are the values it reports; its fits run in its pool, so SLAQ gives cores to the trials
predicted to improve most. ``slaq.optuna.Pruner`` stops a trial whose predicted final log loss cannot
beat the best trial's, and its cores go to the others at once. With SLAQ off the same study runs as
plain Spark (the pruner still prunes).
"""

from __future__ import annotations

from typing import Any

import optuna
from pyspark.ml.classification import LogisticRegression
from pyspark.ml.evaluation import MulticlassClassificationEvaluator
from pyspark.ml.feature import VectorAssembler
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from slaq.optuna import Pruner


def synthetic(spark: SparkSession, rows: int, seed: int = 0) -> tuple[Any, Any]:
    """Cached (train, validation) DataFrames of a learnable binary problem with 8 features."""
    cols = [f"x{i}" for i in range(8)]
    raw = spark.range(rows, numPartitions=2).select(*[F.randn(seed=seed * 100 + i).alias(c) for i, c in enumerate(cols)])
    raw = raw.withColumn("label", (F.col("x0") - 2 * F.col("x1") + F.col("x2") + F.randn(seed=seed * 100 + 99) > 0).cast("double"))
    data = VectorAssembler(inputCols=cols, outputCol="features").transform(raw).select("features", "label")
    train, valid = (d.cache() for d in data.randomSplit([0.7, 0.3], seed=seed))
    train.count(), valid.count()
    return train, valid


def objective_for(train: Any, valid: Any, steps: int = 4, iterations: int = 3, sign: float = 1.0) -> Any:
    """The objective: after each step (``iterations`` more L-BFGS iterations, refitted from scratch:
    spark.ml has no warm start) it reports the validation log loss times ``sign`` (-1: a maximized
    "negative log loss") and asks whether to stop."""
    evaluator = MulticlassClassificationEvaluator(metricName="logLoss")

    def objective(trial: optuna.Trial) -> float:
        reg = trial.suggest_float("regParam", 1e-3, 1.0, log=True)
        net = trial.suggest_float("elasticNetParam", 0.0, 1.0)
        value = 0.0
        for step in range(steps):
            model = LogisticRegression(maxIter=iterations * (step + 1), regParam=reg, elasticNetParam=net).fit(train)
            value = sign * evaluator.evaluate(model.transform(valid))
            trial.report(value, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return value

    return objective


def tune(train: Any, valid: Any, trials: int = 12, n_jobs: int = 3, name: str = "tune-lr", direction: str = "minimize",
         pruner: optuna.pruners.BasePruner | None = None, points: list[dict[str, float]] | None = None,
         steps: int = 4, iterations: int = 3) -> optuna.Study:
    """Runs the study; ``points``: parameters to try first, in order (a seeded study the same every run)."""
    study = optuna.create_study(study_name=name, direction=direction, pruner=pruner or optuna.pruners.NopPruner(),
                                sampler=optuna.samplers.TPESampler(seed=7))
    for point in points or []:
        study.enqueue_trial(point)
    study.optimize(objective_for(train, valid, steps, iterations, -1.0 if direction == "maximize" else 1.0), n_trials=trials, n_jobs=n_jobs)
    return study


if __name__ == "__main__":
    spark = SparkSession.builder.appName("slaq-optuna").getOrCreate()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    train, valid = synthetic(spark, 10000)
    study = tune(train, valid, trials=12, n_jobs=3, pruner=Pruner())
    states = [t.state.name for t in study.trials]
    print("trials:", len(states), "complete:", states.count("COMPLETE"), "pruned:", states.count("PRUNED"))
    print("best trial:", study.best_trial.number, study.best_params, "log loss:", round(study.best_value, 4))
    spark.stop()
