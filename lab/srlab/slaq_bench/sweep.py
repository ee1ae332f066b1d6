"""The live hyperparameter-sweep demo: Poisson arrivals of mixed training jobs in one Spark
application, run once per policy in a fresh local-cluster session, compared on time to 90%/95% of
each job's loss reduction and on mean normalized loss over time.

Every job computes the same deterministic sequence of losses under every policy; only when each
iteration happens differs, so the comparison isolates scheduling.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

import slaq
from slaq.live.loop import LOOP_THREAD
from slaq.live.status_store import RETAIN_CONF, spark_jobs_by_group
from slaq.metrics import THRESHOLDS, mean_times, time_to_key, time_to_reduction
from slaq.ml import boosted_stumps, kmeans, logistic_regression, svm, synthetic_blocks
from slaq.sim.record import RunJob, busy_cores, phases_of
from srlab.slaq_bench.configs import STOCK, session_conf, stock_pool
from srlab.slaq_bench.cpu import thread_cpu_s
from srsupport.session import spark_session

log = logging.getLogger("slaq.sweep")
FAMILIES = ("logreg", "svm", "kmeans", "boosting")


@dataclass(frozen=True)
class SweepJob:
    name: str
    family: str
    arrival: float  # seconds after the sweep starts
    seed: int
    iterations: int
    param: float  # step size, learning rate or k


def make_sweep(jobs: int, arrival_mean: float, seed: int, iterations: int = 40) -> list[SweepJob]:
    """``jobs`` jobs cycling through the families with varied hyperparameters and Poisson arrivals."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(arrival_mean, size=jobs)
    gaps[0] = 0.0
    arrivals = np.cumsum(gaps)
    grid = {"logreg": (4.0, 8.0, 2.0, 16.0), "svm": (1.0, 2.0, 0.5, 4.0), "kmeans": (4, 6, 8, 12), "boosting": (0.5, 0.7, 0.3, 0.9)}
    out = []
    for i in range(jobs):
        family = FAMILIES[i % len(FAMILIES)]
        param = float(grid[family][(i // len(FAMILIES)) % 4])
        out.append(SweepJob(f"{family}-{i:02d}", family, float(arrivals[i]), seed * 1000 + i, iterations, param))
    return out


def _train(spec: SweepJob, sc: Any, partitions: int, rows: int, features: int) -> None:
    kind = {"kmeans": "clusters", "boosting": "regression"}.get(spec.family, "classification")
    blocks = synthetic_blocks(sc, partitions, rows, features, spec.seed, kind, cache=False)
    if spec.family == "logreg":
        logistic_regression(blocks, spec.iterations, step=spec.param)
    elif spec.family == "svm":
        svm(blocks, spec.iterations, step=spec.param)
    elif spec.family == "kmeans":
        kmeans(blocks, int(spec.param), spec.iterations, seed=spec.seed)
    else:
        boosted_stumps(blocks, spec.iterations, learning_rate=spec.param)


def job_metrics(arrival: float, times: list[float], losses: list[float]) -> dict:
    """Time from arrival until the loss first covers 90%/95% of the job's whole reduction (slaq.metrics.time_to_reduction)."""
    out: dict = {"iterations": len(losses)}
    for thr in THRESHOLDS:
        hit = time_to_reduction(times, losses, thr)
        out[time_to_key(thr)] = None if hit is None else round(hit - arrival, 3)
    return out


def loss_over_time(records: list[tuple[float, list[float], list[float]]], end: float, bucket: float) -> list[float | None]:
    """Mean normalized loss (1 at the first report, 0 at the last) over the jobs active in each bucket."""
    series: list[float | None] = []
    for start in np.arange(0.0, end, bucket):
        t = start + bucket / 2
        values = []
        for arrival, times, losses in records:
            if t < arrival or len(losses) < 2 or (times and t > times[-1]):
                continue
            span = losses[0] - losses[-1]
            k = int(np.searchsorted(times, t, side="right")) - 1
            current = losses[0] if k < 0 else losses[k]
            values.append(1.0 if span <= 0 and k < 0 else (current - losses[-1]) / span if span > 0 else 0.0)
        series.append(round(float(np.mean(values)), 4) if values else None)
    return series


Progress = Callable[[str], None]


def run_policy(policy: str, sweep: list[SweepJob], master: str, epoch: float, partitions: int | None, rows: int, features: int,
               bucket: float = 5.0, extra_conf: dict[str, str] | None = None, executors: int = 0,
               progress: Progress | None = None, record: bool = False) -> dict:
    """Run the whole sweep under ``policy`` (a configuration of ``srlab.slaq_bench.configs``: ``slaq``, ``fair``
    or ``stock``) in a fresh Spark session; returns per-job metrics. ``partitions=None``:
    :func:`default_partitions` of the session. ``progress`` gets a line every 10 s; ``record`` adds each
    job's phases (``"trace_jobs"``: :class:`~slaq.sim.record.RunJob`) for a trace."""
    conf = (extra_conf or {}) | session_conf(policy, epoch) | (RETAIN_CONF if record else {})
    with spark_session(f"slaq-sweep-{policy}", master, conf, executors) as spark:
        return _run_sweep(spark, policy, sweep, epoch, partitions, rows, features, bucket, progress, record)


def default_partitions(total_cores: int) -> int:
    """Two tasks per core for each job's data, as Spark's own guidance for parallelism: a stage whose
    task count is not a multiple of the cores leaves a ragged last wave, and the coarser a job's
    stages, the less an allocation of cores can steer it (4 tasks on 3 cores cost SLAQ a third of
    its gain on the 3-node cluster; see docs/benchmarks.md)."""
    return 2 * max(int(total_cores), 1)


def _ticker(policy: str, jobs: int, start: float, arrived: list[str], results: dict, progress: Progress,
            done: threading.Event, every: float = 10.0) -> threading.Thread:
    """A thread that says every ``every`` seconds how far the run is (the stock run has no SLAQ table)."""
    def run() -> None:
        while not done.wait(every):
            progress(f"  {policy}: {time.monotonic() - start:.0f} s, {len(arrived)}/{jobs} jobs arrived, {len(results)}/{jobs} finished")
    thread = threading.Thread(target=run, name="sweep-progress", daemon=True)
    thread.start()
    return thread


def _run_sweep(spark: Any, policy: str, sweep: list[SweepJob], epoch: float, partitions: int | None, rows: int, features: int,
               bucket: float, progress: Progress | None = None, record: bool = False) -> dict:
    sc = spark.sparkContext
    scheduler = slaq.attach(spark, explicit=False)  # the confs decide: the stock configuration runs with SLAQ off
    try:
        synthetic_blocks(sc, 2, 10, 2, 0).count()  # executors up and Python workers forked before the clock starts
        if partitions is None:
            partitions = default_partitions(sc.defaultParallelism)  # the registered executors' cores (at least 2)
        results: dict[str, dict] = {}
        errors: list[str] = []
        arrived_jobs: list[str] = []
        start = time.monotonic()
        wall_start = time.time() - (time.monotonic() - start)  # the status store's epoch times -> the run's clock
        done = threading.Event()
        ticker = _ticker(policy, len(sweep), start, arrived_jobs, results, progress, done) if progress else None

        def worker(arrival: int, spec: SweepJob) -> None:
            delay = spec.arrival - (time.monotonic() - start)
            if delay > 0:
                time.sleep(delay)
            arrived = time.monotonic() - start
            arrived_jobs.append(spec.name)
            try:
                # SLAQ off (stock): the job only keeps its losses; the pool is Spark's own FAIR pool
                with slaq.job(spec.name) as job, stock_pool(sc, arrival) if policy == STOCK else nullcontext():
                    if record:
                        sc.setJobGroup(spec.name, spec.name)  # the trace's key to the job's Spark jobs
                    _train(spec, sc, partitions, rows, features)
                times = [t - start for t in job.times]
                results[spec.name] = {"family": spec.family, "arrival_s": round(arrived, 3), "times": times, "losses": list(job.losses),
                                      "finished_s": round(time.monotonic() - start, 3)}
            except Exception as exc:
                errors.append(f"{spec.name}: {type(exc).__name__}: {exc}")
                log.exception("sweep job %s failed", spec.name)

        threads = [threading.Thread(target=worker, args=(i, s), name=s.name) for i, s in enumerate(sweep)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        makespan = time.monotonic() - start
        done.set()
        if ticker is not None:
            ticker.join()
        if errors:
            raise RuntimeError("sweep jobs failed: " + "; ".join(errors))
        loop, loop_cpu = scheduler.loop, thread_cpu_s(LOOP_THREAD)
        jobs = {}
        for spec in sweep:
            r = results[spec.name]
            jobs[spec.name] = {"family": r["family"], "arrival_s": r["arrival_s"], "finished_s": r["finished_s"],
                               **job_metrics(r["arrival_s"], r["times"], r["losses"])}
        summary: dict = {"policy": policy, "makespan_s": round(makespan, 2), "partitions": partitions,
                         "executor_cores": int(sc.defaultParallelism), "jobs": jobs}
        summary.update(mean_times(jobs.values(), 3))
        records = [(results[s.name]["arrival_s"], results[s.name]["times"], results[s.name]["losses"]) for s in sweep]
        series = loss_over_time(records, makespan, bucket)
        summary["mean_normalized_loss"] = round(float(np.mean([v for v in series if v is not None])), 4) if series else None
        summary["loss_over_time"] = {"bucket_s": bucket, "mean_normalized_loss": series}
        if loop is not None:
            summary["epoch_loop"] = {"epochs": loop.epochs, "failures": loop.failures, "cpu_s": round(loop_cpu, 3)}
        if record:
            spark_jobs, tasks = spark_jobs_by_group(sc, {s.name for s in sweep}, wall_start)
            busy, cores = busy_cores(tasks), int(sc.defaultParallelism)
            summary["trace_jobs"] = [RunJob(s.name, s.family, results[s.name]["arrival_s"], tuple(results[s.name]["losses"]),
                                            tuple(phases_of(results[s.name]["arrival_s"], results[s.name]["times"], spark_jobs[s.name],
                                                            busy, cores)))
                                     for s in sweep]
        return summary
    finally:
        scheduler.stop()
