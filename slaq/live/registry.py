"""The jobs the epoch loop schedules, and the shim's losses and pool states folded into them.

Each loss is checked against its job's target where it is ingested: a job that reached its target
gets the minimum share from the next allocation on (:func:`slaq.live.allocation.fixed_shares`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from slaq.live.job import LiveJob
from slaq.live.status import CoreSample
from slaq.stats.history import InvalidReport

log = logging.getLogger("slaq.loop")
user_log = logging.getLogger("slaq")  # the lines a user reads about their own jobs

NO_LOSS_EPOCHS = 3  # a job with no loss after this many epochs is taken for one that reports none


def ingest(jobs: Mapping[str, LiveJob], iterations: list[Any], clock_offset: float = 0.0) -> list[Any]:
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
                job.setup_core_seconds = it.core_seconds
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


def reached_targets(jobs: list[LiveJob], now: float) -> bool:
    """Checks each job with new losses against its target (in the order of their first new loss);
    logs those that reached it; True when any did."""
    reached = False
    for job in jobs:
        if job.check_target(now):
            reached = True
            user_log.info("SLAQ: job %s reached its target after %d losses; it keeps running on the minimum share",
                          job.name, job.history.iterations)
    return reached


class JobRegistry:
    """The loop's jobs by name, the pools the latest drain reported closed and every pool's
    core-seconds at that drain; ``lock`` guards all of them (user threads add and remove jobs)."""

    def __init__(self, clock: Callable[[], float], clock_offset: float = 0.0):
        self.jobs: dict[str, LiveJob] = {}
        self.lock = threading.Lock()
        self.closed: list[str] = []  # closed pools the latest drain reported
        self.sample = CoreSample(clock())  # every pool's core-seconds at the latest drain
        self._clock = clock
        self._clock_offset = clock_offset
        self._arrivals = 0

    def add(self, job: LiveJob) -> LiveJob:
        now = self._clock()
        with self.lock:
            self._arrivals += 1
            job.order, job.added_at = float(self._arrivals), now
            self.jobs[job.name] = job
        if job.reports is False:
            log.info("SLAQ: job %s reports no per-iteration loss; it gets an even share of the cores", job.name)
        return job

    def remove(self, name: str) -> LiveJob | None:
        with self.lock:
            return self.jobs.pop(name, None)

    def running(self) -> list[LiveJob]:
        with self.lock:
            return list(self.jobs.values())

    def fold(self, iterations: list[Any], pools: Mapping[str, Any], drained: float) -> list[LiveJob]:
        """One drain's losses and pool states into the jobs; returns the jobs that got new losses, in
        the order of their first one (their targets are checked outside the lock)."""
        with self.lock:
            self.sample = CoreSample(drained, {name: state.consumed for name, state in pools.items()})
            accepted = ingest(self.jobs, iterations, self._clock_offset)
            for name, state in pools.items():
                if name in self.jobs:
                    self.jobs[name].consumed = state.consumed
            self.closed = [name for name, state in pools.items() if state.closed]
            return [self.jobs[name] for name in dict.fromkeys(it.job for it in accepted) if name in self.jobs]

    def count_silent_epoch(self) -> list[str]:
        """One more epoch for each job without a loss yet; returns the pools reported closed."""
        with self.lock:
            for j in self.jobs.values():
                j.silent_epochs = 0 if j.history.losses else j.silent_epochs + 1
                if j.silent_epochs == NO_LOSS_EPOCHS and j.reports is None:
                    log.info("SLAQ: job %s reported no loss in %d epochs; it gets an even share of the cores until it does", j.name, NO_LOSS_EPOCHS)
            return list(self.closed)


def ended_silently(job: LiveJob) -> None:
    """The one place a job's "reports no loss" line is logged at its end (:meth:`JobRegistry.count_silent_epoch`
    logs it at the :data:`NO_LOSS_EPOCHS`-th silent epoch)."""
    if not job.history.losses and job.reports is None and job.silent_epochs < NO_LOSS_EPOCHS:
        log.info("SLAQ: job %s ended without any loss (e.g. a spark.ml KMeans, tree or ALS fit); it was scheduled as a new job", job.name)
