"""SLAQ attached to one SparkContext: the shim's pools, the epoch loop and the spark.ml hook.

The user API (:mod:`slaq.api`) talks to a runtime through a few public calls: it :meth:`~SlaqRuntime.open`\\ s
and :meth:`~SlaqRuntime.close`\\ s a job's :class:`~slaq.live.job.LiveJob` record, :meth:`~SlaqRuntime.report`\\ s losses,
:meth:`~SlaqRuntime.sync`\\ s the histories and routes its thread with :meth:`~SlaqRuntime.enter_thread`.
The runtime never calls into the API's objects: what it knows of a job is its record, which holds the
job's one loss history (the epoch loop schedules on it and checks its target, the user reads it).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slaq import connect, sparkml, tuning
from slaq.enforce.pools import POOL_PREFIX, PoolBridge, enter_thread, restore_thread, thread_job
from slaq.estimators import cache_factor, training_cache_prefix
from slaq.live.admission import StorageAdmission
from slaq.live.config import PREFIX, SlaqConfig
from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.live.observer import LoopObserver
from slaq.live.storage import StorageCheck, memory_blocks_on_disk, read_storage
from slaq.predict.prior import fit_key
from slaq.prune import Pruned
from sparkshim.announce import announce, tab_location

log = logging.getLogger("slaq")
FINISHED_KEPT = 256  # closed jobs a runtime remembers (with their histories) for inspection

# (the runtime, a spark.ml estimator, its input DataFrame, its original fit bound to both) -> the fitted model
FitAsJob = Callable[["SlaqRuntime", Any, Any, Callable[[], Any]], Any]


@dataclass
class EpochPublisher(LoopObserver):
    """After every epoch (loop thread): the storage check, then the status for the UI tab and driver log."""

    runtime: SlaqRuntime

    def on_status(self, status: Any) -> None:
        runtime = self.runtime
        if runtime.pools is None or runtime.loop is None:
            return
        runtime.storage.after_epoch(len(runtime.loop.jobs))
        if runtime.admission is not None:
            runtime.admission.refresh()
        runtime.pools.publish(status)


def off_reason(sc: Any, config: SlaqConfig) -> str | None:
    """Why SLAQ cannot run on ``sc`` with ``config``, with the fix, or None when it can."""
    if sc is None:
        return "no active SparkContext: create the SparkSession first, then call slaq.attach(spark)"
    if not config.enabled:
        return f"{PREFIX}enabled=false: set it to true (or leave it unset and call slaq.attach) to switch SLAQ on"
    mode = (sc.getConf().get("spark.scheduler.mode") or "FIFO").upper()
    if mode != "FAIR":
        return f"SLAQ needs --conf spark.scheduler.mode=FAIR (task pools only apply in FAIR mode; it is {mode})"
    return None


class SlaqRuntime:
    """SLAQ attached to one SparkContext: the shim's pools plus the epoch loop (when enabled)."""

    def __init__(self, sc: Any, config: SlaqConfig, fit_as_job: FitAsJob | None = None):
        """``fit_as_job`` runs a spark.ml leaf fit as a job (the user API decides how); installed as
        ``JavaEstimator._fit``'s wrapper while the runtime is started and enabled."""
        self.sc = sc
        self.config = config
        self.pools: PoolBridge | None = None
        self.loop: EpochLoop | None = None
        self._fit_as_job = fit_as_job
        self._connect = False  # whether the shim turns Spark Connect clients' fits into jobs (while started)
        self._open: dict[str, LiveJob] = {}
        self._lock = threading.Lock()
        self._fit_seq = itertools.count(1)
        self.attached = False  # between start() and stop()
        self.admission: StorageAdmission | None = None  # storage-aware admission of caching spark.ml fits, when on
        self.finished: deque[Any] = deque(maxlen=FINISHED_KEPT)  # owners of the latest closed jobs, oldest first
        self.reason = off_reason(sc, config)  # why SLAQ is off (None while on)
        if self.reason is not None:
            return
        self.pools = PoolBridge(sc)
        self.storage = StorageCheck(lambda: memory_blocks_on_disk(sc))
        self.admission = (StorageAdmission(lambda: read_storage(sc), self._wake_loop, setup=self._setup_seconds)
                          if config.storage_admission else None)
        self.loop = EpochLoop(self.pools, config.policy, config.epoch, config.reserve_cores, clock_offset=self.pools.clock_offset(),
                              admit=self._admit_connect_fits, prior=config.prior,
                              waiting=self.admission.waiting if self.admission is not None else None, setup_order=config.setup_order)
        self.loop.observers.append(EpochPublisher(self))

    @property
    def enabled(self) -> bool:
        return self.pools is not None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> SlaqRuntime:
        """Configure the shim's pools, start the epoch loop and route spark.ml fits into jobs (only
        the first call after construction or :meth:`stop` does anything; nothing while disabled)."""
        if self.attached:
            return self
        if self.pools is not None and self.loop is not None:
            c = self.config
            self.pools.configure(c.work_conserving, c.fail_open_epochs * c.epoch)
            self.pools.resume()
            if self.admission is not None:
                self.admission.start()
            self.loop.start()
            if self._fit_as_job is not None:
                sparkml.install(self._run_fit)
                tuning.install(self._on_prune if c.prune else None)
            self._connect = self.pools.connect_fits(True)
            announce(self.sc, log, f"SLAQ: on (policy {c.policy}, epoch {c.epoch:.3g} s, work-conserving "
                                   f"{str(c.work_conserving).lower()}); {tab_location(self.sc, '/slaq/', 'SLAQ')}")
        self.attached = True
        return self

    def stop(self) -> None:
        """Stops the epoch loop and the spark.ml hook; the shim then opens the pools (fair sharing)."""
        self.attached = False
        sparkml.uninstall(self._run_fit)
        tuning.uninstall()
        if self.admission is not None:
            self.admission.stop()  # fits waiting for storage memory start now, as they would without SLAQ
        if self.pools is not None and self._connect and self.spark_alive():
            self.pools.connect_fits(False)
        if self.loop is not None:
            self.loop.stop()
        if self.pools is not None:
            self.pools.detach()

    def spark_alive(self) -> bool:
        return self.sc is not None and getattr(self.sc, "_jsc", None) is not None

    # -- jobs ------------------------------------------------------------------------------------
    def open(self, job: LiveJob) -> None:
        """Start tracking ``job``: its pool and, when enabled, the epoch loop on its history.
        Raises ``ValueError`` if a running job has the same name."""
        with self._lock:
            if job.name in self._open:
                raise ValueError(f"a SLAQ job named {job.name!r} is already running; job names must be unique while they run")
            self._open[job.name] = job
        if self.pools is not None and self.loop is not None:
            self.pools.register(job.name, job.weight)
            self.loop.add(job)

    def close(self, job: LiveJob) -> None:
        """Stop tracking ``job`` (its history stays with it); its pool is throttled until idle."""
        if self.loop is not None:
            self.sync()  # losses the JVM captured up to now still belong to this job
        with self._lock:
            if self._open.get(job.name) is not job:
                return
            del self._open[job.name]
            self.finished.append(job.owner)
        if self.admission is not None:
            self.admission.end(job.name)
        if self.pools is not None and self.loop is not None:
            self.loop.remove(job.name)
            self.pools.close(job.name)

    def report(self, job: LiveJob, loss: float) -> None:
        """One validated loss of ``job``. While enabled it goes through the JVM, so it joins the
        history in order with the losses captured there (:meth:`sync` brings it in)."""
        if self.pools is not None and self.pools.report(job.name, loss):
            return
        if self.loop is not None:
            self.loop.record(job, loss)
        else:
            job.record(loss)

    def sync(self) -> None:
        """Bring every open job's history up to date with the losses the JVM captured so far."""
        if self.loop is not None and self.spark_alive():
            self.loop.poll()

    def wait_for_storage(self, job: str, estimator: Any, size: float | None) -> None:
        """Before the spark.ml fit ``job`` of ``estimator`` on an input of ``size`` bytes (None: unknown)
        starts (its thread): when the estimator caches its training data, wait until storage memory
        holds that copy next to the running fits' (slaq.live.admission). Returns at once for other
        estimators and while disabled."""
        kind = type(estimator).__name__
        factor = cache_factor(kind)
        if self.admission is None or factor is None or not self.attached:
            return
        self.admission.arrive(job, training_cache_prefix(kind, estimator.uid), None if size is None else factor * size)
        self.admission.wait(job)

    def running_jobs(self) -> list[str]:
        with self._lock:
            return list(self._open)

    def job_named(self, name: str) -> Any:
        """The owner of the running job called ``name``, if any."""
        with self._lock:
            job = self._open.get(name)
        return None if job is None else job.owner

    def next_fit_number(self) -> int:
        """The sequence number that keeps generated spark.ml job names unique."""
        return next(self._fit_seq)

    # -- the calling thread ----------------------------------------------------------------------
    def enter_thread(self, job: str) -> Any:
        """Route the calling thread's Spark work to ``job`` (its pool, when enabled); returns what
        :meth:`restore_thread` needs, or None without a live Spark context."""
        if not self.spark_alive():
            return None
        return enter_thread(self.sc, job, POOL_PREFIX + job if self.pools is not None else None)

    def restore_thread(self, previous: Any) -> None:
        if previous is not None and self.spark_alive():
            restore_thread(self.sc, previous)

    def thread_job(self) -> str | None:
        """The job the calling thread's JVM local properties name (inherited by ``InheritableThread``)."""
        return thread_job(self.sc) if self.spark_alive() else None

    # -- callbacks -------------------------------------------------------------------------------
    def _on_prune(self, tuner: str, stopped: list[Pruned]) -> None:
        """CrossValidator ``tuner`` stopped these candidates (spark.slaq.prune): the UI tab says so."""
        if self.loop is not None:
            self.loop.mark_pruned(tuner, [p.candidate for p in stopped])

    def _admit_connect_fits(self) -> Callable[[], None] | None:
        """Before each drain (under the loop's ingest lock): track the Spark Connect fits the shim made
        jobs of; returns what closes the ones that ended, run after their last losses are ingested."""
        if self.pools is None or self.loop is None or not self._connect:
            return None
        ended: list[str] = []
        for m in self.pools.poll_connect_fits():
            if m.ended:
                ended.append(m.job)
                continue
            owner = connect.fit_job(m.job, m.operation, m.estimator, m.params)
            track = owner.track = LiveJob(m.job, reports=owner.reports, owner=owner,
                                          fit=fit_key(connect.estimator_kind(m.estimator), owner.params))
            with self._lock:
                self._open[m.job] = track
            self.loop.add(track)
            log.info("SLAQ: Spark Connect operation %s fits %s: job %s", m.operation, m.estimator, m.job)
        return (lambda: self._end_connect_fits(ended)) if ended else None

    def _end_connect_fits(self, names: list[str]) -> None:
        for name in names:
            with self._lock:
                track = self._open.pop(name, None)
                if track is not None:
                    self.finished.append(track.owner)
            if track is not None and self.loop is not None:
                self.loop.remove(name)

    def _setup_seconds(self, jobs: list[str]) -> dict[str, float]:
        """Fits waiting for storage memory: their predicted set-ups, which rank them (slaq.live.admission)."""
        return self.loop.setup_seconds(jobs) if self.loop is not None else {}

    def _wake_loop(self) -> None:
        """Fits just started after waiting for storage memory: the next epoch gives them cores now."""
        if self.loop is not None:
            self.loop.wake()

    def _run_fit(self, estimator: Any, dataset: Any, fit: Callable[[], Any]) -> Any:
        if self._fit_as_job is None or not (self.attached and self.enabled):
            return fit()
        return self._fit_as_job(self, estimator, dataset, fit)
