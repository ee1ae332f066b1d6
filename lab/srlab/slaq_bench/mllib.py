"""``slaq bench mllib``: unmodified spark.ml fits with Poisson arrivals, run as plain fits, through
``CrossValidator(parallelism=4)`` and as a GBT-heavy sweep, under three configurations (``srlab.slaq_bench.configs``), each in a
fresh local-cluster session, repeated with the configuration order rotated; medians reported.

Per fit the figure needs when each iteration ended and its objective: both are taken passively
(``srlab.slaq_bench.fit_timing``): breeze's per-iteration log line gives the time, the fitted model's
``objectiveHistory`` the values. SLAQ's scheduling never sees either. A GBT fit reports no per-iteration
loss (SLAQ gives it an even share): its figure is its wall time.

How each configuration scopes one fit (``FitRecorder.scope``):

* stock: the fit's thread runs its Spark jobs in a FAIR pool named after the fit. For the
  CrossValidator variant the estimator handed to CrossValidator is a :class:`ScopedEstimator`, which
  only wraps each candidate fit CrossValidator makes in that scope.
* slaq / fair: with ``attribution="zero-change"`` nothing is added (SLAQ makes each fit its own job);
  with ``attribution="explicit"`` each fit runs inside ``with slaq.job(fit_name)``.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pyspark.ml import Estimator

import slaq
from slaq.integrations.sparkml import hyperparameters
from slaq.live.job import LiveJob
from slaq.live.loop import LOOP_THREAD
from slaq.live.status_store import RETAIN_CONF, locality_wait, spark_jobs_by_group
from slaq.live.storage import MB
from slaq.metrics import change_vs, mean_time_to_key, mean_times
from slaq.names import fit_job_name
from slaq.sim.record import RunJob, SparkJob, combine, slot_split
from slaq.sim.trace import TraceJob, outside_job
from slaq.sim.trace import save as save_trace
from srlab.slaq_bench.capture_check import check_capture
from srlab.slaq_bench.configs import STOCK, check_configs, session_conf, stock_pool
from srlab.slaq_bench.cpu import cpu_delta, session_cpu, thread_cpu_s
from srlab.slaq_bench.fit_timing import IterationClock, cores_split, job_split, restore_tag, tag_thread
from srlab.slaq_bench.mllib_workload import (
    GBT_FAMILIES,
    DataSpec,
    FitSpec,
    cv_groups,
    evaluator,
    make_data,
    make_estimator,
    make_fits,
    make_gbt_fits,
    param_map,
)
from srlab.slaq_bench.raw_runs import fit_entry, run_jobs, stage_timeline, write_runs
from srlab.slaq_bench.storage_watch import StorageWatch
from srlab.slaq_bench.sweep import job_metrics
from srsupport.session import executor_memory, spark_session
from srsupport.slaq_watch import FirstLossCores

log = logging.getLogger("srlab.slaq_bench.mllib")
INTERNAL = ("fits", "trace_jobs", "outside_spark_jobs", "raw_run")  # a summary's parts a repeat's figures leave out
VARIANTS = ("fits", "cv", "gbt")
ATTRIBUTIONS = ("explicit", "zero-change")
CV_PARALLELISM = 4
CV_FOLDS = 2
# L-BFGS sums partial gradients in the order tasks finish, so objectives may differ in the last bits
# between runs; a relative difference above this would mean the scheduler changed a result.
REASSOCIATION_RTOL = 1e-6
SETUP_KEYS = ("task_s_before_first_loss", "cores_used_before_first_loss", "cores_used_after_first_loss")


@dataclass(frozen=True)
class Workload:
    fits: list[FitSpec]
    data: DataSpec
    max_iter: int
    arrival_mean: float
    seed: int
    gbt_fits: list[FitSpec] = field(default_factory=list)  # the gbt variant's fits (GBT and linear)


@dataclass
class FitRecord:
    family: str
    start: float
    end: float = 0.0
    losses: list[float] = field(default_factory=list)
    job_prefix: str | None = None  # the SLAQ job name zero-change tuning gives the fit, without its "#N"
    cache_prefix: str = ""  # how its training cache RDD's name starts ("": unnamed; training_cache_prefix)
    trees: int | None = None  # a GBT fit's: its model's trees (it has no loss history)


@dataclass(frozen=True)
class TunerRecord:
    """One CrossValidator's ``fit()``: what its user waits for (every fold's fit and evaluation, and the refit) and gets."""

    start: float
    end: float
    chosen: int  # the grid entry of the model it returned (its best average metric)
    avg_metrics: tuple[float, ...]


class FitRecorder:
    """Scopes each fit for one configuration and records its start, end and objective history."""

    def __init__(self, sc: Any, config: str, attribution: str):
        self.sc = sc
        self.config = config
        self.attribution = attribution
        self.records: dict[str, FitRecord] = {}
        self.tuners: dict[str, TunerRecord] = {}
        self._lock = threading.Lock()

    @contextmanager
    def scope(self, name: str, family: str) -> Iterator[FitRecord]:
        record = FitRecord(family, time.time())
        with self._lock:
            if name in self.records:
                raise ValueError(f"fit name {name!r} used twice in one run")
            arrival = len(self.records)
            self.records[name] = record
        previous = tag_thread(self.sc, name)
        try:
            with ExitStack() as stack:
                if self.config == STOCK:
                    stack.enter_context(stock_pool(self.sc, arrival))
                elif self.attribution == "explicit":
                    stack.enter_context(slaq.job(name))
                yield record
        finally:
            record.end = time.time()
            restore_tag(self.sc, previous)

    def fit(self, name: str, family: str, estimator: Any, dataset: Any, params: dict[Any, Any]) -> Any:
        with self.scope(name, family) as record:
            record.job_prefix = zero_change_prefix(estimator, params)
            record.cache_prefix = training_cache_prefix(estimator)
            model = estimator.fit(dataset, params)
        if family in GBT_FAMILIES:  # no objective history, and no per-iteration loss line SLAQ captures
            record.trees = len(model.trees)
        else:
            record.losses = objective_history(model)
        return model


def training_cache_prefix(estimator: Any) -> str:
    """How the name of a fit's training cache RDD starts: spark.ml names it ``<estimator uid>: training blocks (...)``;
    "" for the multilayer perceptron, whose stacked data is left unnamed, and GBT, whose every fit names it alike."""
    shared = ("MultilayerPerceptronClassifier", "GBTClassifier", "GBTRegressor")
    return "" if type(estimator).__name__ in shared else f"{estimator.uid}: training "


def zero_change_prefix(estimator: Any, params: dict[Any, Any]) -> str:
    """The name SLAQ's spark.ml hook gives this fit's job, up to its sequence number."""
    fitted = estimator.copy(params)
    return fit_job_name(type(fitted).__name__, hyperparameters(fitted), 0).rsplit("#", 1)[0]


def cores_before_first_loss(records: dict[str, FitRecord], before: dict[str, float], attribution: str) -> dict[str, float | None]:
    """Each fit's mean allocation over the epochs before its first loss (``before``: per ended SLAQ job).

    With explicit attribution the job is named after the fit. With zero-change tuning it is named
    ``<estimator>[<params>]#N``, N in the order fits start: the k-th fit (by start) with a prefix is
    the k-th job (by N) with that prefix."""
    if attribution == "explicit":
        return {name: before.get(name) for name in records}
    jobs: dict[str, list[tuple[int, float]]] = {}
    for job, cores in before.items():
        prefix, _, seq = job.rpartition("#")
        if seq.isdigit():
            jobs.setdefault(prefix, []).append((int(seq), cores))
    out: dict[str, float | None] = {}
    taken: dict[str, int] = {}
    for name, r in sorted(records.items(), key=lambda item: item[1].start):
        ranked = sorted(jobs.get(r.job_prefix or "", []))
        k = taken.get(r.job_prefix or "", 0)
        taken[r.job_prefix or ""] = k + 1
        out[name] = ranked[k][1] if k < len(ranked) else None
    return out


def objective_history(model: Any) -> list[float]:
    """The fitted model's own objective per iteration (initial point first)."""
    summary = model.summary
    summary = summary() if callable(summary) else summary
    return [float(v) for v in summary.objectiveHistory]


class ScopedEstimator(Estimator):
    """What CrossValidator gets as its estimator: every fit it makes is delegated unchanged to
    ``inner`` inside the recorder's scope, named ``<cv>-p<grid entry>-<k-th fit of that entry>``
    (k = fold, and the last is CrossValidator's refit of the best entry on all the data)."""

    def __init__(self, inner: Any, cv: str, family: str, grid: list[tuple[int, dict[Any, Any]]], recorder: FitRecorder):
        super().__init__()
        self.inner, self.cv, self.family, self.grid, self.recorder = inner, cv, family, grid, recorder
        self._counts: dict[int, int] = {}
        self._count_lock = threading.Lock()

    def fit(self, dataset: Any, params: Any = None) -> Any:
        entry = next((index for index, m in self.grid if m == params), None)
        if entry is None:
            raise ValueError(f"{self.cv}: a fit with parameters outside its grid: {params}")
        with self._count_lock:
            k = self._counts.get(entry, 0)
            self._counts[entry] = k + 1
        return self.recorder.fit(f"{self.cv}-p{entry}-{k}", self.family, self.inner, dataset, params)

    def _fit(self, dataset: Any) -> Any:
        raise NotImplementedError("ScopedEstimator only delegates fit() with a grid entry")


def _run_threads(targets: list[tuple[str, float, Any]]) -> float:
    """Start each ``(name, arrival, fn)`` at its arrival (seconds from now); returns the start time."""
    start = time.time()
    errors: list[str] = []

    def run(name: str, arrival: float, fn: Any) -> None:
        delay = arrival - (time.time() - start)
        if delay > 0:
            time.sleep(delay)
        try:
            fn()
        except Exception as exc:
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            log.exception("fit %s failed", name)

    threads = [threading.Thread(target=run, args=t, name=t[0]) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("fits failed: " + "; ".join(errors))
    return start


def run_fits(recorder: FitRecorder, work: Workload, data: Any, fits: list[FitSpec] | None = None) -> float:
    """Every fit of the sweep (or ``fits``), plain ``estimator.fit(data, params)`` in a thread of its own at its arrival."""
    f = work.data.features

    def fit_one(spec: FitSpec) -> None:
        est = make_estimator(spec.family, f, work.max_iter, work.seed)
        recorder.fit(spec.name, spec.family, est, data, param_map(est, spec.family, spec.grid_index, f))

    return _run_threads([(s.name, s.arrival, lambda s=s: fit_one(s)) for s in (work.fits if fits is None else fits)])


def run_gbt(recorder: FitRecorder, work: Workload, data: Any) -> float:
    """The GBT sweep's GBT and linear fits, each run as :func:`run_fits` runs a fit."""
    return run_fits(recorder, work, data, work.gbt_fits)


def run_cv(recorder: FitRecorder, work: Workload, data: Any) -> float:
    """The same sweep as one ``CrossValidator(parallelism=4, numFolds=2)`` per family, arriving Poisson."""
    from pyspark.ml.tuning import CrossValidator

    f = work.data.features

    def tune(name: str, cv: Any, grid: list[int]) -> None:
        began = time.time()
        model = cv.fit(data)
        metrics = tuple(float(m) for m in model.avgMetrics)
        best = (max if cv.getEvaluator().isLargerBetter() else min)(range(len(metrics)), key=metrics.__getitem__)
        recorder.tuners[name] = TunerRecord(began, time.time(), grid[best], metrics)

    targets = []
    for cv_name, family, grid, arrival in cv_groups(work.fits, work.arrival_mean, work.seed):
        est = make_estimator(family, f, work.max_iter, work.seed)
        maps = [param_map(est, family, i, f) for i in grid]
        wrapped = ScopedEstimator(est, cv_name, family, list(zip(grid, maps)), recorder)
        cv = CrossValidator(estimator=wrapped, estimatorParamMaps=maps, evaluator=evaluator(family), numFolds=CV_FOLDS,
                            parallelism=CV_PARALLELISM, seed=work.seed)
        targets.append((cv_name, arrival, lambda n=cv_name, c=cv, g=grid: tune(n, c, g)))
    return _run_threads(targets)


RUNNERS = {"fits": run_fits, "cv": run_cv, "gbt": run_gbt}


def summarize(recorder: FitRecorder, start: float, clock: IterationClock, split: dict[str, dict[str, Any]],
              before: dict[str, float] | None = None, cached: dict[str, float] | None = None) -> dict:
    """Per-fit time to 90%/95% (from the fit's own start), time to its first loss, the task seconds
    before it (its set-up and first iteration) and the cores its tasks held before and after it, its
    training cache's peak size (``cached``: each RDD's peak bytes; only for a fit whose cache no other
    fit's name shares), under SLAQ (``before``: the loop's per-job record) its mean allocation before
    that first loss, and the driver/executor split per iteration. A GBT fit has no loss: no time to X% or set-up
    figures, its trees as its iterations."""
    ends = clock.iteration_times()
    early = cores_before_first_loss(recorder.records, before, recorder.attribution) if before is not None else {}
    prefixes = Counter(r.cache_prefix for r in recorder.records.values())
    fits: dict[str, dict] = {}
    for name, r in sorted(recorder.records.items()):
        iteration_ends = ends.get(name, [])
        if len(iteration_ends) != max(len(r.losses) - 1, 0):
            raise RuntimeError(f"{name}: {len(iteration_ends)} iteration log lines for {len(r.losses)} objective values "
                               "(expected one line per iteration after the initial point)")
        times = [r.start - start] + [t - start for t in iteration_ends]
        s = split[name]
        iterations = r.trees if r.trees is not None else max(len(r.losses) - 1, 1)
        wall = r.end - r.start
        first_loss = iteration_ends[0] if iteration_ends else r.end
        setup = cores_split(s["task_intervals"], r.start, first_loss, r.end) if r.trees is None else (None, None, None)
        own_cache = r.cache_prefix and prefixes[r.cache_prefix] == 1 and cached is not None
        fits[name] = {"family": r.family, "start_s": round(r.start - start, 3), "wall_s": round(wall, 3),
                      **job_metrics(r.start - start, times, r.losses), "final_objective": r.losses[-1] if r.losses else None,
                      # until its first iteration ends a fit has no loss: SLAQ schedules it as a new job, without a curve
                      "time_to_first_loss_s": round(times[1] - times[0], 3) if len(times) > 1 else None,
                      **{key: _rounded(value) for key, value in zip(SETUP_KEYS, setup)},
                      "cached_mb": round(sum(v for k, v in cached.items() if k.startswith(r.cache_prefix)) / MB, 1) if own_cache and cached else None,
                      "cores_before_first_loss": _rounded(early.get(name)),
                      "spark_jobs": s["spark_jobs"], "tasks_per_stage": round(s["tasks_per_stage"], 1),
                      "task_locality": s["task_locality"],
                      "per_iteration_ms": {"executor_task": round(1000 * s["executor_run_s"] / iterations, 1),
                                           "executor_cpu": round(1000 * s["executor_cpu_s"] / iterations, 1),
                                           "executor_gc": round(1000 * s["executor_gc_s"] / iterations, 1),
                                           "in_spark_jobs": round(1000 * s["in_jobs_s"] / iterations, 1),
                                           "driver_outside_jobs": round(1000 * max(wall - s["in_jobs_s"], 0.0) / iterations, 1)}}
        if r.trees is not None:
            fits[name]["iterations"] = r.trees
    out: dict = {"fits": fits, "makespan_s": round(max(r.end for r in recorder.records.values()) - start, 2),
                 "mean_wall_s": round(statistics.fmean(f["wall_s"] for f in fits.values()), 3)}
    out.update(mean_times(fits.values(), 3))
    firsts = [f["time_to_first_loss_s"] for f in fits.values() if f["time_to_first_loss_s"] is not None]
    out["mean_time_to_first_loss_s"] = round(statistics.fmean(firsts), 3) if firsts else None
    early_cores = [f["cores_before_first_loss"] for f in fits.values() if f["cores_before_first_loss"] is not None]
    out["mean_cores_before_first_loss"] = round(statistics.fmean(early_cores), 3) if early_cores else None
    for key in SETUP_KEYS:
        known = [f[key] for f in fits.values() if f[key] is not None]
        out[f"mean_{key}"] = round(statistics.fmean(known), 3) if known else None
    out["split"] = split_summary(fits.values())
    if recorder.tuners:
        out["tuners"] = {name: {"start_s": round(t.start - start, 3), "wall_s": round(t.end - t.start, 3), "chosen": t.chosen,
                                "avg_metrics": list(t.avg_metrics)} for name, t in sorted(recorder.tuners.items())}
        out["mean_tuner_wall_s"] = round(statistics.fmean(t["wall_s"] for t in out["tuners"].values()), 3)
    out["task_locality"] = dict(sorted(sum((Counter(f["task_locality"]) for f in fits.values()), Counter()).items()))
    return out


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def split_summary(fits: Any) -> dict[str, float]:
    """Mean per-iteration milliseconds over fits: executor task time vs the driver's time outside jobs."""
    rows = list(fits)
    keys = ("executor_task", "executor_cpu", "executor_gc", "in_spark_jobs", "driver_outside_jobs")
    out = {k + "_ms": round(statistics.fmean(r["per_iteration_ms"][k] for r in rows), 1) for k in keys}
    out["tasks_per_stage"] = round(statistics.fmean(r["tasks_per_stage"] for r in rows), 1)
    return out


def run_config(config: str, work: Workload, variants: list[str], master: str, epoch: float, attribution: str,
               extra_conf: dict[str, str] | None = None, record: bool = False) -> dict[str, dict]:
    """One fresh session of ``config``: the cached data, then each variant in turn. ``record``: each variant's
    summary also has its fits' phases (``"trace_jobs"``, for :func:`record_traces`)."""
    conf = session_conf(config, epoch) | RETAIN_CONF | (extra_conf or {})
    out: dict[str, dict] = {}
    with spark_session(f"slaq-bench-mllib-{config}", master, conf) as spark:
        sc = spark.sparkContext
        scheduler = slaq.attach(spark, explicit=False)  # the confs decide: the stock configuration runs with SLAQ off
        try:
            data = make_data(spark, work.data)
            clock = IterationClock(sc)
            try:
                for variant in variants:
                    recorder = FitRecorder(sc, config, attribution)
                    log.info("%s: running the %s variant", config, variant)
                    loop_cpu = thread_cpu_s(LOOP_THREAD)
                    first_loss = FirstLossCores()
                    if scheduler.loop is not None:
                        scheduler.loop.observers.append(first_loss)
                    cpu = session_cpu(sc)
                    earlier = scheduler.jobs.finished()  # held, so no new job can reuse an earlier one's id
                    seen = {id(job) for job in earlier}
                    with StorageWatch(sc) as storage:
                        start = RUNNERS[variant](recorder, work, data)
                    cpu = cpu_delta(cpu, session_cpu(sc))
                    before = None
                    if scheduler.loop is not None:
                        scheduler.loop.observers.remove(first_loss)
                        before = dict(first_loss.ended)
                    out[variant] = summarize(recorder, start, clock, job_split(sc, set(recorder.records)), before, storage.rdd_peaks)
                    out[variant]["cpu_s"] = cpu
                    out[variant]["storage"] = storage.summary
                    if record:
                        (out[variant]["trace_jobs"], out[variant]["executor_slot_s"], out[variant]["outside_spark_jobs"],
                         out[variant]["raw_run"]) = _trace_jobs(sc, recorder, clock, start)
                        out[variant]["executor_cores"] = int(sc.defaultParallelism)
                        out[variant]["locality_wait_s"] = locality_wait(sc)
                    if scheduler.loop is not None:
                        out[variant]["capture"] = capture_figures(recorder, [j for j in scheduler.jobs.finished() if id(j) not in seen])
                        out[variant]["epoch_loop"] = {"epochs": scheduler.loop.epochs, "failures": scheduler.loop.failures,
                                                      "cpu_s": round(thread_cpu_s(LOOP_THREAD) - loop_cpu, 2)}
            finally:
                clock.close()
            data.unpersist()
        finally:
            scheduler.stop()
    return out


def capture_figures(recorder: FitRecorder, finished: list[LiveJob]) -> dict[str, object]:
    """Whether SLAQ's job histories hold every iteration of every fit, each in its fit's job: each
    fit's ``objectiveHistory[1:]`` against the histories of the jobs that finished during the run."""
    expected = {name: r.losses[1:] for name, r in recorder.records.items()}
    return check_capture(expected, {job.name: list(job.history.losses) for job in finished}).as_json()


def capture_totals(summaries: list[dict]) -> dict[str, int] | None:
    """Lost and misattributed iterations summed over every SLAQ run of a variant (None: no SLAQ run)."""
    checked = [s["capture"] for s in summaries if "capture" in s]
    if not checked:
        return None
    return {k: sum(int(c[k]) for c in checked) for k in ("fits", "iterations", "lost_iterations", "misattributed_iterations")}


def objective_agreement(runs: list[dict[str, dict[str, dict]]]) -> dict:
    """Largest relative difference of any fit's final objective (and iteration count) across every
    configuration and repeat of one variant."""
    finals: dict[str, list[float]] = {}
    iterations: dict[str, set[int]] = {}
    for by_config in runs:
        for summary in by_config.values():
            for name, fit in summary["fits"].items():
                if fit["final_objective"] is not None:  # a GBT fit has none
                    finals.setdefault(name, []).append(fit["final_objective"])
                iterations.setdefault(name, set()).add(fit["iterations"])
    worst, worst_fit = 0.0, None
    for name, values in finals.items():
        scale = max(abs(v) for v in values) or 1.0
        diff = (max(values) - min(values)) / scale
        if diff > worst:
            worst, worst_fit = diff, name
    return {"max_relative_difference": worst, "fit": worst_fit, "within_reassociation": worst <= REASSOCIATION_RTOL,
            "fits_with_differing_iteration_counts": sorted(n for n, s in iterations.items() if len(s) > 1)}


def _median_figures(summaries: list[dict]) -> dict:
    keys = [k for k in summaries[0] if k.startswith(("mean_time_to", "mean_task_s", "mean_cores_used"))
            or k in ("makespan_s", "mean_wall_s", "mean_tuner_wall_s")]
    known = {k: [s[k] for s in summaries if s[k] is not None] for k in keys}
    out: dict = {k: round(statistics.median(values), 3) if values else None for k, values in known.items()}
    out["split"] = {k: round(statistics.median(s["split"][k] for s in summaries), 1) for k in summaries[0]["split"]}
    for part in ("cpu_s", "storage"):
        if all(s.get(part) for s in summaries):
            out[part] = {k: round(statistics.median(s[part][k] for s in summaries), 2) for k in summaries[0][part]}
    return out


def tuner_agreement(runs: list[dict[str, dict]]) -> dict | None:
    """What a CrossValidator's user waits for and gets, across configurations (``runs``: per repeat, config ->
    summary): each repeat's mean ``fit()`` wall time per configuration and its ratio to stock's; the grid entries
    each configuration chose per CrossValidator, and where one chose an entry stock Spark never chose in any
    repeat (stock's own choice can vary: two entries whose average metrics differ by less than the metric's
    run-to-run spread, also given, are a tie the evaluator breaks either way). None: no tuners."""
    if not runs or "tuners" not in next(iter(runs[0].values())):
        return None
    walls = [{c: s["mean_tuner_wall_s"] for c, s in run.items()} for run in runs]
    chosen: dict[str, dict[str, set[int]]] = {}
    metrics: dict[tuple[str, int], list[float]] = {}
    for run in runs:
        for config, summary in run.items():
            for name, t in summary["tuners"].items():
                chosen.setdefault(config, {}).setdefault(name, set()).add(t["chosen"])
                for entry, value in enumerate(t["avg_metrics"]):
                    metrics.setdefault((name, entry), []).append(value)
    reference = chosen.get(STOCK) or next(iter(chosen.values()))
    other = {c: sorted(name for name, entries in by_cv.items() if not entries <= reference.get(name, set()))
             for c, by_cv in chosen.items() if by_cv is not reference}
    out: dict = {"mean_wall_s_per_repeat": walls, "same_chosen_model": not any(other.values()), "outside_reference_choices": other,
                 "chosen": {c: {name: sorted(e) for name, e in sorted(by_cv.items())} for c, by_cv in chosen.items()},
                 "avg_metric_spread": max(max(v) - min(v) for v in metrics.values())}
    if STOCK in walls[0]:
        out["wall_vs_stock_per_repeat"] = {c: [round(w[c] / w[STOCK] - 1, 4) for w in walls] for c in walls[0] if c != STOCK}
    return out


def _trace_jobs(sc: Any, recorder: FitRecorder, clock: IterationClock, start: float) -> tuple[list[RunJob], dict[str, float], list[TraceJob], dict]:
    """Each fit as a trace records it: arrival at its start, its objective history, one phase per iteration
    (SLAQ captures a fit's losses from breeze's per-iteration line, which starts with the first iteration:
    so phase 0 is the set-up and first iteration and phase 1 ends at the same time, and the replay has no
    loss of the fit before then, as SLAQ live has none; the replay's SLAQ then has the initial objective
    too, which live it never sees); the run's executor slot seconds
    inside and outside the fits' Spark jobs; the Spark jobs outside them (a CrossValidator's
    evaluations), as the trace replays them; and the run as :mod:`srlab.slaq_bench.raw_runs` keeps it. A fit
    without a loss history (GBT) is a silent job: one phase from its start to its end, no loss, known to report
    none, as SLAQ schedules it."""
    others: list[SparkJob] = []
    spark_jobs, tasks = spark_jobs_by_group(sc, set(recorder.records), start, others)
    ends = clock.iteration_times()
    fits = []
    for name, r in sorted(recorder.records.items(), key=lambda kv: kv[1].start):
        iterations = [t - start for t in ends.get(name, [])]
        times = iterations[:1] + iterations
        if len(times) == len(r.losses) >= 2:
            fits.append(fit_entry(name, r.family, r.start - start, list(r.losses), times, True, spark_jobs[name]))
        elif r.trees is not None:
            fits.append(fit_entry(name, r.family, r.start - start, [], [r.end - start], False, spark_jobs[name]))
    raw = {"cores": int(sc.defaultParallelism), "tasks": tasks, "fits": fits, "spark_jobs": stage_timeline(sc, start)}
    outside = [j for j in sorted(others, key=lambda j: j.submitted) if j.submitted >= 0 and j.stages]
    return run_jobs(raw), slot_split(spark_jobs, tasks), [outside_job(k, j.submitted, j.stages) for k, j in enumerate(outside)], raw


def record_traces(path: str, runs: list[dict[str, dict[str, dict]]], configs: list[str], variants: list[str], epoch: float,
                  setting: dict[str, Any]) -> list[str]:
    """One slaq-trace/1 per variant (``path``, or ``path`` with ``-<variant>`` before its suffixes for more than one)."""
    written = []
    for variant in variants:
        summaries = {c: [run[c][variant] for run in runs] for c in configs}
        measured = {c: [{"mean_time_to_90pct_s": s[mean_time_to_key(0.9)], "mean_time_to_95pct_s": s[mean_time_to_key(0.95)],
                         "makespan_s": s["makespan_s"], "time_to_90pct_s": {k: f["time_to_90pct_s"] for k, f in s["fits"].items()}}
                        for s in ss] for c, ss in summaries.items()}
        every = [s for ss in summaries.values() for s in ss]
        trace = combine([s["trace_jobs"] for s in every], every[0]["executor_cores"], epoch,
                        {**setting, "source": f"slaq bench mllib ({variant})", "work_conserving": True,
                         "locality_wait_s": every[0]["locality_wait_s"],
                         "phases": "median over every run of every configuration"}, measured)
        trace = replace(trace, outside=tuple(every[0].get("outside_spark_jobs", ())))  # the first run's, as its arrivals
        target = Path(path)
        if len(variants) > 1:
            name, _, rest = target.name.partition(".")
            target = target.with_name(f"{name}-{variant}" + (f".{rest}" if rest else ""))
        written.append(str(save_trace(trace, target)))
        write_runs(target, [s["raw_run"] for s in every])
    return written


def bench_mllib(work: Workload, configs: list[str], variants: list[str], repeats: int, master: str, epoch: float,
                attribution: str, warmup: bool = False, executor_memory_mb: int | None = None,
                record_trace: str | None = None) -> dict:
    """Every configuration once per repeat (order rotated), medians per variant and configuration, ratios vs stock.

    ``warmup``: run ``work`` once, unmeasured, in a session of the first configuration before the
    repeats. pyspark keeps one gateway JVM across sessions, so the first session alone runs the
    driver's scheduler and spark.ml code before the JIT compiled it. Without a warm-up the run's first
    session took 1.7x its configuration's median time to 90% (docs/benchmarks.md), and after a warm-up
    on small data its driver JVM still used 80-93 s of CPU against 45-66 s in later sessions (the GBT
    sweep), hence the measured workload itself. The rotation and the median keep one slow session out
    of the figure, the warm-up keeps it out of the repeats. Later sessions of a run can still drift
    faster (docs/benchmarks.md), so a per-repeat ratio favours the configuration run second: the JSON's
    ``sequence`` says which ran first in each repeat, and an even number of repeats of two
    configurations puts each first equally often.
    """
    check_configs(configs)
    if not variants or any(v not in VARIANTS for v in variants):
        raise ValueError(f"variants must be from {', '.join(VARIANTS)}; got {','.join(variants) or 'none'}")
    if attribution not in ATTRIBUTIONS:
        raise ValueError(f"attribution must be one of {', '.join(ATTRIBUTIONS)}; got {attribution!r}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    extra: dict[str, str] = {}
    if executor_memory_mb is not None:
        master, extra = executor_memory(master, executor_memory_mb)
    warmup_s = None
    if warmup:
        log.info("warm-up: %s, the measured workload once (not measured)", configs[0])
        began = time.monotonic()
        run_config(configs[0], work, variants, master, epoch, attribution, extra)
        warmup_s = round(time.monotonic() - began, 1)
    runs: list[dict[str, dict[str, dict]]] = []  # per repeat: config -> variant -> summary, in the order run
    for r in range(repeats):
        by_config: dict[str, dict[str, dict]] = {}
        for config in configs[r % len(configs):] + configs[:r % len(configs)]:
            log.info("repeat %d: %s", r + 1, config)
            by_config[config] = run_config(config, work, variants, master, epoch, attribution, extra, record=record_trace is not None)
        runs.append(by_config)
    out: dict = {"workload": {"fits": len(work.fits), "families": sorted({f.family for f in work.fits}),
                              "arrival_mean_s": work.arrival_mean, "max_iter": work.max_iter, "rows": work.data.rows,
                              "features": work.data.features, "partitions": work.data.partitions, "seed": work.seed,
                              "master": master, "executor_memory_mb": executor_memory_mb, "epoch_s": epoch, "repeats": repeats, "attribution": attribution,
                              "cv": {"parallelism": CV_PARALLELISM, "folds": CV_FOLDS},
                              "gbt": {"fits": len(work.gbt_fits), "families": sorted({f.family for f in work.gbt_fits})}, "warmup_s": warmup_s,
                              "sequence": [list(run) for run in runs]},
                 "variants": {}}
    for variant in variants:
        per_config = {c: [run[c][variant] for run in runs] for c in configs}
        medians = {c: _median_figures(s) for c, s in per_config.items()}
        v: dict = {"median": medians,
                   "per_repeat": {c: [{k: s[k] for k in s if k not in INTERNAL} for s in per_config[c]] for c in configs},
                   "objectives": objective_agreement([{c: run[c][variant]} for run in runs for c in configs]),
                   "capture": capture_totals([run[c][variant] for run in runs for c in configs]),
                   "tuners": tuner_agreement([{c: run[c][variant] for c in configs} for run in runs])}
        for c in configs:
            if c != STOCK and STOCK in medians:
                v[f"{c}_vs_stock"] = change_vs(medians[c], medians[STOCK])
        for c in ("order", "slaq"):
            if c in medians and "fair" in medians:
                v[f"{c}_vs_fair"] = change_vs(medians[c], medians["fair"])
        v["last_repeat_fits"] = {c: runs[-1][c][variant]["fits"] for c in configs}
        out["variants"][variant] = v
    if record_trace is not None:
        out["traces"] = record_traces(record_trace, runs, configs, variants, epoch, {**out["workload"], "configs": configs})
    return out


def headline(result: dict) -> list[str]:
    """Human-readable lines: mean time to 90% per configuration and SLAQ's change vs stock (negative: less time)."""
    lines = []
    key = mean_time_to_key(0.9)
    for variant, v in result["variants"].items():
        for c, m in v["median"].items():
            line = (f"{variant:>4} {c:>6}: mean time to 90% {m[key]} s (to first loss {m.get('mean_time_to_first_loss_s')} s), "
                    f"mean fit wall time {m['mean_wall_s']} s, makespan {m['makespan_s']} s, per iteration: executor "
                    f"tasks {m['split']['executor_task_ms']} ms ({m['split']['executor_cpu_ms']} ms CPU), driver outside jobs "
                    f"{m['split']['driver_outside_jobs_ms']} ms")
            if "storage" in m:
                line += (f", storage memory peak {m['storage']['storage_memory_peak_mb']:.0f} of "
                         f"{m['storage']['storage_memory_capacity_mb']:.0f} MB, cached on disk peak {m['storage']['cached_on_disk_peak_mb']:.0f} MB")
            lines.append(line)
        for c in ("order", "slaq"):
            if f"{c}_vs_stock" in v:
                lines.append(f"{variant:>4} {c} vs stock Spark FAIR, time to 90%: {v[f'{c}_vs_stock'].get('time_to_90pct_change', 0):+.1%}")
        if v.get("tuners"):
            t = v["tuners"]
            walls = ", ".join(f"{c} {m['mean_tuner_wall_s']} s" for c, m in v["median"].items())
            lines.append(f"{variant:>4} CrossValidator fit() wall time, mean over its tuners: {walls}; "
                         + ("no configuration chose a model stock never chose" if t["same_chosen_model"]
                            else f"chosen outside stock's choices: {t['outside_reference_choices']}")
                         + f" (chosen: {t['chosen']}; average metrics' run-to-run spread {t['avg_metric_spread']:.2g})")
            for c, changes in t.get("wall_vs_stock_per_repeat", {}).items():
                lines.append(f"{variant:>4} {c} vs stock, wall time per repeat: " + ", ".join(f"{x:+.1%}" for x in changes))
        o = v["objectives"]
        lines.append(f"{variant:>4} final objectives: max relative difference {o['max_relative_difference']:.3g} ({o['fit']})")
        if v.get("capture"):
            c = v["capture"]
            lines.append(f"{variant:>4} SLAQ's captured histories: {c['lost_iterations']} of {c['iterations']} iterations lost, "
                         f"{c['misattributed_iterations']} misattributed")
    return lines


def make_workload(fits: int, arrival_mean: float, seed: int, max_iter: int, rows: int, features: int, partitions: int,
                  gbt_fits: int = 8) -> Workload:
    if max_iter < 2 or rows < 1 or features < 1 or partitions < 1:
        raise ValueError("max-iter must be >= 2 and rows, features, partitions >= 1")
    return Workload(make_fits(fits, arrival_mean, seed), DataSpec(rows, features, partitions, seed), max_iter, arrival_mean, seed,
                    make_gbt_fits(gbt_fits, arrival_mean, seed))
