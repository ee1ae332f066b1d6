"""SLAQ attached to one SparkContext: the shim's pools, the epoch loop and the integrations' hooks; and
:data:`runtimes`, the one runtime per SparkContext (:mod:`sparkshim.attach`) that ``slaq.attach`` starts.

A job's handle (:class:`slaq.jobs.Job`) talks to a runtime through a few public calls (:class:`slaq.jobs.JobRuntime`):
it :meth:`~SlaqRuntime.open`\\ s and :meth:`~SlaqRuntime.close`\\ s a job's :class:`~slaq.live.job.LiveJob` record,
:meth:`~SlaqRuntime.report`\\ s losses, :meth:`~SlaqRuntime.sync`\\ s the histories and routes its thread with
:meth:`~SlaqRuntime.enter_thread`. The runtime never calls into the handles: what it knows of a job is its record,
which holds the job's one loss history (the epoch loop schedules on it and checks its target, the user reads it). The
records live in one :class:`~slaq.live.registry.JobRegistry` (:attr:`SlaqRuntime.jobs`): the epoch
loop's, or one of its own while SLAQ is disabled. While started and enabled, the runtime has the
integrations' Python hooks installed (:mod:`slaq.integrations.hooks`): they open jobs themselves.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import Any

from slaq.enforce.pools import POOL_PREFIX, PoolBridge, enter_thread, restore_thread, thread_job
from slaq.integrations import hooks
from slaq.integrations.connect import ConnectFits
from slaq.integrations.pruning import Pruned
from slaq.live.config import PREFIX, SlaqConfig
from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.live.observer import LoopObserver
from slaq.live.registry import JobRegistry, record
from slaq.live.storage import StorageCheck, memory_blocks_on_disk
from slaq.live.trace_out import TraceRecorder, trace_recorder
from slaq.messages import EpochStatus
from slaq.product import PRODUCT
from sparkshim.announce import announce, tab_location
from sparkshim.attach import Attachments

log = logging.getLogger("slaq")


@dataclass
class EpochPublisher(LoopObserver):
    """After every epoch (loop thread): the storage check, then the status for the UI tab and driver log."""

    runtime: SlaqRuntime

    def on_status(self, status: EpochStatus) -> None:
        runtime = self.runtime
        if runtime.pools is None or runtime.loop is None:
            return
        runtime.storage.after_epoch(len(runtime.loop.jobs))
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

    def __init__(self, sc: Any, config: SlaqConfig):
        self.sc = sc
        self.config = config
        self.pools: PoolBridge | None = None
        self.loop: EpochLoop | None = None
        self._connect: ConnectFits | None = None  # makes Spark Connect clients' fits jobs (while started)
        self._fit_seq = itertools.count(1)
        self.attached = False  # between start() and stop()
        self.reason = off_reason(sc, config)  # why SLAQ is off (None while on)
        self.recorder: TraceRecorder | None = None  # spark.slaq.recordTrace's, while enabled
        if self.reason is not None:
            self.jobs = JobRegistry()  # the open and the latest finished jobs (the loop's while enabled)
            return
        self.pools = PoolBridge(sc)
        self.storage = StorageCheck(lambda: memory_blocks_on_disk(sc))
        self.loop = EpochLoop(self.pools, config.policy, config.epoch, config.reserve_cores, clock_offset=self.pools.clock_offset())
        self.loop.observers.append(EpochPublisher(self))
        self.recorder = trace_recorder(config)
        if self.recorder is not None:
            self.loop.observers.append(self.recorder)
        self.jobs = self.loop.jobs

    @property
    def enabled(self) -> bool:
        return self.pools is not None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> SlaqRuntime:
        """Configure the shim's pools, start the epoch loop and install the integrations' hooks (spark.ml fits,
        tuners' fits and Spark Connect fits become jobs; only the first call after construction or
        :meth:`stop` does anything; nothing while disabled)."""
        if self.attached:
            return self
        if self.pools is not None and self.loop is not None:
            c = self.config
            self.pools.configure(c.work_conserving, c.fail_open_epochs * c.epoch)
            self.pools.resume()
            self.loop.start()
            hooks.install(self)
            if self.pools.connect_fits(True):
                self._connect = ConnectFits(self.pools, self.loop)
                self.loop.observers.append(self._connect)
            announce(self.sc, log, f"SLAQ: on (policy {c.policy}, epoch {c.epoch:.3g} s, work-conserving "
                                   f"{str(c.work_conserving).lower()}); {tab_location(self.sc, '/slaq/', 'SLAQ')}")
        self.attached = True
        return self

    def stop(self) -> None:
        """Stops the epoch loop and the integrations' hooks; the shim then opens the pools (fair sharing)."""
        self.attached = False
        hooks.uninstall(self)
        if self.pools is not None and self._connect is not None:
            if self.loop is not None:
                self.loop.unwatch(self._connect)
            self._connect = None
            if self.spark_alive():
                self.pools.connect_fits(False)
        if self.loop is not None:
            self.loop.stop()
        if self.recorder is not None and self.spark_alive():
            self.sync()
            self.recorder.write(self.sc, self.config, self.jobs.running())
        if self.pools is not None:
            self.pools.detach()

    def spark_alive(self) -> bool:
        return self.sc is not None and getattr(self.sc, "_jsc", None) is not None

    # -- jobs ------------------------------------------------------------------------------------
    def open(self, job: LiveJob) -> None:
        """Start tracking ``job``: its pool and, when enabled, the epoch loop on its history.
        Raises ``ValueError`` if a running job has the same name."""
        if self.pools is None or self.loop is None:
            self.jobs.add(job)
            return
        self.jobs.check_new(job.name)  # before its pool: a pool registered for a refused name would be left without a job
        self.pools.register(job.name, job.weight)
        self.loop.add(job)

    def close(self, job: LiveJob) -> None:
        """Stop tracking ``job`` (its history stays with it); its pool is throttled until idle."""
        if self.pools is None or self.loop is None:
            self.jobs.remove(job.name, job)
            return
        self.sync()  # losses the JVM captured up to now still belong to this job
        if self.loop.remove(job.name, job) is not None:
            self.pools.close(job.name)

    def report(self, job: LiveJob, loss: float) -> None:
        """One validated loss of ``job``. While enabled it goes through the JVM, so it joins the
        history in order with the losses captured there (:meth:`sync` brings it in)."""
        if self.pools is not None and self.pools.report(job.name, loss):
            return
        if self.loop is not None:
            self.loop.record(job, loss)
        else:
            record(job, [loss])

    def sync(self) -> None:
        """Bring every open job's history up to date with the losses the JVM captured so far."""
        if self.loop is not None and self.spark_alive():
            self.loop.sync()

    def running_jobs(self) -> list[str]:
        return list(self.jobs)

    def job_named(self, name: str) -> Any:
        """The owner of the running job called ``name``, if any."""
        job = self.jobs.get(name)
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
    def mark_pruned(self, tuner: str, stopped: list[Pruned]) -> None:
        """CrossValidator ``tuner`` stopped these candidates (spark.slaq.prune): the UI tab says so."""
        if self.loop is not None:
            self.loop.mark_pruned(tuner, [p.candidate for p in stopped])


runtimes: Attachments[SlaqRuntime] = Attachments(PRODUCT.name, "SLAQ", PREFIX, SlaqConfig.from_conf, SlaqRuntime)
