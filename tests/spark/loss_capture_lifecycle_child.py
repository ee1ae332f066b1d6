"""Child process of test_loss_capture_lifecycle.py: a fresh driver JVM with the user's own log4j2 file.

It snapshots the log4j configuration and what the user's appenders receive (probe lines on breeze's
loggers at every level) before SLAQ, while a first SparkContext captures losses, after it stopped,
and after a second SparkContext in the same JVM captured too; it prints one JSON object for the test
to judge. Run: ``python loss_capture_lifecycle_child.py OUT_DIR`` with ``-Dlog4j2.configurationFile``
set by the parent.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

BREEZE = ["breeze.optimize.LBFGS", "breeze.optimize.OWLQN", "breeze.optimize.LBFGSB"]
LEVELS = ["debug", "info", "warn", "error"]


def log4j_context(jvm: Any) -> Any:
    loader = jvm.java.lang.Class.forName("org.apache.spark.SparkContext").getClassLoader()
    return jvm.org.apache.logging.log4j.LogManager.getContext(loader, False)


def snapshot(jvm: Any) -> dict[str, Any]:
    """Every logger config (identity, level, additivity, appenders, refs), the appenders, breeze loggers' levels and
    the configuration-wide filter (None, or as it names itself)."""
    ctx = log4j_context(jvm)
    config = ctx.getConfiguration()
    loggers = {}
    for name in sorted(config.getLoggers().keySet()):
        lc = config.getLoggers().get(name)
        loggers[name] = {
            "identity": jvm.java.lang.System.identityHashCode(lc),
            "level": str(lc.getExplicitLevel()),
            "additive": lc.isAdditive(),
            "appenders": sorted(lc.getAppenders().keySet()),
            "refs": sorted(f"{r.getRef()}@{r.getLevel()}" for r in lc.getAppenderRefs()),
        }
    config_filter = config.getFilter()
    return {"loggers": loggers, "appenders": sorted(config.getAppenders().keySet()),
            "filter": None if config_filter is None else config_filter.toString(),
            "levels": {name: str(ctx.getLogger(name).getLevel()) for name in BREEZE}}


def probe(jvm: Any, out: Path, tag: str) -> list[str]:
    """Logs one line per loss logger and level; returns which of them each user file received."""
    ctx = log4j_context(jvm)
    for name in BREEZE:
        logger = ctx.getLogger(name)
        for level in LEVELS:
            getattr(logger, level)(f"probe-{tag} {name} {level}")
    seen = []
    for file in ("user.log", "breeze.log"):
        for line in (out / file).read_text().splitlines():
            if f"probe-{tag} " in line:
                seen.append(f"{file}: {line.replace(f'probe-{tag} ', '')}")
    return sorted(seen)


def probe_at_root_error(jvm: Any, out: Path, tag: str) -> list[str]:
    """The probe with the root logger at ERROR (what ``sc.setLogLevel("ERROR")`` does), then back at WARN."""
    ctx = log4j_context(jvm)
    root = ctx.getConfiguration().getRootLogger()
    levels = jvm.org.apache.logging.log4j.Level
    root.setLevel(levels.ERROR)
    ctx.updateLoggers()
    try:
        return probe(jvm, out, tag)
    finally:
        root.setLevel(levels.WARN)
        ctx.updateLoggers()


def unexpected_levels(out: Path) -> list[str]:
    """Lines below WARN in the user's files (the user's config lets none through)."""
    return [line for file in ("user.log", "breeze.log") for line in (out / file).read_text().splitlines()
            if line.split(" ", 1)[0] in ("TRACE", "DEBUG", "INFO")]


def fit_and_capture(spark: Any, name: str, **params: Any) -> dict[str, Any]:
    """Fits a LogisticRegression inside a SLAQ job; the job's captured losses and the model's own history."""
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.linalg import Vectors

    import slaq

    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 3))
    y = (X @ [1.5, -2.0, 0.5] + rng.normal(size=300) > 0).astype(float)
    df = spark.createDataFrame([(float(v), Vectors.dense(x)) for x, v in zip(X, y)], ["label", "features"])
    runtime = slaq.attach(spark)
    with slaq.job(name):
        model = LogisticRegression(maxIter=10, **params).fit(df)
        expected = list(model.summary.objectiveHistory)
        deadline = time.monotonic() + 20
        history = None
        while time.monotonic() < deadline:
            live = runtime.loop.jobs.get(name) if runtime.loop is not None else None
            history = None if live is None else live.history
            if history is not None and history.iterations >= len(expected) - 1:
                break
            time.sleep(0.2)
    return {"captured": list(history.losses) if history is not None else [], "objective_history": expected}


def session(app: str) -> Any:
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local-cluster[1,1,1024]").appName(app)
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.scheduler.mode", "FAIR").config("spark.slaq.enabled", "true")
            .config("spark.slaq.epoch", "0.5s").getOrCreate())


def main(out: Path) -> dict[str, Any]:
    from pyspark import SparkContext

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    SparkContext._ensure_initialized()  # the driver JVM, with the user's log4j2 file, before any context
    jvm = SparkContext._jvm
    result: dict[str, Any] = {"before": snapshot(jvm), "probe_before": probe(jvm, out, "before"),
                              "probe_before_root_error": probe_at_root_error(jvm, out, "before_root_error")}

    for label in ("first", "second"):  # two SparkContexts, one after the other, in this one driver JVM
        spark = session(f"capture-lifecycle-{label}")
        result[f"during_{label}"] = snapshot(jvm)
        result[f"probe_during_{label}"] = probe(jvm, out, f"during_{label}")
        result[f"probe_during_root_error_{label}"] = probe_at_root_error(jvm, out, f"during_root_error_{label}")
        result[f"{label}_l2"] = fit_and_capture(spark, f"{label}-l2", regParam=0.01)
        result[f"{label}_l1"] = fit_and_capture(spark, f"{label}-l1", regParam=0.01, elasticNetParam=1.0)
        spark.stop()
        result[f"after_{label}"] = snapshot(jvm)
        result[f"probe_after_{label}"] = probe(jvm, out, f"after_{label}")
    result["below_warn"] = unexpected_levels(out)
    return result


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(Path(sys.argv[1]))))
