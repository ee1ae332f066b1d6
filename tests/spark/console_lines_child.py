"""Child process of test_loss_capture_lifecycle.py: ``python app.py`` as a user runs it (a notebook, the
pyspark shell), with Spark's log4j2 defaults, whose console shows WARN and coarser. It fits a
LogisticRegression, and a GBTRegressor with the user's DEBUG config on the logger of its per-tree error line,
with SLAQ on (from the conf, through the start hook), then in a second context with SLAQ off, and brackets
each fit with marker lines on stderr, the console's stream; it prints one JSON object (whether SLAQ was on,
what it captured, the fit's own history and the GBT model's predictions) for the test to judge.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

MARK = "CONSOLE-PHASE"
GBT_LOGGER = "org.apache.spark.ml.tree.impl.GradientBoostedTrees"  # logs "error of gbt = ..." per tree at DEBUG


def gbt_debug(spark: Any, on: bool) -> None:
    """A user's DEBUG config for the GBT logger (``on``), or none (Spark's defaults)."""
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    if on:
        log4j.core.config.Configurator.setLevel(GBT_LOGGER, log4j.Level.DEBUG)
    else:
        ctx = log4j.LogManager.getContext(spark.sparkContext._jvm.java.lang.Class.forName(
            "org.apache.spark.SparkContext").getClassLoader(), False)
        ctx.getConfiguration().removeLogger(GBT_LOGGER)
        ctx.updateLoggers()


def fit(spark: Any, phase: str) -> dict[str, Any]:
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.linalg import Vectors

    import slaq

    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 3))
    y = (X @ [1.5, -2.0, 0.5] + rng.normal(size=200) > 0).astype(float)
    df = spark.createDataFrame([(float(v), Vectors.dense(x)) for x, v in zip(X, y)], ["label", "features"])
    on = slaq.attach(spark, explicit=False).enabled  # what the start hook attached from the conf
    with slaq.job(f"console-{phase}") as job:
        print(f"{MARK} {phase} start", file=sys.stderr, flush=True)
        model = LogisticRegression(maxIter=10).fit(df)
        print(f"{MARK} {phase} end", file=sys.stderr, flush=True)
        captured = list(job.losses)  # complete when fit() returned; with SLAQ off nothing is captured
    return {"slaq": on, "captured": captured, "objective_history": list(model.summary.objectiveHistory), "gbt": fit_gbt(spark, phase, df)}


def fit_gbt(spark: Any, phase: str, df: Any) -> dict[str, Any]:
    """A GBTRegressor fit with the GBT logger at DEBUG: its captured losses, its predictions on its data, its trees."""
    from pyspark.ml.regression import GBTRegressor

    import slaq

    gbt_debug(spark, True)
    try:
        with slaq.job(f"console-gbt-{phase}") as job:
            print(f"{MARK} {phase}-gbt start", file=sys.stderr, flush=True)
            model = GBTRegressor(maxIter=5, maxDepth=3, seed=3).fit(df)
            print(f"{MARK} {phase}-gbt end", file=sys.stderr, flush=True)
            captured = list(job.losses)
    finally:
        gbt_debug(spark, False)
    predictions = [r[0] for r in model.transform(df).select("prediction").collect()]
    trees = [(t.numNodes, t.depth, list(t.featureImportances.toArray())) for t in model.trees]
    return {"captured": captured, "predictions": predictions, "trees": trees, "tree_weights": list(model.treeWeights)}


def session(slaq_on: bool) -> Any:
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[1]").appName("console-lines")
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.scheduler.mode", "FAIR").config("spark.slaq.enabled", str(slaq_on).lower())
            .config("spark.slaq.epoch", "0.5s").getOrCreate())


def main() -> dict[str, Any]:
    result = {}
    for phase, on in (("on", True), ("off", False)):  # SLAQ on from the JVM's start, as a user's app; then plain Spark
        spark = session(on)
        result[phase] = fit(spark, phase)
        spark.stop()
    return result


if __name__ == "__main__":
    print("RESULT " + json.dumps(main()))
