"""Child process of test_connect.py: a Spark Connect client that runs spark.ml fits on the server.

Run: ``python connect_client_child.py PORT [SCENARIO]``: with SCENARIO, runs it and prints one JSON line;
without, runs each scenario named on a line of stdin in one session (made at the first, so the imports happen
while the server starts) and prints ``RESULT <json>`` for each (``{"result": ...}`` or ``{"error": traceback}``),
until stdin closes. A separate process because a Connect session switches pyspark.ml into its remote mode for the
whole process. Scenarios: ``concurrent`` (two LogisticRegression fits at once, from two threads: their
coefficients and objective histories), ``cv`` (a CrossValidator over 2 param maps and 2 folds,
parallelism 2: its average metrics), ``sql`` (a shuffle aggregation: its rows).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from pyspark.ml.classification import LogisticRegression
from pyspark.ml.linalg import Vectors
from pyspark.sql import SparkSession
from pyspark.util import inheritable_thread_target


def data(spark: Any) -> Any:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 4))
    y = (X @ [1.0, -2.0, 0.5, 0.0] + rng.normal(size=300) > 0).astype(float)
    return spark.createDataFrame([(float(label), Vectors.dense(x)) for x, label in zip(X, y)], ["label", "features"]).repartition(4)


def concurrent(spark: Any) -> Any:
    df = data(spark)

    @inheritable_thread_target(spark)
    def fit(reg: float) -> dict[str, Any]:
        # every param explicitly set, most at their defaults (the fit is the default one): how the job's name writes each kind
        model = LogisticRegression(maxIter=10, regParam=reg, tol=1e-06, fitIntercept=True, family="auto",
                                   featuresCol="features").fit(df)
        return {"reg": reg, "coefficients": list(model.coefficients), "intercept": model.intercept,
                "objective": list(model.summary.objectiveHistory)}

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(fit, [0.1, 0.01]))


def cv(spark: Any) -> Any:
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    lr = LogisticRegression(maxIter=8)
    grid = ParamGridBuilder().addGrid(lr.regParam, [0.01, 0.1]).build()
    model = CrossValidator(estimator=lr, estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(), numFolds=2,
                           parallelism=2, seed=11).fit(data(spark))
    return {"avg_metrics": list(model.avgMetrics)}


def sql(spark: Any) -> Any:
    rows = spark.sql("SELECT id % 53 AS k, count(*) AS c FROM range(0, 20000, 1, 12) GROUP BY id % 53").collect()
    return sorted([int(r["k"]), int(r["c"])] for r in rows)


SCENARIOS = {"concurrent": concurrent, "cv": cv, "sql": sql}


def main(port: str, scenario: str | None) -> None:
    if scenario is not None:
        spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        print(json.dumps(SCENARIOS[scenario](spark)), flush=True)
        spark.stop()
        return
    spark = None
    for line in sys.stdin:
        if spark is None:
            spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        try:
            out = {"result": SCENARIOS[line.strip()](spark)}
        except Exception:
            out = {"error": traceback.format_exc()}
        print("RESULT " + json.dumps(out), flush=True)
    if spark is not None:
        spark.stop()


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    os._exit(0)  # the Connect client's threads would otherwise keep the process alive
