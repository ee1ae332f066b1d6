"""``slaq bench capture``: what capturing a fit's loss costs that fit.

A Gaussian mixture's log-likelihood line is built per EM step while the fit is a SLAQ job (a few short strings,
no Spark work). In one local-cluster session the same fit runs alternately with SLAQ on (every unmodified fit is
a job, its losses captured; the epoch loop runs) and off (``slaq.detach``: no hook, no job, no capture), so the
figure is what SLAQ costs one fit that runs alone, its capture included; the order rotated each repeat after one
unmeasured fit of each side; medians and spread of each side, and the iterations captured per fit against the
fitted model's (a side that captures nothing measures nothing).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import slaq
from srlab.slaq_bench.configs import session_conf
from srsupport.session import spark_session

SIDES = ("captured", "plain")
FEATURES = 10


def make_estimator() -> Any:
    from pyspark.ml.clustering import GaussianMixture

    return GaussianMixture(k=4, maxIter=15, tol=0.0, seed=3)  # tol 0: every EM step runs


def make_frame(spark: Any, rows: int, partitions: int = 8) -> Any:
    """Cached ``features``: three shifted clusters plus noise, seeded."""
    from pyspark.ml.feature import VectorAssembler
    from pyspark.sql import functions as F

    cols = [f"x{i}" for i in range(FEATURES)]
    df = spark.range(rows).repartition(partitions).select(*[(F.randn(seed=i) + F.col("id") % 3).alias(c) for i, c in enumerate(cols)])
    df = VectorAssembler(inputCols=cols, outputCol="features").transform(df).select("features").cache()
    df.count()
    return df


def _timed_fit(spark: Any, df: Any, captured: bool) -> tuple[float, int, list[int]]:
    """One fit with SLAQ on (``captured``) or detached: its seconds, its model's EM steps and the losses each new
    SLAQ job holds once it ended (one job holding every step when captured, no job when not)."""
    jobs = slaq.attach(spark).jobs
    if not captured:
        slaq.detach(spark)
    seen = {id(j) for j in jobs.finished()}
    began = time.perf_counter()
    model = make_estimator().fit(df)
    seconds = time.perf_counter() - began
    new = [len(j.history.losses) for j in jobs.finished() if id(j) not in seen]
    return seconds, int(model.summary.numIter), new


def _side(times: list[float]) -> dict[str, object]:
    return {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3), "max_s": round(max(times), 3),
            "runs_s": [round(t, 3) for t in times]}


def bench_capture(repeats: int, rows: int, master: str) -> dict:
    """Each side's fit seconds (median, spread, runs) and their ratio, and what was captured."""
    if repeats < 1 or rows < 100:
        raise ValueError(f"repeats must be >= 1 and rows >= 100, got {repeats} and {rows}")
    with spark_session("slaq-bench-capture", master, session_conf("slaq", 1.0)) as spark:
        try:
            df = make_frame(spark, rows)
            for captured in (True, False):  # unmeasured: the first fit of each side pays the JIT's warm-up
                _timed_fit(spark, df, captured)
            times: dict[str, list[float]] = {side: [] for side in SIDES}
            captured_per_fit: list[list[int]] = []
            plain_jobs = 0
            iterations: set[int] = set()
            for r in range(repeats):
                for captured in ((True, False) if r % 2 == 0 else (False, True)):
                    seconds, n, new = _timed_fit(spark, df, captured)
                    times[SIDES[0] if captured else SIDES[1]].append(seconds)
                    iterations.add(n)
                    if captured:
                        captured_per_fit.append(new)
                    else:
                        plain_jobs += len(new)
            df.unpersist()
        finally:
            slaq.detach(spark)
    ratio = statistics.median(times["captured"]) / statistics.median(times["plain"])
    return {"workload": {"estimator": "GaussianMixture", "rows": rows, "features": FEATURES, "repeats": repeats, "master": master},
            **{side: _side(times[side]) for side in SIDES}, "ratio": round(ratio, 3), "model_iterations": sorted(iterations),
            "captured_per_fit": captured_per_fit, "jobs_while_detached": plain_jobs}


def headline(result: dict) -> list[str]:
    c, p = result["captured"], result["plain"]
    return [f"GaussianMixture: captured {c['median_s']} s ({c['min_s']}-{c['max_s']}) vs plain {p['median_s']} s ({p['min_s']}-{p['max_s']}), "
            f"{result['ratio']}x; EM steps per fit {result['model_iterations']}, captured {result['captured_per_fit']}"]
