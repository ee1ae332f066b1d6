"""The user API: ``slaq.attach``, ``slaq.job``, ``job.report``/``slaq.report_loss``, ``job.should_stop``.

SLAQ is switched on by ``slaq.attach`` or by ``spark.slaq.enabled=true``; while it is off every call
still validates its input and keeps the job's losses (so ``should_stop`` works), but nothing touches
Spark's scheduler: the app runs as plain Spark.
The scheduling itself is the :class:`~slaq.runtime.SlaqRuntime` of the job's SparkContext.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from slaq import sparkml, tuning
from slaq.enforce.pools import check_job_name
from slaq.estimators import reports_loss
from slaq.live.config import PREFIX, SlaqConfig
from slaq.live.job import LiveJob
from slaq.live.names import check_name_size
from slaq.live.registry import record
from slaq.live.target import Target
from slaq.messages import EpochStatus
from slaq.runtime import SlaqRuntime
from slaq.stats.history import InvalidReport, finite_number, real_number
from sparkshim.attach import Attachments

log = logging.getLogger("slaq")
MAX_ERROR_TEXT = 300  # characters of a failed job's exception quoted in its WARN line (the exception itself propagates)


class NoActiveJob(RuntimeError):
    """``report_loss`` was called on a thread that is not inside any ``slaq.job`` block."""


class JobClosed(RuntimeError):
    """A report for a job whose ``with`` block has already ended."""


def _fit_as_job(runtime: SlaqRuntime, estimator: Any, fit: Callable[[], Any]) -> Any:
    """A spark.ml leaf fit: its own job, unless the calling thread already is in one (that choice
    wins) or ``runtime`` is not the one attached to the active context any more."""
    if _runtimes.current() is not runtime or current_job() is not None:
        return fit()
    kind, params = type(estimator).__name__, sparkml.hyperparameters(estimator)
    job = Job(sparkml.fit_job_name(kind, params, runtime.next_fit_number()), reports=reports_loss(kind, params))
    job._track.tuning = tuning.place_of(estimator)  # its CrossValidator/TrainValidationSplit, shown grouped in the UI tab
    with job:
        return fit()


def _make_runtime(sc: Any, config: SlaqConfig) -> SlaqRuntime:
    return SlaqRuntime(sc, config, _fit_as_job)


_runtimes: Attachments[SlaqRuntime] = Attachments("slaq", "SLAQ", PREFIX, SlaqConfig.from_conf, _make_runtime)
_local = threading.local()


def attach(spark: Any = None, explicit: bool = True) -> SlaqRuntime:
    """SLAQ for ``spark`` (a SparkSession or SparkContext; default: the active one), configured from
    its ``spark.slaq.*`` confs. Calling it switches SLAQ on unless ``spark.slaq.enabled=false``
    (``explicit=False``, the start-up hook's and ``slaq.job``'s call, attaches only what the confs
    switch on). Idempotent; starts a runtime that was stopped again. Always a runtime: when SLAQ
    cannot run (no active context, FIFO scheduling, the conf says false) ``.enabled`` is False,
    ``.reason`` says why and an explicit call logs that in one WARN line."""
    return _runtimes.attach(spark, explicit=explicit)


def detach(spark: Any = None) -> None:
    """Stop SLAQ for ``spark`` (default: the active context): the loop and the spark.ml hook stop and
    the shim opens the pools (fair sharing). The next ``slaq.job`` or ``slaq.attach`` attaches anew."""
    _runtimes.detach(spark)


def latest_status() -> EpochStatus | None:
    """The latest ``epoch_status`` of the active context's SLAQ runtime (None while disabled or before its first epoch)."""
    runtime = _runtimes.current()
    return None if runtime is None or runtime.loop is None else runtime.loop.status


def current_job() -> Job | None:
    """The job this thread's work belongs to: its innermost ``slaq.job`` block, else the job named by its
    JVM thread's ``slaq.job`` local property, which ``pyspark.InheritableThread`` and
    ``inheritable_thread_target`` (CrossValidator's pool threads) copy from the thread that started them.
    A plain ``threading.Thread`` inherits nothing: its work is outside every job."""
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    runtime = _runtimes.current()
    name = None if runtime is None else runtime.thread_job()
    return None if runtime is None or name is None else runtime.job_named(name)


class Job:
    """One training job: ``with slaq.job("lr-0.1") as job: ... job.report(loss)``."""

    def __init__(self, name: str, weight: float = 1.0, target_loss: float | None = None, target_reduction: float | None = None,
                 *, reports: bool | None = None):
        """``reports``: whether the job will report per-iteration losses, when known before it starts
        (SLAQ knows it for spark.ml fits); ``None``, the default, lets the epoch loop find out."""
        name = check_name_size(check_job_name(name))  # bounded where it enters: the tab and the event log hold it
        weight = finite_number(weight, "weight")
        if weight <= 0:
            raise ValueError(f"weight must be > 0, got {weight!r}")
        target = Target.checked(target_loss, target_reduction)
        # the job's one history: the runtime's epoch loop schedules on it while SLAQ is enabled
        self._track = LiveJob(name, weight, target, reports, owner=self)
        self.runtime: SlaqRuntime | None = None
        self.done = False
        self._previous: Any = None  # the thread's JVM local properties before the block

    @property
    def name(self) -> str:
        return self._track.name

    @property
    def weight(self) -> float:
        return self._track.weight

    @property
    def target_loss(self) -> float | None:
        return self._track.target.loss

    @property
    def target_reduction(self) -> float | None:
        return self._track.target.reduction

    @property
    def satisfied(self) -> bool:
        """Reached its target: minimum share from then on."""
        return self._track.satisfied

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Job:
        runtime = self.runtime = attach(explicit=False)  # a job alone never switches SLAQ on
        runtime.open(self._track)
        self._previous = runtime.enter_thread(self.name)
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
            log.warning("SLAQ: job %s ended with %s: %s; its pool is released", self._track.shown, type(exc).__name__,
                        sparkml.one_line(str(exc), MAX_ERROR_TEXT))
        self._release()
        if self.runtime is not None:
            self.runtime.restore_thread(self._previous)

    def _release(self) -> None:
        if not self.done:
            if self.runtime is not None:
                self.runtime.close(self._track)
            self.done = True

    # -- the history -----------------------------------------------------------------------------
    @property
    def losses(self) -> list[float]:
        """Every loss of this job in order: reported from Python and captured from spark.ml in the JVM."""
        if not self.done and self.runtime is not None:
            self.runtime.sync()
        return list(self._track.history.losses)

    @property
    def times(self) -> list[float]:
        """``time.monotonic()`` of each loss (a captured one: when the JVM stamped it)."""
        if not self.done and self.runtime is not None:
            self.runtime.sync()
        return list(self._track.history.times)

    # -- reporting -------------------------------------------------------------------------------
    @property
    def skipped_losses(self) -> int:
        """NaN or infinite losses reported so far, skipped (see :meth:`report`)."""
        return self._track.skipped

    def report(self, loss: float) -> None:
        """Report the loss after one iteration. A NaN or infinite loss (a diverging model) is skipped, so
        the training loop goes on: the job's first one logs a WARN, later ones are only counted
        (:attr:`skipped_losses`). Raises ``InvalidReport`` for anything but a real number and ``JobClosed``
        after the job's block; a rejected report changes nothing, for this job or any other."""
        value = real_number(loss, "loss")
        if self.done:
            raise JobClosed(f"SLAQ job {self.name!r} is closed; report inside its `with slaq.job(...)` block")
        if not math.isfinite(value):
            self._track.skip(value)
            return
        if self.runtime is not None:
            self.runtime.report(self._track, value)
        else:
            record(self._track, [value])

    def should_stop(self) -> bool:
        """True once the job reached the target it declared (from any loss: reported or captured from
        spark.ml); the job's cores are released then. A spark.ml fit is never stopped mid-fit: a job
        that reaches its target during one runs on the minimum share until it returns."""
        if not self.done and self.runtime is not None:
            self.runtime.sync()  # every loss so far has been checked against the target
        reached = self._track.satisfied
        if reached:
            self._release()
        return reached


def job(name: str, weight: float = 1.0, target_loss: float | None = None, target_reduction: float | None = None) -> Job:
    """A SLAQ training job; use as ``with slaq.job("name") as job:``. Spark work in the block (and in
    ``pyspark.InheritableThread`` threads started inside it) runs in the job's pool."""
    return Job(name, weight, target_loss, target_reduction)


def report_loss(loss: float) -> None:
    """Report one iteration's loss for the current thread's job (the one-line integration)."""
    active = current_job()
    if active is None:
        real_number(loss, "loss")
        raise NoActiveJob(f"slaq.report_loss() called outside any `with slaq.job(...)` block (thread {threading.current_thread().name}; "
                          "threads started inside a job belong to it when they are pyspark.InheritableThread)")
    active.report(loss)


__all__ = ["InvalidReport", "JobClosed", "NoActiveJob", "attach", "current_job", "detach", "job", "latest_status", "report_loss"]
