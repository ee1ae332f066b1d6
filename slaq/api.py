"""The user API: ``slaq.attach``, ``slaq.job``, ``job.report``/``slaq.report_loss``, ``job.should_stop``.

With ``spark.slaq.enabled`` unset or false every call still validates its input and keeps the job's
losses (so ``should_stop`` works), but nothing touches Spark's scheduler: the app runs as plain Spark.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from types import TracebackType
from typing import Any

from slaq.enforce.pools import PoolBridge, check_job_name
from slaq.live.config import ConfigError, SlaqConfig
from slaq.live.loop import EpochLoop
from slaq.predict.loss_curves import fit_loss_curve
from slaq.stats.history import InvalidReport, _finite_number

log = logging.getLogger("slaq")


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
        if not config.enabled:
            return
        mode = (sc.getConf().get("spark.scheduler.mode") or "FIFO").upper()
        if mode != "FAIR":
            raise ConfigError("spark.slaq.enabled=true needs --conf spark.scheduler.mode=FAIR (task pools only apply in FAIR mode)")
        self.pools = PoolBridge(sc)
        self.loop = EpochLoop(self.pools, config.policy, config.epoch, config.reserve_cores, on_epoch=self.pools.publish)

    def start(self) -> SlaqRuntime:
        """Configure the shim's pools and start the epoch loop (nothing happens while disabled)."""
        if self.pools is not None and self.loop is not None:
            c = self.config
            self.pools.configure(c.work_conserving, c.fail_open_epochs * c.epoch)
            self.loop.start()
            log.info("SLAQ: attached (policy %s, epoch %.3g s, work-conserving %s)", c.policy, c.epoch, c.work_conserving)
        return self

    @property
    def enabled(self) -> bool:
        return self.pools is not None

    def _open_job(self, job: Job) -> None:
        with self._lock:
            if job.name in self._open:
                raise ValueError(f"a SLAQ job named {job.name!r} is already running; job names must be unique while they run")
            self._open[job.name] = job
        if self.pools is not None and self.loop is not None:
            self.pools.register(job.name, job.weight)
            self.loop.add(job.name, job.weight)

    def _close_job(self, job: Job) -> None:
        with self._lock:
            if self._open.get(job.name) is not job:
                return
            del self._open[job.name]
        if self.pools is not None and self.loop is not None:
            self.loop.remove(job.name)
            self.pools.close(job.name)

    def running_jobs(self) -> list[str]:
        with self._lock:
            return list(self._open)

    def stop(self) -> None:
        """Stops the epoch loop; the shim then opens the pools (fair sharing)."""
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
    its ``spark.slaq.*`` confs. Idempotent. Without an active Spark context SLAQ is disabled."""
    global _scheduler
    sc = _spark_context(spark)
    with _attach_lock:
        if _scheduler is not None and _scheduler.sc is sc and (sc is None or sc._jsc is not None):
            return _scheduler
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
    """The innermost ``slaq.job`` of this thread (threads started inside a job inherit it)."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


class Job:
    """One training job: ``with slaq.job("lr-0.1") as job: ... job.report(loss)``."""

    def __init__(self, name: str, weight: float = 1.0, target_loss: float | None = None, target_reduction: float | None = None):
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
        self.losses: list[float] = []
        self.times: list[float] = []  # time.monotonic() of each report
        self.scheduler: SlaqRuntime | None = None
        self.done = False
        self._previous: tuple[str | None, str | None] | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Job:
        _install_thread_inheritance()
        self.scheduler = attach()
        self.scheduler._open_job(self)
        if self.scheduler.pools is not None:
            self._previous = self.scheduler.pools.enter(self.name)
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
        if self.scheduler is not None and self.scheduler.pools is not None and self._previous is not None:
            self.scheduler.pools.set_thread(*self._previous)

    def _release(self) -> None:
        if not self.done:
            self.done = True
            if self.scheduler is not None:
                self.scheduler._close_job(self)

    # -- reporting -------------------------------------------------------------------------------
    def report(self, loss: float) -> None:
        """Report the loss after one iteration. Raises ``InvalidReport`` (NaN, inf, non-numbers) or
        ``JobClosed``; a rejected report changes nothing, for this job or any other."""
        value = _finite_number(loss, "loss")
        if self.done:
            raise JobClosed(f"SLAQ job {self.name!r} is closed; report inside its `with slaq.job(...)` block")
        self.losses.append(value)
        self.times.append(time.monotonic())
        s = self.scheduler
        if s is not None and s.pools is not None:
            s.pools.report(self.name, value)

    def should_stop(self) -> bool:
        """True once the job reached the target it declared; the job's cores are released then."""
        reached = self._target_reached()
        if reached:
            self._release()
        return reached

    def _target_reached(self) -> bool:
        if not self.losses:
            return False
        if self.target_loss is not None and self.losses[-1] <= self.target_loss:
            return True
        if self.target_reduction is not None and len(self.losses) >= 4:
            floor = fit_loss_curve(self.losses).floor
            span = self.losses[0] - floor
            if math.isfinite(floor) and span > 0:
                return (self.losses[0] - self.losses[-1]) / span >= self.target_reduction
        return False


def job(name: str, weight: float = 1.0, target_loss: float | None = None, target_reduction: float | None = None) -> Job:
    """A SLAQ training job; use as ``with slaq.job("name") as job:``. Spark work in the block (and in
    threads started inside it) runs in the job's pool."""
    return Job(name, weight, target_loss, target_reduction)


def report_loss(loss: float) -> None:
    """Report one iteration's loss for the current thread's job (the one-line integration)."""
    active = current_job()
    if active is None:
        _finite_number(loss, "loss")
        raise NoActiveJob(f"slaq.report_loss() called outside any `with slaq.job(...)` block (thread {threading.current_thread().name})")
    active.report(loss)


_inheritance_installed = False


def _install_thread_inheritance() -> None:
    """Make threads started inside a job run in it: their Python-side job and their JVM thread's
    pool properties are set from the starting thread's job before ``run``."""
    global _inheritance_installed
    if _inheritance_installed:
        return
    _inheritance_installed = True
    original_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        parent = current_job()
        if parent is not None and not parent.done:
            run = self.run

            def run_in_job() -> None:
                _local.stack = [parent]
                s = parent.scheduler
                if s is not None and s.pools is not None and not parent.done:
                    s.pools.set_thread("slaq." + parent.name, parent.name)
                run()

            self.run = run_in_job  # type: ignore[method-assign]
        original_start(self)

    threading.Thread.start = start  # type: ignore[method-assign]


__all__ = ["InvalidReport", "JobClosed", "NoActiveJob", "SlaqRuntime", "attach", "current_job", "job", "latest_status", "report_loss"]
