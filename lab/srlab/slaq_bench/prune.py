"""``slaq bench prune``: time until a CrossValidator's best model is known, with pruning
(``spark.slaq.prune``) vs stock Spark's exhaustive CrossValidator, over seeded grids.

Each seed is one grid: a LogisticRegression CrossValidator over ``candidates`` param maps drawn from
that seed (``regParam`` log-uniform in [1e-4, 1], ``elasticNetParam`` from {0, 0.5, 1}) on data
generated from the same seed (:func:`srlab.slaq_bench.mllib_workload.make_data`). The metric is the
validation log loss by default: AUC ignores the scale of a linear model's scores, so candidates that
differ only in L2 strength tie on it to the sixth digit and the "best" is whichever rounding wins
(``--metric auc`` measures that case).
Every configuration runs every grid, one after another, in a fresh session of its own that first
fits one small unmeasured grid (the JIT warm-up a gateway's first session would otherwise pay
alone). The figure is each grid's ``fit()`` wall time (its folds and the refit of the best: the
best model is known when ``fit()`` returns) relative to stock's, and whether the same param map
was chosen; every grid where it differed is listed.
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

import slaq
from srlab.slaq_bench.configs import PRUNE, STOCK, check_configs, session_conf
from srlab.slaq_bench.mllib_workload import DataSpec, make_data
from srsupport.session import DEFAULT_MASTER, spark_session

log = logging.getLogger("srlab.slaq_bench.prune")

CONFIGS = (STOCK, "slaq", PRUNE)
ELASTIC_NET = (0.0, 0.5, 1.0)


@dataclass(frozen=True)
class PruneWorkload:
    seeds: tuple[int, ...]
    rows: int = 5000
    features: int = 40
    partitions: int = 4
    candidates: int = 8
    folds: int = 3
    max_iter: int = 20
    parallelism: int = 4
    metric: str = "logLoss"  # or "areaUnderROC"


def grid_values(seed: int, candidates: int) -> list[dict[str, float]]:
    """The seed's param maps as plain values (what the JSON reports and the CrossValidator's grid holds)."""
    rng = np.random.default_rng(seed)
    regs = 10 ** rng.uniform(-4, 0, size=candidates)
    nets = rng.choice(ELASTIC_NET, size=candidates)
    return [{"regParam": round(float(r), 6), "elasticNetParam": float(e)} for r, e in zip(regs, nets)]


def cross_validate(data: Any, values: list[dict[str, float]], work: PruneWorkload, seed: int) -> tuple[float, Any]:
    """One grid's CrossValidator fit: its wall seconds and model."""
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.evaluation import BinaryClassificationEvaluator, MulticlassClassificationEvaluator
    from pyspark.ml.tuning import CrossValidator

    lr = LogisticRegression(maxIter=work.max_iter)
    maps = [{lr.getParam(k): v for k, v in m.items()} for m in values]
    evaluator = (BinaryClassificationEvaluator() if work.metric == "areaUnderROC"
                 else MulticlassClassificationEvaluator(metricName=work.metric))  # type: ignore[arg-type]  # pyspark's Literal lacks logLoss
    cv = CrossValidator(estimator=lr, estimatorParamMaps=maps, evaluator=evaluator, numFolds=work.folds,
                        parallelism=work.parallelism, seed=seed)
    began = time.monotonic()
    model = cv.fit(data)
    return time.monotonic() - began, model


def run_config(config: str, work: PruneWorkload, master: str, epoch: float) -> list[dict]:
    """Every grid of ``work`` in one fresh session of ``config``, after an unmeasured warm-up grid."""
    out = []
    with spark_session(f"slaq-bench-prune-{config}", master, session_conf(config, epoch)) as spark:
        scheduler = slaq.attach(spark, explicit=False)  # the confs decide: stock runs with SLAQ off
        try:
            warm = make_data(spark, DataSpec(2000, work.features, work.partitions, 0))
            cross_validate(warm, grid_values(0, 2), PruneWorkload((0,), folds=2, max_iter=5, parallelism=2, metric=work.metric), 0)
            warm.unpersist()
            for seed in work.seeds:
                data = make_data(spark, DataSpec(work.rows, work.features, work.partitions, seed))
                values = grid_values(seed, work.candidates)
                seconds, model = cross_validate(data, values, work, seed)
                data.unpersist()
                metrics = [float(m) for m in model.avgMetrics]
                best = int(np.argmax(metrics) if model.getEvaluator().isLargerBetter() else np.argmin(metrics))
                out.append({"seed": seed, "seconds": round(seconds, 2), "best": best, "best_params": values[best],
                            "best_metric": round(metrics[best], 6), "pruned": sum(math.isinf(m) for m in metrics),
                            "avg_metrics": [None if math.isinf(m) else round(m, 6) for m in metrics]})
                log.info("%s seed %d: %.1f s, best %d (%s), %d pruned", config, seed, seconds, best, values[best], out[-1]["pruned"])
        finally:
            scheduler.stop()
    return out


def compare(runs: dict[str, list[dict]]) -> dict[str, Any]:
    """Per configuration against stock: each grid's time ratio, their median, and the grids whose best differed. Pure."""
    stock = {r["seed"]: r for r in runs[STOCK]}
    out: dict[str, Any] = {}
    for config, rows in runs.items():
        if config == STOCK:
            continue
        ratios = [r["seconds"] / stock[r["seed"]]["seconds"] for r in rows]
        differed = [{"seed": r["seed"], "best": r["best_params"], "best_metric": r["best_metric"],
                     "stock_best": stock[r["seed"]]["best_params"], "stock_best_metric": stock[r["seed"]]["best_metric"],
                     "stock_metric_of_chosen": stock[r["seed"]]["avg_metrics"][r["best"]]}
                    for r in rows if r["best"] != stock[r["seed"]]["best"]]
        out[config] = {"time_ratio_per_grid": [round(x, 3) for x in ratios], "median_time_ratio": round(statistics.median(ratios), 3),
                       "total_time_ratio": round(sum(r["seconds"] for r in rows) / sum(stock[r["seed"]]["seconds"] for r in rows), 3),
                       "same_best": len(rows) - len(differed), "grids": len(rows), "differed": differed,
                       "pruned_candidates": sum(r["pruned"] for r in rows)}
    return out


def bench_prune(work: PruneWorkload, configs: list[str], master: str = DEFAULT_MASTER, epoch: float = 1.0) -> dict[str, Any]:
    check_configs(configs)
    if STOCK not in configs:
        raise ValueError("the figure is relative to stock: include it in --configs")
    if work.folds < 2 or work.candidates < 2 or not work.seeds:
        raise ValueError("need at least 2 folds, 2 candidates and one seed")
    runs = {config: run_config(config, work, master, epoch) for config in configs}
    return {"workload": asdict(work) | {"master": master, "epoch_s": epoch}, "runs": runs, "vs_stock": compare(runs)}


def headline(result: dict[str, Any]) -> list[str]:
    lines = []
    for config, v in result["vs_stock"].items():
        lines.append(f"{config}: time until the best model is known {v['median_time_ratio']:.2f}x stock's (median of "
                     f"{v['grids']} grids; total {v['total_time_ratio']:.2f}x), same best in {v['same_best']} of {v['grids']}, "
                     f"{v['pruned_candidates']} candidates pruned")
        lines += [f"  seed {d['seed']}: chose {d['best']} ({d['best_metric']}; stock measured it {d['stock_metric_of_chosen']}), "
                  f"stock chose {d['stock_best']} ({d['stock_best_metric']})" for d in v["differed"]]
    return lines
