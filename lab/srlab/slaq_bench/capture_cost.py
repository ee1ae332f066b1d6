"""``slaq bench capture``: what capturing a fit's loss costs that fit.

A GBT fit's training error after each tree is computed only when its DEBUG line is wanted (one pass over the
cached prediction RDD per tree), and a Gaussian mixture's log-likelihood line is built per EM step: SLAQ asks for
both while a fit is its job. In one local-cluster session the same fit runs alternately with SLAQ on (every
unmodified fit is a job, its losses captured; the epoch loop runs) and off (``slaq.detach``: no hook, no job, no
capture), so the figure is what SLAQ costs one fit that runs alone, its capture included; the order
rotated each repeat after one unmeasured fit of each kind; medians and spread of each side, and the iterations
captured per fit against the fitted model's (a side that captures nothing measures nothing).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import slaq
from srlab.slaq_bench.configs import session_conf
from srsupport.session import spark_session

SIDES = ("captured", "plain")


@dataclass(frozen=True)
class CaptureFit:
    """One estimator's fit as the bench runs it: its data's width, the estimator, and its iterations as its model counts them."""

    features: int
    label: bool
    make: Callable[[], Any]
    iterations: Callable[[Any], int]


def _gbt() -> Any:
    from pyspark.ml.regression import GBTRegressor

    return GBTRegressor(maxIter=20, maxDepth=5, seed=3)


def _gmm() -> Any:
    from pyspark.ml.clustering import GaussianMixture

    return GaussianMixture(k=4, maxIter=15, tol=0.0, seed=3)


FITS = {
    "gbt": CaptureFit(20, True, _gbt, lambda model: int(model.getNumTrees)),  # one error per tree
    "gmm": CaptureFit(10, False, _gmm, lambda model: int(model.summary.numIter)),  # one log-likelihood per EM step
}


def make_frame(spark: Any, rows: int, fit: CaptureFit, partitions: int = 8) -> Any:
    """Cached ``features`` (three shifted clusters plus noise, seeded) and, for a regressor, a noisy ``label``."""
    from pyspark.ml.feature import VectorAssembler
    from pyspark.sql import functions as F

    cols = [f"x{i}" for i in range(fit.features)]
    df = spark.range(rows).repartition(partitions).select(*[(F.randn(seed=i) + F.col("id") % 3).alias(c) for i, c in enumerate(cols)])
    if fit.label:
        df = df.withColumn("label", F.col("x0") * 2 + F.randn(seed=99))
    df = VectorAssembler(inputCols=cols, outputCol="features").transform(df).select("features", *(["label"] if fit.label else []))
    df = df.cache()
    df.count()
    return df


def _timed_fit(spark: Any, fit: CaptureFit, df: Any, captured: bool) -> tuple[float, int, list[int]]:
    """One fit with SLAQ on (``captured``) or detached: its seconds, its model's iterations and the losses each new
    SLAQ job holds once it ended (one job holding every iteration when captured, no job when not)."""
    jobs = slaq.attach(spark).jobs
    if not captured:
        slaq.detach(spark)
    seen = {id(j) for j in jobs.finished()}
    began = time.perf_counter()
    model = fit.make().fit(df)
    seconds = time.perf_counter() - began
    new = [len(j.history.losses) for j in jobs.finished() if id(j) not in seen]
    return seconds, fit.iterations(model), new


def _side(times: list[float]) -> dict[str, object]:
    return {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3), "max_s": round(max(times), 3),
            "runs_s": [round(t, 3) for t in times]}


def bench_capture(estimators: list[str], repeats: int, rows: int, master: str) -> dict:
    """Per estimator: each side's fit seconds (median, spread, runs) and their ratio, and what was captured."""
    unknown = [e for e in estimators if e not in FITS]
    if unknown or not estimators:
        raise ValueError(f"estimators must be from {', '.join(FITS)}; got {','.join(unknown or estimators) or 'none'}")
    if repeats < 1 or rows < 100:
        raise ValueError(f"repeats must be >= 1 and rows >= 100, got {repeats} and {rows}")
    out: dict = {"workload": {"rows": rows, "repeats": repeats, "master": master}, "estimators": {}}
    with spark_session("slaq-bench-capture", master, session_conf("slaq", 1.0)) as spark:
        try:
            for name in estimators:
                fit = FITS[name]
                df = make_frame(spark, rows, fit)
                for captured in (True, False):  # unmeasured: the first fit of each kind pays the JIT's warm-up
                    _timed_fit(spark, fit, df, captured)
                times: dict[str, list[float]] = {side: [] for side in SIDES}
                captured_per_fit: list[list[int]] = []
                plain_jobs = 0
                iterations: set[int] = set()
                for r in range(repeats):
                    for captured in ((True, False) if r % 2 == 0 else (False, True)):
                        seconds, n, new = _timed_fit(spark, fit, df, captured)
                        times[SIDES[0] if captured else SIDES[1]].append(seconds)
                        iterations.add(n)
                        if captured:
                            captured_per_fit.append(new)
                        else:
                            plain_jobs += len(new)
                df.unpersist()
                ratio = statistics.median(times["captured"]) / statistics.median(times["plain"])
                out["estimators"][name] = {**{side: _side(times[side]) for side in SIDES}, "ratio": round(ratio, 3),
                                           "model_iterations": sorted(iterations), "captured_per_fit": captured_per_fit,
                                           "jobs_while_detached": plain_jobs}
        finally:
            slaq.detach(spark)
    return out


def headline(result: dict) -> list[str]:
    lines = []
    for name, e in result["estimators"].items():
        c, p = e["captured"], e["plain"]
        lines.append(f"{name}: captured {c['median_s']} s ({c['min_s']}-{c['max_s']}) vs plain {p['median_s']} s ({p['min_s']}-{p['max_s']}), "
                     f"{e['ratio']}x; iterations per fit {e['model_iterations']}, captured {e['captured_per_fit']}")
    return lines
