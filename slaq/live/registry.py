"""The one record of a runtime's jobs: the open ones by name, the latest finished ones, and the shim's
losses and pool states folded into them.

Every loss joins its job's history through :func:`append`, and the job's target is checked after it: a
job that reached its target gets the minimum share from the next allocation on
(:func:`slaq.live.allocation.fixed_shares`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping

from slaq.live.job import LiveJob
from slaq.live.status import CoreSample
from slaq.messages import Iteration, PoolState
from slaq.names import shown
from slaq.stats.history import InvalidReport

log = logging.getLogger("slaq.loop")

NO_LOSS_EPOCHS = 3  # a job with no loss after this many epochs is taken for one that reports none
FINISHED_KEPT = 256  # closed jobs a registry remembers (with their histories) for inspection


def append(job: LiveJob, losses: Iterable[Iteration | float], clock_offset: float = 0.0) -> bool:
    """The one way losses join a job's history, in order; True when any did. Its target is checked after,
    outside any lock (a target check may fit a curve): :func:`record`, or the caller that holds the lock.

    A loss reported from Python is stamped ``time.monotonic()``. A shim ``Iteration`` is stamped with
    the JVM's time of the report plus ``clock_offset``; its cost is the core-seconds the job's pool used
    since the previous report and its wall time the time between them, so the runtime model learns both
    online, and the seconds its pool had a stage in the scheduler meanwhile split that wall time into
    executor and driver side (:mod:`slaq.live.driver_share`).
    """
    added = False
    for it in losses:
        if not isinstance(it, Iteration):
            job.history.report(it, at=time.monotonic())
            added = True
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
            log.warning("SLAQ: dropped a report of job %s: %s", shown(it.job), exc)
            continue
        job.last = (it.t, it.core_seconds)
        job.last_stage = it.stage_seconds
        added = True
    return added


def record(job: LiveJob, losses: Iterable[Iteration | float], now: float | None = None) -> bool:
    """:func:`append`, then the job's target checked (at ``now``); True when they made the job reach it."""
    return append(job, losses) and job.check_target(now)


class JobRegistry(Mapping[str, LiveJob]):
    """A read-only mapping of the open jobs by name, plus the latest :meth:`finished` ones (at most
    :data:`FINISHED_KEPT`, oldest first), the pools the latest drain reported closed and every pool's
    core-seconds at that drain; ``lock`` guards all of them (user threads open and close jobs)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, clock_offset: float = 0.0):
        self.lock = threading.Lock()
        self.closed: list[str] = []  # closed pools the latest drain reported
        self.sample = CoreSample(clock())  # every pool's core-seconds at the latest drain
        self._open: dict[str, LiveJob] = {}
        self._finished: deque[LiveJob] = deque(maxlen=FINISHED_KEPT)
        self._clock = clock
        self._clock_offset = clock_offset
        self._arrivals = 0

    def __getitem__(self, name: str) -> LiveJob:
        with self.lock:
            return self._open[name]

    def __iter__(self) -> Iterator[str]:
        with self.lock:
            return iter(list(self._open))

    def __len__(self) -> int:
        return len(self._open)

    def running(self) -> list[LiveJob]:
        with self.lock:
            return list(self._open.values())

    def finished(self) -> list[LiveJob]:
        """The latest closed jobs, oldest first."""
        with self.lock:
            return list(self._finished)

    def add(self, job: LiveJob) -> LiveJob:
        """Open ``job``; raises ``ValueError`` if an open job has its name."""
        now = self._clock()
        with self.lock:
            self.check_new(job.name)
            self._arrivals += 1
            job.order, job.added_at = float(self._arrivals), now
            self._open[job.name] = job
        return job

    def check_new(self, name: str) -> None:
        """Raises ``ValueError`` while a job called ``name`` is open: names are unique while they run."""
        if name in self._open:
            raise ValueError(f"a SLAQ job named {name!r} is already running; job names must be unique while they run")

    def remove(self, name: str, job: LiveJob | None = None) -> LiveJob | None:
        """Close the open job called ``name`` (only if it is ``job``, when given); it joins the finished ones."""
        with self.lock:
            found = self._open.get(name)
            if found is None or (job is not None and found is not job):
                return None
            del self._open[name]
            self._finished.append(found)
            return found

    def fold(self, iterations: list[Iteration], pools: Mapping[str, PoolState], drained: float) -> list[LiveJob]:
        """One drain's losses and pool states into the open jobs; returns the jobs that reached their
        target, in the order of their first new loss."""
        with self.lock:
            self.sample = CoreSample(drained, {name: state.consumed for name, state in pools.items()})
            for name, state in pools.items():
                if name in self._open:
                    self._open[name].consumed = state.consumed
            self.closed = [name for name, state in pools.items() if state.closed]
        return self.fold_losses(iterations)

    def fold_losses(self, iterations: list[Iteration]) -> list[LiveJob]:
        """Losses into the open jobs they belong to (work in proportion to the losses, not to the jobs open); returns
        the jobs that reached their target, in the order of their first new loss."""
        with self.lock:
            by_job: dict[str, list[Iteration | float]] = {}
            for it in iterations:
                if it.job in self._open:
                    by_job.setdefault(it.job, []).append(it)
            added = [self._open[name] for name, losses in by_job.items() if append(self._open[name], losses, self._clock_offset)]
        now = self._clock()
        return [job for job in added if job.check_target(now)]

    def closed_pools(self, new_epoch: bool = True) -> list[str]:
        """The pools reported closed; on a new epoch, one more silent epoch for each job without a loss yet (a
        decision within an epoch is not one: at many arrivals an epoch, jobs would be taken for silent at once)."""
        with self.lock:
            for j in self._open.values() if new_epoch else ():
                j.silent_epochs = 0 if j.history.losses else j.silent_epochs + 1
                if j.silent_epochs == NO_LOSS_EPOCHS and j.reports is None:
                    log.info("SLAQ: job %s reported no loss in %d epochs; it gets an even share of the cores until it does", j.shown, NO_LOSS_EPOCHS)
            return list(self.closed)


def ended_silently(job: LiveJob) -> None:
    """The one place a job's "reports no loss" line is logged at its end (:meth:`JobRegistry.closed_pools`
    logs it at the :data:`NO_LOSS_EPOCHS`-th silent epoch)."""
    if not job.history.losses and job.reports is None and job.silent_epochs < NO_LOSS_EPOCHS:
        log.info("SLAQ: job %s ended without any loss (e.g. a spark.ml KMeans, tree or ALS fit); it was scheduled as a new job", job.shown)
