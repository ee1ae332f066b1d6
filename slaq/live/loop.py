"""The live epoch loop: shim events -> job histories -> forecasts -> policy -> token deposits.

Each epoch drains the shim into the jobs (:mod:`slaq.live.registry`), allocates
(:mod:`slaq.live.allocation`), deposits, and builds the status its observers receive
(:mod:`slaq.live.observer`; the ended jobs' rows from :mod:`slaq.live.ended`). A job's arrival or end
wakes the loop to decide again at once, for the rest of the epoch only: the epochs keep their times,
since at hundreds of arrivals a second a whole epoch's deposit per wake-up would lift every limit.
Such a decision is deposited but not published: a status (UI tab, driver log line, event log) is one per
epoch, so at hundreds of arrivals a second the tab's window still spans its epochs and the log grows per epoch.
The loop never freezes the cluster: any failure opens every pool (fair sharing) and is logged, and if
the loop stops depositing altogether the shim opens the pools on its own after ``fail_open_epochs`` epochs.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Protocol

from slaq.live.allocation import NOTHING, Allocator, Decision
from slaq.live.ended import EndedJobs
from slaq.live.job import LiveJob
from slaq.live.observer import LoopObserver
from slaq.live.registry import JobRegistry, append, ended_silently
from slaq.live.status import epoch_status, used_cores
from slaq.messages import EpochStatus, Iteration, PoolState
from sparkshim.wording import counted

log = logging.getLogger("slaq.loop")
user_log = logging.getLogger("slaq")  # the lines a user reads about their own jobs
LOOP_THREAD = "slaq-epoch-loop"  # the loop thread's name
MID_EPOCH = 0.01  # a wake-up at least this long before the next epoch decides for the rest of the current one


class Pools(Protocol):
    def drain(self) -> tuple[list[Iteration], dict[str, PoolState]]: ...
    def drain_losses(self) -> list[Iteration]: ...
    def deposit(self, alloc: dict[str, float], seconds: float, new_epoch: bool = True, ranks: dict[str, float] | None = None) -> None: ...
    def open_all(self, reason: str) -> None: ...
    def resume(self) -> None: ...
    def capacity(self) -> float: ...


def said_reached(jobs: list[LiveJob]) -> bool:
    """Logs each job that just reached its target; True when any did."""
    for job in jobs:
        user_log.info("SLAQ: job %s reached its target after %d losses; it keeps running on the minimum share",
                      job.shown, job.history.iterations)
    return bool(jobs)


class EpochLoop:
    def __init__(self, pools: Pools, policy: str = "slaq", epoch: float = 2.0, reserve: float = 0.0,
                 clock: Callable[[], float] = time.monotonic, clock_offset: float = 0.0, observers: Iterable[LoopObserver] = ()):
        """``clock_offset`` turns the JVM's report times into the Python process's clock."""
        self.pools = pools
        self.allocator = Allocator(policy, epoch, reserve)
        self.epoch = self.allocator.epoch
        self.jobs = JobRegistry(clock, clock_offset)  # the one record of the open and the latest finished jobs
        self._ended = EndedJobs()
        self.observers: list[LoopObserver] = list(observers)  # told of each drain, epoch and job end, in this order
        self.epochs = 0  # epochs begun, each published once (decisions between them are not counted)
        self.failures = 0
        self.last_error: str | None = None
        self.status: EpochStatus | None = None  # the latest epoch_status message (the console table reads it)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ingest_lock = threading.Lock()  # one drain + ingest at a time, so losses stay in order
        self._clock = clock
        self._started = clock()
        self._published_sample = self.jobs.sample  # every pool's core-seconds at the drain the previous status measured up to
        self._decided: Decision = NOTHING

    # -- jobs (called from user threads) ---------------------------------------------------------
    def add(self, job: LiveJob) -> LiveJob:
        """Schedule ``job`` on its own history from now on; it gets tokens now, not at the next epoch boundary.
        Raises ``ValueError`` if a running job has its name."""
        self.jobs.add(job)
        if job.reports is False:
            log.info("SLAQ: job %s reports no per-iteration loss; it gets an even share of the cores", job.shown)
        self._wake.set()
        return job

    def remove(self, name: str, job: LiveJob | None = None) -> LiveJob | None:
        """Stop scheduling the job called ``name`` (only if it is ``job``, when given); its final row goes to the next status."""
        ended = self.jobs.remove(name, job)
        if ended is not None:
            self._ended.add(ended, self._clock())
        self._wake.set()
        if ended is not None:
            self._notify("on_job_ended", ended)
            ended_silently(ended)
        return ended

    def mark_pruned(self, group: str, candidates: Iterable[int]) -> None:
        """Candidates of tuner ``group`` whose remaining fits will not run: the UI tab says so."""
        self._ended.mark_pruned(group, candidates)

    def unwatch(self, observer: LoopObserver) -> None:
        """Stop telling ``observer``; between drains, so a drain's ``before_drain`` always meets its ``after_drain``."""
        with self._ingest_lock:
            if observer in self.observers:
                self.observers.remove(observer)

    def record(self, job: LiveJob, loss: float) -> None:
        """A loss of ``job`` that did not pass through the JVM: into its history under the lock, its target checked after."""
        with self.jobs.lock:
            added = append(job, [loss])
        if added and job.check_target(self._clock()) and said_reached([job]):
            self._wake.set()

    # -- one epoch -------------------------------------------------------------------------------
    def allocate(self, capacity: float, closed: Iterable[str] = ()) -> dict[str, float]:
        """Cores per active job (and per closed pool in ``closed``) for ``capacity`` cores (slaq.live.allocation)."""
        jobs = self.jobs.running()
        self._decided = self.allocator.decide(jobs, capacity, closed, self._clock())
        self._notify("on_allocated", jobs, self._decided)
        return dict(self._decided.alloc)

    def poll(self) -> None:
        """Drain the shim and fold its losses and pool states into the jobs, checking their targets
        (any thread; the user's ``job.losses`` calls it so a spark.ml fit's captured losses are there
        when the fit returns)."""
        self._ingest(lambda: self.jobs.fold(*self.pools.drain(), self._clock()))

    def sync(self) -> None:
        """Drain only the losses reported so far into their jobs (any thread: a job's ``losses``, ``should_stop`` and its
        close call it): as cheap with thousands of jobs open as with one, where :meth:`poll` reads every pool's state."""
        self._ingest(lambda: self.jobs.fold_losses(self.pools.drain_losses()))

    def _ingest(self, drain_and_fold: Callable[[], list[LiveJob]]) -> None:
        """One drain between the observers' drain hooks; a job that just reached its target wakes the loop (from the
        next epoch on it gets the minimum share)."""
        with self._ingest_lock:
            self._notify("before_drain")
            if said_reached(drain_and_fold()):
                self._wake.set()
            self._notify("after_drain")

    def step(self, seconds_left: float | None = None) -> dict[str, float]:
        """One decision: a new epoch's (``seconds_left`` None), or one for the ``seconds_left`` the current epoch has
        left, when a job arrived or ended (the pools then change only the rest of the epoch: deciding more often
        than once an epoch must not grant more than an epoch's cores; the time the decision took is not left).
        Only a new epoch's decision is published: one status per epoch, whatever the arrivals (a job that came and
        went between two epochs has its final row in the next one's)."""
        began = time.monotonic()
        self.poll()
        closed = self.jobs.closed_pools(new_epoch=seconds_left is None)
        capacity = self.pools.capacity()
        alloc = self.allocate(capacity, closed)
        if seconds_left is not None:
            self.pools.deposit(alloc, max(seconds_left - (time.monotonic() - began), 0.0), new_epoch=False, ranks=self._decided.ranks)
            return alloc
        self.pools.deposit(alloc, self.epoch, ranks=self._decided.ranks)
        self.epochs += 1
        self._publish(capacity)
        return alloc

    def _publish(self, capacity: float) -> None:
        """Builds this epoch's ``epoch_status`` and hands it to the observers; a failure here never fails the epoch."""
        self._notify("before_status")
        now = self._clock()
        with self.jobs.lock:
            sample = self.jobs.sample
        before, self._published_sample = self._published_sample, sample
        d = self._decided
        try:
            status = epoch_status(self.epochs, now - self._started, self.allocator.policy_name, capacity, d.table, d.cores,
                                  d.iterations, used_cores(sample, before, capacity), d.figures)
            self.status = replace(status, finished=self._ended.take({j.job for j in status.jobs}))
        except Exception as exc:  # the view of the schedule must never stop the schedule
            log.warning("SLAQ: could not publish epoch %d's status (UI tab, driver log): %s", self.epochs, exc)
            return
        for observer in tuple(self.observers):
            try:
                observer.on_status(self.status)
            except Exception as exc:
                log.warning("SLAQ: could not publish epoch %d's status (UI tab, driver log): %s", self.epochs, exc)

    def _notify(self, hook: str, *args: Any) -> None:
        for observer in tuple(self.observers):
            try:
                getattr(observer, hook)(*args)
            except Exception as exc:  # a watcher must never stop the schedule
                log.warning("SLAQ: epoch loop observer %s failed in %s: %s", type(observer).__name__, hook, exc)

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

    def _run(self) -> None:
        log.debug("SLAQ: epoch loop started (policy %s, epoch %.3g s)", self.allocator.policy_name, self.epoch)  # said at attach
        failing = False
        next_epoch = -math.inf
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                if not failing and next_epoch - started > MID_EPOCH:  # woken early: a job arrived or ended
                    self.step(next_epoch - started)
                else:  # a new epoch: one due, the first, or the first after a failed one (its buckets were never renewed)
                    next_epoch = started + self.epoch
                    self.step()
                if failing:
                    self.pools.resume()
                    log.warning("SLAQ: epoch loop recovered after %s", counted(self.failures, "failed epoch"))
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
            self._wake.wait(max(next_epoch - time.monotonic(), 0.0))
            self._wake.clear()
        if not failing:
            try:  # a last epoch at stop: a job that ended since the latest status gets its final row (the tab, the summary)
                self.step()
            except Exception as exc:  # the context may be going away
                log.debug("SLAQ: no last status at stop: %s", exc)
        log.info("SLAQ: epoch loop stopped after %s", counted(self.epochs, "epoch"))
