"""Child process of test_loss_capture_lifecycle.py: ``python app.py`` as a user runs it (a notebook, the
pyspark shell), with Spark's log4j2 defaults, whose console shows WARN and coarser. It fits a
LogisticRegression with SLAQ on (from the conf, through the start hook), then in a second context with
SLAQ off, and brackets each fit with marker lines on stderr, the console's stream; it prints one JSON
object (whether SLAQ was on, what it captured, the fit's own history) for the test to judge.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

MARK = "CONSOLE-PHASE"


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
    return {"slaq": on, "captured": captured, "objective_history": list(model.summary.objectiveHistory)}


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
