"""``slaq bench optuna``: the same seeded Optuna study of spark.ml fits under SLAQ with its pruner, under
stock Spark with Optuna's ``MedianPruner``, and under stock Spark with no pruner, side by side.

Each seed is one study: ``trials`` LogisticRegressions on data generated from that seed
(:func:`srlab.slaq_bench.mllib_workload.make_data`, split 80/20 into training and validation), with
param points drawn from the seed (``regParam`` log-uniform in [1e-4, 1], ``elasticNetParam`` from
{0, 0.5, 1}) and enqueued in order, so every configuration tries the same trials and the exhaustive run
(no pruner) knows the true best. A trial runs ``steps`` steps; step ``s`` refits with
``iterations·(s+1)`` L-BFGS iterations (spark.ml has no warm start) and reports the validation log
loss. ``n_jobs`` trials run at once. Configurations:

* ``slaq``: SLAQ on (each trial a SLAQ job, :mod:`slaq.integrations.optuna.trials`) with :class:`slaq.optuna.Pruner`;
* ``median``: SLAQ off, each trial in a FAIR pool of its own (stock Spark), ``MedianPruner()``;
* ``none``: SLAQ off, the same pools, no pruner;
* ``slaq-nopruner`` (opt-in): SLAQ on, no pruner: SLAQ's scheduling alone.

Within one Spark application, after an unmeasured warm-up study, every (seed, repeat) runs the
configurations one after another, in an order rotated per repeat. Measured per run: the time from the
study's start until its best trial completed (the best is known then), the best value, the trials
pruned. Reported per configuration and seed: median and spread (min, max) over the repeats; and
against ``median`` and ``none``: each seed's ratio of medians, their median over the seeds, and the
seeds whose best value equals the exhaustive run's.

Without a clock (``--offline``, :mod:`srlab.slaq_bench.optuna_replay`): each study recorded once with no
pruner, then replayed offline with each pruner on a step-cost clock.
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

import slaq
from srlab.slaq_bench.configs import session_conf, stock_pool
from srlab.slaq_bench.mllib_workload import DataSpec, make_data
from srsupport.session import DEFAULT_MASTER, executor_memory, spark_session

log = logging.getLogger("srlab.slaq_bench.optuna_prune")

SLAQ, MEDIAN, NONE, SLAQ_NO_PRUNER = "slaq", "median", "none", "slaq-nopruner"
CONFIGS = (SLAQ, MEDIAN, NONE, SLAQ_NO_PRUNER)  # the last is opt-in: SLAQ's scheduling alone
ELASTIC_NET = (0.0, 0.5, 1.0)
SAME = 1e-6  # relative difference under which two best values are the same (floating-point reassociation is ~1e-12)


@dataclass(frozen=True)
class OptunaWorkload:
    seeds: tuple[int, ...]
    repeats: int = 3
    trials: int = 24
    n_jobs: int = 4
    steps: int = 5
    iterations: int = 4
    rows: int = 5000
    features: int = 40
    partitions: int = 4


def points(seed: int, trials: int) -> list[dict[str, float]]:
    """The seed's trial parameters, in the order they are enqueued."""
    rng = np.random.default_rng(seed)
    regs = 10 ** rng.uniform(-4, 0, size=trials)
    nets = rng.choice(ELASTIC_NET, size=trials)
    return [{"regParam": round(float(r), 6), "elasticNetParam": float(e)} for r, e in zip(regs, nets)]


def pruner_of(config: str) -> Any:
    import optuna

    from slaq.optuna import Pruner

    return {SLAQ: Pruner, MEDIAN: optuna.pruners.MedianPruner, NONE: optuna.pruners.NopPruner, SLAQ_NO_PRUNER: optuna.pruners.NopPruner}[config]()


def objective_for(train: Any, valid: Any, work: OptunaWorkload, pool: Callable[[int], Any] | None) -> Callable[[Any], float]:
    """The study's objective; ``pool(number)``, when given, is the context a trial's Spark work runs in (stock's own pool)."""
    import optuna
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator

    evaluator = MulticlassClassificationEvaluator(metricName="logLoss")  # type: ignore[arg-type]  # pyspark's Literal lacks logLoss

    def steps(trial: Any) -> float:
        reg = trial.suggest_float("regParam", 1e-4, 1.0, log=True)
        net = trial.suggest_categorical("elasticNetParam", list(ELASTIC_NET))
        value = math.nan
        for step in range(work.steps):
            model = LogisticRegression(maxIter=work.iterations * (step + 1), regParam=reg, elasticNetParam=net).fit(train)
            value = evaluator.evaluate(model.transform(valid))
            trial.report(value, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return value

    def objective(trial: Any) -> float:
        if pool is None:
            return steps(trial)
        with pool(trial.number):
            return steps(trial)

    return objective


def run_study(train: Any, valid: Any, seed: int, config: str, work: OptunaWorkload, pool: Callable[[int], Any] | None) -> dict[str, Any]:
    """One study: when its best trial completed (seconds from its start), its best value and what was pruned."""
    import optuna

    study = optuna.create_study(direction="minimize", pruner=pruner_of(config), sampler=optuna.samplers.RandomSampler(seed))
    for point in points(seed, work.trials):
        study.enqueue_trial(point)
    completed: dict[int, float] = {}
    began = time.monotonic()
    study.optimize(objective_for(train, valid, work, pool), n_trials=work.trials, n_jobs=work.n_jobs,
                   callbacks=[lambda _s, t: completed.__setitem__(t.number, time.monotonic() - began)])
    total = time.monotonic() - began
    best = study.best_trial
    states = [t.state.name for t in study.trials]
    return {"config": config, "seed": seed, "seconds_to_best": round(completed[best.number], 2), "seconds": round(total, 2),
            "best_trial": best.number, "best_value": study.best_value, "pruned": states.count("PRUNED")}


@contextmanager
def _slaq(runtime: Any, on: bool) -> Iterator[None]:
    """SLAQ on (as attached) or off (stopped: Optuna's own methods, plain FAIR pools) for one study."""
    if on:
        yield
        return
    runtime.stop()
    try:
        yield
    finally:
        runtime.start()


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}


def summarize(runs: list[dict[str, Any]], configs: list[str]) -> dict[str, Any]:
    """Per configuration and seed: the spread of the repeats; per configuration against each other one: each
    seed's ratio of median times to the best trial, their median, and the seeds whose best value (every
    repeat's) equals the exhaustive run's (``none``), when it ran. Pure."""
    seeds = sorted({r["seed"] for r in runs})
    by = {(c, s): [r for r in runs if r["config"] == c and r["seed"] == s] for c in configs for s in seeds}
    per_seed: dict[str, dict[int, dict[str, Any]]] = {c: {s: {"seconds_to_best": spread([r["seconds_to_best"] for r in by[(c, s)]]),
                        "seconds": spread([r["seconds"] for r in by[(c, s)]]),
                        "best_values": sorted({r["best_value"] for r in by[(c, s)]}),
                        "pruned": spread([r["pruned"] for r in by[(c, s)]])} for s in seeds} for c in configs}
    out: dict[str, Any] = {"per_seed": per_seed, "vs": {}}
    for c in configs:
        for other in configs:
            if other == c:
                continue
            ratios = [per_seed[c][s]["seconds_to_best"]["median"] / per_seed[other][s]["seconds_to_best"]["median"] for s in seeds]
            out["vs"][f"{c}/{other}"] = {"ratio_per_seed": [round(x, 3) for x in ratios], "median_ratio": round(statistics.median(ratios), 3),
                                         "min_ratio": round(min(ratios), 3), "max_ratio": round(max(ratios), 3)}
    if NONE in configs:
        truth = {s: per_seed[NONE][s]["best_values"][0] for s in seeds}
        out["same_best_as_none"] = {c: sum(all(math.isclose(v, truth[s], rel_tol=SAME) for v in per_seed[c][s]["best_values"]) for s in seeds)
                                    for c in configs if c != NONE}
    out["studies"] = len(seeds)
    return out


def bench_optuna(work: OptunaWorkload, configs: list[str], master: str = DEFAULT_MASTER, epoch: float = 1.0,
                 executor_memory_mb: int | None = None) -> dict[str, Any]:
    """``executor_memory_mb``: every executor's heap (Spark's 1 GiB when None), for a size where the trials' training caches need it."""
    import optuna

    if not configs or len(set(configs)) != len(configs) or set(configs) - set(CONFIGS):
        raise ValueError(f"configurations must be distinct names from {', '.join(CONFIGS)}; got {','.join(configs) or 'none'}")
    if not work.seeds or work.repeats < 1 or work.trials < 2 or work.steps < 1:
        raise ValueError("need a seed, a repeat, 2 trials and a step")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    runs: list[dict[str, Any]] = []
    master, memory = executor_memory(master, executor_memory_mb) if executor_memory_mb is not None else (master, {})
    with spark_session("slaq-bench-optuna", master, session_conf("slaq", epoch) | memory) as spark:
        runtime = slaq.attach(spark, explicit=False)
        sc = spark.sparkContext

        def stock(number: int) -> Any:
            return stock_pool(sc, number)

        try:
            # the warm-up: one wave of trials of the measured size (a smaller one left the first measured study up to 2x slower)
            warm = OptunaWorkload((0,), trials=work.n_jobs, n_jobs=work.n_jobs, steps=work.steps, iterations=work.iterations, rows=work.rows,
                                  features=work.features, partitions=work.partitions)
            for seed in (0, *work.seeds):
                w = warm if seed == 0 else work
                data = make_data(spark, DataSpec(w.rows, w.features, w.partitions, seed))
                train, valid = (d.cache() for d in data.randomSplit([0.8, 0.2], seed=seed))
                train.count(), valid.count()
                for repeat in range(1 if seed == 0 else work.repeats):
                    for i in range(len(configs)):
                        config = configs[(i + repeat) % len(configs)]
                        on = config in (SLAQ, SLAQ_NO_PRUNER)
                        with _slaq(runtime, on):
                            run = run_study(train, valid, seed, config, w, None if on else stock)
                        if seed != 0:
                            runs.append(run | {"repeat": repeat})
                            log.info("seed %d repeat %d %s: best trial %d (%.6g) known after %.1f s of %.1f s, %d pruned", seed, repeat,
                                     config, run["best_trial"], run["best_value"], run["seconds_to_best"], run["seconds"], run["pruned"])
                for d in (train, valid, data):
                    d.unpersist()
        finally:
            runtime.stop()
    return {"workload": asdict(work) | {"master": master, "executor_memory_mb": executor_memory_mb, "epoch_s": epoch, "configs": configs}, "runs": runs,
            "summary": summarize(runs, configs)}


def headline(result: dict[str, Any]) -> list[str]:
    s = result["summary"]
    lines = []
    for key in (f"{SLAQ}/{MEDIAN}", f"{SLAQ}/{NONE}"):
        if key in s["vs"]:
            v = s["vs"][key]
            lines.append(f"{key}: time until the best trial is known {v['median_ratio']:.2f}x (median of {s['studies']} studies' "
                         f"ratios of medians; {v['min_ratio']:.2f}-{v['max_ratio']:.2f})")
    for config, same in s.get("same_best_as_none", {}).items():
        lines.append(f"{config}: same best value as no pruner in {same} of {s['studies']} studies")
    return lines
