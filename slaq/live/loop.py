"""The live epoch loop: shim events -> job histories -> forecasts -> policy -> token deposits.

The allocation half (:meth:`EpochLoop.allocate`) is the simulator's code path: the same
``forecast``/``ForecastTable``/``Policy`` objects over plain data. The loop never freezes the
cluster: any failure opens every pool (fair sharing) and is logged, and if the loop stops
depositing altogether the shim opens the pools on its own after ``fail_open_epochs`` epochs.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from slaq.live.driver_share import DriverShare, cap_driver_bound, driver_bound_warning, driver_caps
from slaq.live.status import (
    ENDED,
    FINISHED,
    NOT_TUNING,
    PRUNED,
    STORAGE,
    TARGET,
    CoreSample,
    JobFigures,
    Tuning,
    epoch_status,
    job_status,
    seconds_to_reduction,
    share_reason,
    used_cores,
)
from slaq.policy import make_policy
from slaq.policy.base import unit
from slaq.predict.forecast import CurveCache, ForecastTable, JobForecast, job_forecast
from slaq.predict.prior import FitKey, PriorBook, build_prior, prior_forecast, reference, uses_prior
from slaq.stats.history import InvalidReport, JobHistory

log = logging.getLogger("slaq.loop")


class Pools(Protocol):
    def drain(self) -> tuple[list[Any], dict[str, Any]]: ...  # iteration and pool_state messages (sparkshim.messages)
    def deposit(self, alloc: dict[str, float], epoch: float) -> None: ...
    def open_all(self, reason: str) -> None: ...
    def resume(self) -> None: ...
    def capacity(self) -> float: ...


@dataclass
class LiveJob:
    name: str
    weight: float
    order: float
    history: JobHistory = field(default_factory=JobHistory)
    curves: CurveCache = field(default_factory=CurveCache)
    last: tuple[float, float] | None = None  # (time, cumulative core-seconds) of the latest report
    cores: float = 0.0  # latest allocation
    consumed: float = 0.0  # core-seconds used so far (from the pool)
    satisfied: bool = False  # reached its target: the minimum share from then on
    silent_epochs: int = 0  # epochs in a row that ended without any loss from this job yet
    reports: bool | None = None  # whether it will report losses, when known in advance (slaq.estimators.reports_loss)
    driver: DriverShare = field(default_factory=DriverShare)  # its latest iterations' driver/executor split
    last_stage: float = 0.0  # the pool's stage seconds at the latest report
    added_at: float = 0.0  # when the loop took it on (the loop's clock)
    satisfied_at: float | None = None  # when it reached its target (the loop's clock)
    tuning: Tuning = NOT_TUNING  # its place in a CrossValidator/TrainValidationSplit, if any
    fit: FitKey | None = None  # a spark.ml fit's estimator and params: what its prior learns from (slaq.predict.prior)
    cores_before_loss: list[float] = field(default_factory=list)  # its allocation in each epoch before its first loss


def ingest(jobs: dict[str, LiveJob], iterations: list[Any], clock_offset: float = 0.0) -> list[Any]:
    """Append reported iterations to their jobs' histories; returns the accepted ones, in order.

    The cost of an iteration is the core-seconds the job's pool used between two reports and its
    wall time the time between them, so the runtime model learns both online; the seconds its pool
    had a stage in the scheduler meanwhile split that wall time into executor and driver side
    (:mod:`slaq.live.driver_share`). Each loss is stamped
    with the JVM's time of the report plus ``clock_offset`` (to the Python process's clock).
    """
    accepted = []
    for it in iterations:
        job = jobs.get(it.job)
        if job is None:
            continue
        try:
            at = it.t + clock_offset
            if job.last is None:
                job.history.report(it.loss, at=at)
            else:
                wall = max(it.t - job.last[0], 1e-6)
                used = max(it.core_seconds - job.last[1], 0.0)
                job.history.report(it.loss, used, wall, used / wall if used > 0 else None, at=at)
                job.driver.add(wall, it.stage_seconds - job.last_stage, used)
        except InvalidReport as exc:
            log.warning("SLAQ: dropped a report of job %s: %s", it.job, exc)
            continue
        job.last = (it.t, it.core_seconds)
        job.last_stage = it.stage_seconds
        accepted.append(it)
    return accepted


NO_LOSS_EPOCHS = 3  # a job with no loss after this many epochs is taken for one that reports none


def fixed_shares(jobs: list[LiveJob], closed: Iterable[str], capacity: float) -> dict[str, float]:
    """The cores of jobs the policy does not steer, by rule (pure):

    * a job that reached its target, and a closed job's pool that still has work, get the minimum
      share (:func:`~slaq.policy.base.unit`), so work a finished block keeps submitting runs throttled;
    * a job known to report no loss (spark.ml KMeans, trees, ALS, ...), and one not known either way
      that reported none for :data:`NO_LOSS_EPOCHS` epochs, gets its even, weighted share: with no
      curve to predict from, it is treated as fair sharing would. A job known to report (an iterative
      spark.ml fit) stays with the policy, as a new job, until its first loss.
    """
    closed = list(closed)
    n = len(jobs) + len(closed)
    if n == 0 or capacity <= 0:
        return {}
    minimum = unit(capacity, n)
    total_weight = sum(j.weight for j in jobs) + len(closed)
    out = {name: minimum for name in closed}
    for j in jobs:
        if j.satisfied:
            out[j.name] = minimum
        elif not j.history.losses and (j.reports is False or (j.reports is None and j.silent_epochs >= NO_LOSS_EPOCHS)):
            out[j.name] = capacity * j.weight / total_weight
    used = sum(out.values())
    if used > capacity:
        out = {k: v * capacity / used for k, v in out.items()}
    return out


LOOP_THREAD = "slaq-epoch-loop"  # the loop thread's name
MAX_ENDED = 500  # final rows kept for the next status (the UI keeps as many finished jobs)
ENDED_KEPT = 1024  # ended jobs whose allocation before their first loss the loop remembers


class EpochLoop:
    def __init__(self, pools: Pools, policy: str = "slaq", epoch: float = 2.0, reserve: float = 0.0,
                 on_epoch: Callable[[Any], None] | None = None, clock: Callable[[], float] = time.monotonic,
                 on_loss: Callable[[Any], None] | None = None, clock_offset: float = 0.0,
                 admit: Callable[[], Callable[[], None] | None] | None = None, prior: bool = False,
                 waiting: Callable[[], set[str]] | None = None):
        """``on_epoch`` receives each epoch's ``epoch_status`` message (slaq.live.status); the runtime
        pushes it to the driver JVM for the Spark UI tab and the driver log. ``on_loss`` receives every
        accepted iteration message, in order, outside the loop's lock (the runtime checks targets
        there); ``clock_offset`` turns the JVM's report times into the Python process's clock.
        ``admit`` runs before each drain (it adds jobs that started in the JVM, Spark Connect fits, so
        their first losses are not dropped) and returns what to run once the drain is ingested (it
        removes the jobs that ended there, after their last losses). ``prior``: forecast a spark.ml fit
        from its estimator's other fits until its own losses carry a curve (slaq.predict.prior)."""
        self.pools = pools
        self.policy_name = policy
        self.policy = make_policy(policy)
        self.epoch = float(epoch)
        self.reserve = float(reserve)
        self.jobs: dict[str, LiveJob] = {}
        self.epochs = 0
        self.failures = 0
        self.last_error: str | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._arrivals = 0
        self.prior = prior
        self.prior_book = PriorBook()  # the application's finished fits, for the next fits' priors
        # per ended job: its mean allocation over the epochs before its first loss (what the prior changes)
        self.before_first_loss: OrderedDict[str, float] = OrderedDict()
        self._ingest_lock = threading.Lock()  # one drain + ingest at a time, so losses stay in order
        self._closed: list[str] = []  # closed pools the latest drain reported
        self._on_loss = on_loss
        self._admit = admit
        self._waiting = waiting
        self._clock_offset = clock_offset
        self._on_epoch = on_epoch
        self._clock = clock
        self._started = clock()
        self._sample = CoreSample(self._started)  # every pool's core-seconds at the latest drain
        self._published_sample = self._sample  # ... at the drain the previous status measured up to
        self._decided: tuple[ForecastTable | None, list[float], list[int], list[JobFigures]] = (None, [], [], [])
        self._ended: list[Any] = []  # final rows of the jobs removed since the last published status
        self._tuned_rows: OrderedDict[str, Any] = OrderedDict()  # the latest tuning fits' final rows, to mark them pruned
        self._pruned: OrderedDict[tuple[str, int], None] = OrderedDict()  # (tuner, candidate) pairs pruned (slaq.prune)
        self.driver_warned = False  # the one WARN per application about driver-bound jobs was logged
        self.status: Any = None  # the latest epoch_status message (the console table reads it)
        self.status_cpu_seconds = 0.0  # CPU time the loop thread spent building and publishing the statuses

    # -- job registry (called from user threads) -------------------------------------------------
    def add(self, name: str, weight: float, reports: bool | None = None, history: JobHistory | None = None,
            curves: CurveCache | None = None, tuning: Tuning = NOT_TUNING, fit: FitKey | None = None) -> LiveJob:
        """A new job; ``reports``: whether it will report losses, when known (spark.ml fits).
        ``history``/``curves``: the job's own, when its owner keeps them (a ``slaq.job``: one history
        per job, read by the user and scheduled on by the loop). ``tuning``: its place in a tuner;
        ``fit``: a spark.ml fit's estimator and params."""
        now = self._clock()
        with self._lock:
            self._arrivals += 1
            job = self.jobs[name] = LiveJob(name, weight, float(self._arrivals), reports=reports,
                                            history=JobHistory() if history is None else history,
                                            curves=CurveCache() if curves is None else curves, added_at=now, tuning=tuning,
                                            fit=fit)
        if reports is False:
            log.info("SLAQ: job %s reports no per-iteration loss; it gets an even share of the cores", name)
        self._wake.set()  # a new job gets tokens now, not at the next epoch boundary
        return job

    def remove(self, name: str) -> LiveJob | None:
        with self._lock:
            job = self.jobs.pop(name, None)
        if job is not None:
            try:
                row = self.final_row(job, self._clock())
                with self._lock:
                    self._ended = [*self._ended[-(MAX_ENDED - 1):], row]  # bounded while no epoch publishes them
                    if job.tuning.group:
                        self._tuned_rows[name] = row
                        while len(self._tuned_rows) > MAX_ENDED:
                            self._tuned_rows.popitem(last=False)
            except Exception as exc:  # the view of the schedule must never fail the job
                log.warning("SLAQ: could not summarize finished job %s for the UI tab: %s", name, exc)
        self._wake.set()
        if job is not None and job.fit is not None:
            self.prior_book.record(job.fit, job.history)
        if job is not None and job.cores_before_loss:
            self.before_first_loss[name] = sum(job.cores_before_loss) / len(job.cores_before_loss)
            while len(self.before_first_loss) > ENDED_KEPT:
                self.before_first_loss.popitem(last=False)
        # the one place a job's "reports no loss" line is logged at its end (step() logs it at the 3rd silent epoch)
        if job is not None and not job.history.losses and job.reports is None and job.silent_epochs < NO_LOSS_EPOCHS:
            log.info("SLAQ: job %s ended without any loss (e.g. a spark.ml KMeans, tree or ALS fit); it was scheduled as a new job", name)
        return job

    def mark_pruned(self, group: str, candidates: Iterable[int]) -> None:
        """Candidates of tuner ``group`` whose remaining fits will not run: their finished fits' rows say
        so from the next status on (the UI tab replaces a finished row by its name), and so does every
        later one of theirs."""
        with self._lock:
            for c in candidates:
                self._pruned[(group, c)] = None
            while len(self._pruned) > ENDED_KEPT:
                self._pruned.popitem(last=False)
            marked = [replace(row, why=PRUNED) for row in self._tuned_rows.values()
                      if (row.group, row.candidate) in self._pruned and row.why != PRUNED]
            for row in marked:
                self._tuned_rows[row.job] = row
            self._ended = [*self._ended, *marked][-MAX_ENDED:]

    def wake(self) -> None:
        """Run the next epoch now rather than at the epoch boundary."""
        self._wake.set()

    def satisfy(self, name: str) -> None:
        """``name`` reached its target: from the next epoch on it gets the minimum share."""
        with self._lock:
            job = self.jobs.get(name)
            if job is not None and not job.satisfied:
                job.satisfied = True
                job.satisfied_at = self._clock()
        self._wake.set()

    def final_row(self, job: LiveJob, now: float) -> Any:
        """A finished job's row from its whole history (the last epoch's row misses the losses ingested
        after it): final loss and iterations, wall time, core-seconds, and time to its target (when it
        reached one) or else to :data:`~slaq.live.status.REDUCTION` of its loss reduction."""
        losses = list(job.history.losses)
        times = list(job.history.times)
        normalized = 1.0
        if losses:
            table = ForecastTable([job_forecast(job.name, job.history, job.curves, job.weight, math.inf, job.order)], self.epoch)
            normalized = float(table.normalized_now()[0])
        if job.satisfied_at is not None:
            to_target = job.satisfied_at - job.added_at
        else:
            to_target = seconds_to_reduction(losses, times, job.added_at)
        why = TARGET if job.satisfied else PRUNED if (job.tuning.group, job.tuning.candidate) in self._pruned else ENDED
        figures = JobFigures(why, now - job.added_at, job.consumed, to_target, job.tuning, job.driver.fraction())
        return job_status(job.name, FINISHED, len(losses), losses[-1] if losses else 0.0, normalized, 0.0, 0.0, 0.0, figures)

    def history(self, name: str) -> JobHistory | None:
        with self._lock:
            job = self.jobs.get(name)
            return None if job is None else job.history

    # -- one epoch -------------------------------------------------------------------------------
    def allocate(self, capacity: float, closed: Iterable[str] = ()) -> dict[str, float]:
        """Cores per active job (and per closed pool in ``closed``) for ``capacity`` cores: the
        :func:`fixed_shares` first, the policy's choice for the rest (pure given the histories)."""
        with self._lock:
            jobs = list(self.jobs.values())
        closed = [c for c in closed if c not in self.jobs]
        if not jobs and not closed:
            self._decided = (None, [], [], [])
            return {}
        capacity = max(capacity - self.reserve, 0.0)
        held = self._waiting() & {j.name for j in jobs} if self._waiting is not None else set()
        alloc = fixed_shares([j for j in jobs if j.name not in held], closed, capacity)
        fixed = set(alloc)
        alloc.update(dict.fromkeys(held, 0.0))  # a fit waiting for storage memory has not started: no tasks to run
        forecasts = [self._forecast(j, jobs) for j in jobs]  # all: the status shows them
        steered = [(j, f) for j, f in zip(jobs, forecasts) if j.name not in alloc]
        minimum = 0.0
        if steered:
            table = ForecastTable([f for _, f in steered], self.epoch)
            left = max(capacity - sum(alloc.values()), 0.0)
            minimum = unit(left, len(steered)) if self.policy.minimum_share else 0.0
            cores = self.policy.allocate(table, left)
            chosen = {j.name: float(c) for (j, _), c in zip(steered, cores)}
            if self.policy.fitted_curves:  # a policy that steers by predicted gain; fair, fifo, ... keep their own shares
                chosen = self._cap_driver_bound(chosen, {j.name: j.driver for j, _ in steered}, unit(left, len(steered)))
            alloc.update(chosen)
        now = self._clock()
        figures = []
        for j in jobs:
            j.cores = alloc[j.name]
            why = STORAGE if j.name in held else share_reason(j.history.iterations, j.satisfied, j.name in fixed, j.cores, minimum,
                                                              self.policy.fitted_curves and self.policy.minimum_share)
            to_target = j.satisfied_at - j.added_at if j.satisfied_at is not None else -1.0
            figures.append(JobFigures(why, now - j.added_at, j.consumed, to_target, j.tuning, j.driver.fraction()))
            if not j.history.losses and j.name not in held:
                j.cores_before_loss.append(j.cores)
        self._decided = (ForecastTable(forecasts, self.epoch) if jobs else None, [alloc[j.name] for j in jobs],
                         [j.history.iterations for j in jobs], figures)
        return alloc

    def _cap_driver_bound(self, chosen: dict[str, float], shares: dict[str, DriverShare], minimum: float) -> dict[str, float]:
        """The policy's choice with driver-bound jobs held to what their executors use (said once per application)."""
        found = driver_caps(shares, minimum)
        if not found:
            return chosen
        if not self.driver_warned:
            self.driver_warned = True
            log.warning(driver_bound_warning(found))
        return cap_driver_bound(chosen, {job: cap for job, (_, cap) in found.items()})

    def _forecast(self, job: LiveJob, jobs: list[LiveJob]) -> JobForecast:
        """The job's own forecast, or for a spark.ml fit without enough losses yet its prior from the
        application's finished fits and the other running ones."""
        if self.prior and job.fit is not None and uses_prior(job.fit, job.history):
            running = [reference(j.fit, j.history, finished=False) for j in jobs if j is not job and j.fit is not None
                       and j.fit.estimator == job.fit.estimator]
            prior = build_prior(job.fit, self.prior_book.finished() + running)
            return prior_forecast(job.name, job.history, prior, job.weight, math.inf, job.order)
        return job_forecast(job.name, job.history, job.curves, job.weight, math.inf, job.order)

    def poll(self) -> None:
        """Drain the shim and fold its losses and pool states into the jobs (any thread; the user's
        ``job.losses`` calls it so a spark.ml fit's captured losses are there when the fit returns)."""
        with self._ingest_lock:
            after = self._admit() if self._admit is not None else None
            iterations, pools = self.pools.drain()
            drained = self._clock()
            with self._lock:
                self._sample = CoreSample(drained, {name: state.consumed for name, state in pools.items()})
                accepted = ingest(self.jobs, iterations, self._clock_offset)
                for name, state in pools.items():
                    if name in self.jobs:
                        self.jobs[name].consumed = state.consumed
                self._closed = [name for name, state in pools.items() if state.closed]
            if self._on_loss is not None:
                for it in accepted:
                    self._on_loss(it)
            if after is not None:
                after()

    def step(self) -> dict[str, float]:
        self.poll()
        with self._lock:
            for j in self.jobs.values():
                j.silent_epochs = 0 if j.history.losses else j.silent_epochs + 1
                if j.silent_epochs == NO_LOSS_EPOCHS and j.reports is None:
                    log.info("SLAQ: job %s reported no loss in %d epochs; it gets an even share of the cores until it does", j.name, NO_LOSS_EPOCHS)
            closed = list(self._closed)
        capacity = self.pools.capacity()
        alloc = self.allocate(capacity, closed)
        self.pools.deposit(alloc, self.epoch)
        self.epochs += 1
        self._publish(capacity)
        return alloc

    def _publish(self, capacity: float) -> None:
        """Builds this epoch's ``epoch_status`` and hands it on; a failure here never fails the epoch."""
        now, cpu = self._clock(), time.thread_time()
        with self._lock:
            sample, ended, self._ended = self._sample, self._ended, []
        before, self._published_sample = self._published_sample, sample
        table, cores, iterations, figures = self._decided
        try:
            self.status = epoch_status(self.epochs, now - self._started, self.policy_name, capacity, table, cores, iterations,
                                       used_cores(sample, before, capacity), figures, ended)
            if self._on_epoch is not None:
                self._on_epoch(self.status)
        except Exception as exc:  # the view of the schedule must never stop the schedule
            log.warning("SLAQ: could not publish epoch %d's status (UI tab, driver log): %s", self.epochs, exc)
        self.status_cpu_seconds += time.thread_time() - cpu

    # -- the thread ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=LOOP_THREAD, daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        log.debug("SLAQ: epoch loop started (policy %s, epoch %.3g s)", self.policy_name, self.epoch)  # said at attach
        failing = False
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.step()
                if failing:
                    self.pools.resume()
                    log.warning("SLAQ: epoch loop recovered after %d failed epochs", self.failures)
                    failing = False
            except Exception as exc:  # a broken scheduler must never freeze the cluster
                self.failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                if not failing:
                    log.exception("SLAQ: epoch failed; opening all pools (fair sharing) until it recovers")
                failing = True
                try:
                    self.pools.open_all(f"epoch loop failed: {self.last_error}")
                except Exception:
                    log.exception("SLAQ: could not open the pools; the shim opens them once deposits stop")
            self._wake.wait(max(self.epoch - (time.monotonic() - started), 0.0))
            self._wake.clear()
        log.info("SLAQ: epoch loop stopped after %d epochs", self.epochs)
