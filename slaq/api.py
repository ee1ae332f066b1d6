"""The user API: ``slaq.attach``, ``slaq.job``, ``job.report``/``slaq.report_loss``, ``job.should_stop``.

With ``spark.slaq.enabled`` unset or false every call still validates its input and keeps the job's
losses (so ``should_stop`` works), but nothing touches Spark's scheduler: the app runs as plain Spark.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Any

from slaq import sparkml
from slaq.enforce.pools import POOL_PREFIX, Iteration, PoolBridge, check_job_name, enter_thread, restore_thread, thread_job
from slaq.live.config import ConfigError, SlaqConfig
from slaq.live.loop import EpochLoop
from slaq.live.storage import StorageCheck, memory_blocks_on_disk
from slaq.predict.loss_curves import fit_loss_curve
from slaq.stats.history import InvalidReport, _finite_number

log = logging.getLogger("slaq")
FINISHED_KEPT = 256  # closed jobs a runtime remembers (with their histories) for inspection


class NoActiveJob(RuntimeError):
    """``report_loss`` was called on a thread that is not inside any ``slaq.job`` block."""


class JobClosed(RuntimeError):
    """A report for a job whose ``with`` block has already ended."""


class SlaqRuntime:
    """SLAQ attached to one SparkContext: the shim's pools plus the epoch loop (when enabled)."""

    def __init__(self, sc: Any, config: SlaqConfig):
        self.sc = sc
        self.config = config
        self.pools: PoolBridge | None = None
        self.loop: EpochLoop | None = None
        self._open: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._fit_seq = itertools.count(1)
        self.attached = False  # between start() and stop()
        self.finished: deque[Job] = deque(maxlen=FINISHED_KEPT)  # the latest closed jobs, oldest first
        if not config.enabled:
            return
        mode = (sc.getConf().get("spark.scheduler.mode") or "FIFO").upper()
        if mode != "FAIR":
            raise ConfigError("spark.slaq.enabled=true needs --conf spark.scheduler.mode=FAIR (task pools only apply in FAIR mode)")
        self.pools = PoolBridge(sc)
        self.storage = StorageCheck(lambda: memory_blocks_on_disk(sc))
        self.loop = EpochLoop(self.pools, config.policy, config.epoch, config.reserve_cores, on_epoch=self._on_epoch)
        self.loop.on_loss = self._on_loss
        self._clock_offset = self.pools.clock_offset()

    def start(self) -> SlaqRuntime:
        """Configure the shim's pools, start the epoch loop and route spark.ml fits into jobs (nothing
        happens while disabled)."""
        if self.pools is not None and self.loop is not None:
            c = self.config
            self.pools.configure(c.work_conserving, c.fail_open_epochs * c.epoch)
            self.pools.resume()
            self.loop.start()
            sparkml.install(self._fit_as_job)
            log.info("SLAQ: attached (policy %s, epoch %.3g s, work-conserving %s)", c.policy, c.epoch, c.work_conserving)
        self.attached = True
        return self

    @property
    def enabled(self) -> bool:
        return self.pools is not None

    def _spark_alive(self) -> bool:
        return self.sc is not None and getattr(self.sc, "_jsc", None) is not None

    def _open_job(self, job: Job) -> None:
        with self._lock:
            if job.name in self._open:
                raise ValueError(f"a SLAQ job named {job.name!r} is already running; job names must be unique while they run")
            self._open[job.name] = job
        if self.pools is not None and self.loop is not None:
            self.pools.register(job.name, job.weight)
            self.loop.add(job.name, job.weight, job._reports)

    def _close_job(self, job: Job) -> None:
        if self.loop is not None:
            self.sync()  # losses the JVM captured up to now still belong to this job
        with self._lock:
            if self._open.get(job.name) is not job:
                return
            del self._open[job.name]
            self.finished.append(job)
        if self.pools is not None and self.loop is not None:
            self.loop.remove(job.name)
            self.pools.close(job.name)

    def running_jobs(self) -> list[str]:
        with self._lock:
            return list(self._open)

    def job_named(self, name: str) -> Job | None:
        """The running job called ``name``, if any."""
        with self._lock:
            return self._open.get(name)

    def sync(self) -> None:
        """Bring every open job's history up to date with the losses the JVM captured so far."""
        if self.loop is not None and self._spark_alive():
            self.loop.poll()

    def _on_epoch(self, status: Any) -> None:
        """After every epoch (loop thread): the storage check, then the status for the UI tab and driver log."""
        if self.pools is None or self.loop is None:
            return
        self.storage.after_epoch(len(self.loop.jobs))
        self.pools.publish(status)

    def _on_loss(self, it: Iteration) -> None:
        """The epoch loop accepted a loss: every loss of a job, reported from Python or captured from
        spark.ml in the JVM, joins its history here in the JVM's order; a job that reached its target
        gets the minimum share."""
        job = self.job_named(it.job)
        if job is None:
            return
        job._record(it.loss, it.t + self._clock_offset)
        job._check_target()

    def _satisfied(self, job: Job) -> None:
        if self.loop is not None:
            self.loop.satisfy(job.name)
        log.info("SLAQ: job %s reached its target after %d losses; it keeps running on the minimum share", job.name, len(job._losses))

    def _fit_as_job(self, estimator: Any, fit: Callable[[], Any]) -> Any:
        """A spark.ml leaf fit: its own job, unless the calling thread already is in one (that choice wins)."""
        if _scheduler is not self or not self.enabled or current_job() is not None:
            return fit()
        kind, params = type(estimator).__name__, sparkml.hyperparameters(estimator)
        job = Job(sparkml.fit_job_name(kind, params, next(self._fit_seq)), reports=sparkml.reports_loss(kind, params))
        with job:
            return fit()

    def stop(self) -> None:
        """Stops the epoch loop and the spark.ml hook; the shim then opens the pools (fair sharing)."""
        self.attached = False
        sparkml.uninstall(self._fit_as_job)
        if self.loop is not None:
            self.loop.stop()
        if self.pools is not None:
            self.pools.open_all("SLAQ detached")


_scheduler: SlaqRuntime | None = None
_attach_lock = threading.Lock()
_local = threading.local()


def _spark_context(spark: Any) -> Any:
    if spark is None:
        from pyspark import SparkContext

        return SparkContext._active_spark_context
    return getattr(spark, "sparkContext", spark)


def attach(spark: Any = None) -> SlaqRuntime:
    """SLAQ for ``spark`` (a SparkSession or SparkContext; default: the active one), configured from
    its ``spark.slaq.*`` confs. Idempotent; restarts a runtime that was stopped. Without an active Spark
    context SLAQ is disabled."""
    global _scheduler
    sc = _spark_context(spark)
    with _attach_lock:
        if _scheduler is not None and _scheduler.sc is sc and (sc is None or sc._jsc is not None):
            return _scheduler if _scheduler.attached else _scheduler.start()  # attached again after a stop()
        if _scheduler is not None:
            _scheduler.stop()
        config = SlaqConfig() if sc is None else SlaqConfig.from_conf(lambda k: sc.getConf().get(k))
        _scheduler = SlaqRuntime(sc, config).start()
        return _scheduler


def latest_status() -> Any:
    """The latest ``epoch_status`` of the attached SLAQ runtime (None while disabled or before its first epoch)."""
    s = _scheduler
    return None if s is None or s.loop is None else s.loop.status


def current_job() -> Job | None:
    """The job this thread's work belongs to: its innermost ``slaq.job`` block, else the job named by its
    JVM thread's ``slaq.job`` local property, which ``pyspark.InheritableThread`` and
    ``inheritable_thread_target`` (CrossValidator's pool threads) copy from the thread that started them.
    A plain ``threading.Thread`` inherits nothing: its work is outside every job."""
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    s = _scheduler
    if s is None or not s._spark_alive():
        return None
    name = thread_job(s.sc)
    return None if name is None else s.job_named(name)


class Job:
    """One training job: ``with slaq.job("lr-0.1") as job: ... job.report(loss)``."""

    def __init__(self, name: str, weight: float = 1.0, target_loss: float | None = None, target_reduction: float | None = None,
                 *, reports: bool | None = None):
        """``reports``: whether the job will report per-iteration losses, when known before it starts
        (SLAQ knows it for spark.ml fits); ``None``, the default, lets the epoch loop find out."""
        self.name = check_job_name(name)
        self.weight = _finite_number(weight, "weight")
        if self.weight <= 0:
            raise ValueError(f"weight must be > 0, got {weight!r}")
        self.target_loss = None if target_loss is None else _finite_number(target_loss, "target_loss")
        if target_reduction is not None:
            target_reduction = _finite_number(target_reduction, "target_reduction")
            if not 0 < target_reduction <= 1:
                raise ValueError(f"target_reduction must be in (0, 1], e.g. 0.95; got {target_reduction!r}")
        self.target_reduction = target_reduction
        self._losses: list[float] = []
        self.times: list[float] = []  # time.monotonic() of each loss (captured ones: when the JVM stamped it)
        self.scheduler: SlaqRuntime | None = None
        self.done = False
        self.satisfied = False  # reached its target: minimum share from then on
        self._history_lock = threading.Lock()
        self._previous: Any = None  # the thread's JVM local properties before the block
        self._reports = reports

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Job:
        self.scheduler = attach()
        self.scheduler._open_job(self)
        s = self.scheduler
        if s._spark_alive():
            self._previous = enter_thread(s.sc, self.name, POOL_PREFIX + self.name if s.pools is not None else None)
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        stack = getattr(_local, "stack", [])
        if self in stack:
            stack.remove(self)
        if exc is not None:
            log.warning("SLAQ: job %s ended with %s: %s; its pool is released", self.name, type(exc).__name__, exc)
        self._release()
        s = self.scheduler
        if s is not None and self._previous is not None and s._spark_alive():
            restore_thread(s.sc, self._previous)

    def _release(self) -> None:
        if not self.done:
            if self.scheduler is not None:
                self.scheduler._close_job(self)
            self.done = True

    # -- the history -----------------------------------------------------------------------------
    @property
    def losses(self) -> list[float]:
        """Every loss of this job in order: reported from Python and captured from spark.ml in the JVM."""
        if not self.done and self.scheduler is not None:
            self.scheduler.sync()
        with self._history_lock:
            return list(self._losses)

    def _record(self, loss: float, when: float | None = None) -> None:
        with self._history_lock:
            self._losses.append(loss)
            self.times.append(time.monotonic() if when is None else when)

    def _check_target(self) -> None:
        if not self.satisfied and self._target_reached():
            self.satisfied = True
            if self.scheduler is not None and not self.done:
                self.scheduler._satisfied(self)

    # -- reporting -------------------------------------------------------------------------------
    def report(self, loss: float) -> None:
        """Report the loss after one iteration. Raises ``InvalidReport`` (NaN, inf, non-numbers) or
        ``JobClosed``; a rejected report changes nothing, for this job or any other."""
        value = _finite_number(loss, "loss")
        if self.done:
            raise JobClosed(f"SLAQ job {self.name!r} is closed; report inside its `with slaq.job(...)` block")
        s = self.scheduler
        if s is not None and s.pools is not None and s.pools.report(self.name, value):
            return  # joins the history through the JVM, in order with the losses captured there
        self._record(value)
        self._check_target()

    def should_stop(self) -> bool:
        """True once the job reached the target it declared (from any loss: reported or captured from
        spark.ml); the job's cores are released then. A spark.ml fit is never stopped mid-fit: a job
        that reaches its target during one runs on the minimum share until it returns."""
        losses = self.losses
        reached = self.satisfied or _target_reached(losses, self.target_loss, self.target_reduction)
        if reached:
            self._release()
        return reached

    def _target_reached(self) -> bool:
        with self._history_lock:
            losses = list(self._losses)
        return _target_reached(losses, self.target_loss, self.target_reduction)


def _target_reached(losses: list[float], target_loss: float | None, target_reduction: float | None) -> bool:
    """Whether ``losses`` reached ``target_loss`` or ``target_reduction`` of the way to the fitted floor."""
    if not losses:
        return False
    if target_loss is not None and losses[-1] <= target_loss:
        return True
    if target_reduction is not None and len(losses) >= 4:
        floor = fit_loss_curve(losses).floor
        span = losses[0] - floor
        if math.isfinite(floor) and span > 0:
            return (losses[0] - losses[-1]) / span >= target_reduction
    return False


def job(name: str, weight: float = 1.0, target_loss: float | None = None, target_reduction: float | None = None) -> Job:
    """A SLAQ training job; use as ``with slaq.job("name") as job:``. Spark work in the block (and in
    ``pyspark.InheritableThread`` threads started inside it) runs in the job's pool."""
    return Job(name, weight, target_loss, target_reduction)


def report_loss(loss: float) -> None:
    """Report one iteration's loss for the current thread's job (the one-line integration)."""
    active = current_job()
    if active is None:
        _finite_number(loss, "loss")
        raise NoActiveJob(f"slaq.report_loss() called outside any `with slaq.job(...)` block (thread {threading.current_thread().name}; "
                          "threads started inside a job belong to it when they are pyspark.InheritableThread)")
    active.report(loss)


__all__ = ["InvalidReport", "JobClosed", "NoActiveJob", "SlaqRuntime", "attach", "current_job", "job", "latest_status", "report_loss"]
