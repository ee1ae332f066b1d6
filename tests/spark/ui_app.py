"""A real SLAQ app for the UI tests (run as its own process, so its driver UI is on and its JVM its own).

Starts local-cluster Spark (one executor JVM with both cores) with the UI on 127.0.0.1 (the caller sets
SPARK_LOCAL_IP) and a random port, runs a small spark.ml CrossValidator (its fits are SLAQ jobs grouped under it),
then SLAQ jobs (instrumented logistic regression and SVM on Spark; one of them short, so it finishes while the
others run), prints {"ui": <url>} on stdout, and exits when its stdin closes.

The CrossValidator runs first, alone: its first fold is where the JVM compiles spark.ml's code, and beside two
never-ending trainers it took twice the CPU and three times the wall time, while the tab shows the same at the end
(the tuner's finished fits under their heading, the trainers running).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from pyspark import InheritableThread
from pyspark.sql import SparkSession

import slaq
from slaq.ml import logistic_regression, svm, synthetic_blocks

# (name, trainer, iterations): the first name needs HTML escaping and holds a right-to-left override, which must not
# reorder the names after it; "short" finishes early
LONG_NAME = "svm_1_hinge_loss_step_0.1_minibatch_0.5_l2_0.01_iterations_100000_features_v2"  # no space: the table must break it
JOBS = [("lr <a>&'x'\u202e", logistic_regression, 100_000), (LONG_NAME, svm, 100_000), ("short", logistic_regression, 6)]
CV_PARAMS = [0.1, 0.01]  # regParam of the CrossValidator's candidates
CV_FOLDS = 2
SHOWN_ITERATIONS = 3  # the tests wait for a row of each job with this many iterations in an epoch's status


def shown_running(runtime, name: str, timeout: float = 120.0) -> None:
    """Until an epoch's status lists job ``name`` running with :data:`SHOWN_ITERATIONS` or more: a short job's
    iterations can all fall between two epochs' statuses (0, 2, then finished), and the tests would wait for a row
    that never comes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = runtime.pools.status_report().history[-1:]
        if any(j.job == name and j.iterations >= SHOWN_ITERATIONS for e in last for j in e.jobs):
            return
        time.sleep(0.05)


def cross_validate(spark: SparkSession) -> None:
    """A small CrossValidator over LogisticRegression: len(CV_PARAMS) x CV_FOLDS fits, then the refit."""
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.linalg import Vectors
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    rows = [(float(i % 2), Vectors.dense([(i % 7) / 7.0 + (i % 2), (i % 5) / 5.0])) for i in range(200)]
    data = spark.createDataFrame(rows, ["label", "features"]).repartition(2).cache()
    lr = LogisticRegression(maxIter=4)
    grid = ParamGridBuilder().addGrid(lr.regParam, CV_PARAMS).build()
    CrossValidator(estimator=lr, estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(), numFolds=CV_FOLDS,
                   parallelism=2, seed=7).fit(data)


def main() -> int:
    local_dir = sys.argv[1]
    spark = (SparkSession.builder.master("local-cluster[1,2,1024]").appName("slaq-ui-test")
             .config("spark.local.dir", local_dir)
             .config("spark.ui.enabled", "true").config("spark.ui.port", "0").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "1g")
             .config("spark.scheduler.mode", "FAIR").config("spark.slaq.enabled", "true").config("spark.slaq.epoch", "0.5s")
             .getOrCreate())
    sc = spark.sparkContext
    runtime = slaq.attach(spark)
    errors: list[str] = []

    def train(name: str, trainer, iterations: int) -> None:
        try:
            blocks = synthetic_blocks(sc, 2, 200, 5, seed=len(name), cache=True)
            with slaq.job(name) as job:
                trainer(blocks, iterations)
                shown_running(runtime, name)  # open until the tab has shown it iterating (the long ones never end)
            if name == "short":  # what the test compares the finished row with
                (Path(local_dir).parent / "short-losses.json").write_text(json.dumps(job.losses))
        except Exception as exc:  # the app is stopped under running jobs; only report failures before that
            if not stopping.is_set():
                errors.append(f"{name}: {exc}")
                print(f"ui_app: job {name} failed: {exc}", file=sys.stderr, flush=True)

    def tune() -> None:
        try:
            cross_validate(spark)
        except Exception as exc:
            if not stopping.is_set():
                errors.append(f"CrossValidator: {exc}")
                print(f"ui_app: CrossValidator failed: {exc}", file=sys.stderr, flush=True)

    def tune_then_train() -> None:
        tune()
        for name, trainer, iterations in JOBS:
            InheritableThread(target=train, args=(name, trainer, iterations), daemon=True).start()

    stopping = threading.Event()
    InheritableThread(target=tune_then_train, daemon=True).start()
    print(json.dumps({"ui": sc.uiWebUrl}), flush=True)
    sys.stdin.read()  # the test closes stdin when it is done
    stopping.set()
    sc.cancelAllJobs()
    spark.stop()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1 if errors else 0)  # training threads are still inside cancelled jobs


if __name__ == "__main__":
    sys.exit(main())
