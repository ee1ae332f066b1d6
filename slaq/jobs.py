"""A SLAQ job as its owner holds it: :class:`Job` (``with slaq.job(name) as job: ... job.report(loss)``), the
thread's stack of open jobs and :func:`current_job`.

The user API (:mod:`slaq.api`) and the integrations (:mod:`slaq.integrations`: spark.ml fits)
open jobs here. A job finds the runtime attached to the active SparkContext through the product's registry
(:func:`sparkshim.attach.registered`), never by importing :mod:`slaq.runtime`, which sits above the
integrations it installs; what a job uses of that runtime is :class:`JobRuntime`.
"""

from __future__ import annotations

import logging
import math
import threading
from types import TracebackType
from typing import Any, Protocol

from slaq.live.job import LiveJob
from slaq.live.registry import record
from slaq.live.status import NOT_TUNING, Tuning
from slaq.live.target import Target
from slaq.names import check_job_name, check_name_size, one_line
from slaq.product import PRODUCT
from slaq.stats.history import positive_number, real_number
from sparkshim.attach import registered

log = logging.getLogger("slaq")
MAX_ERROR_TEXT = 300  # characters of a failed job's exception quoted in its WARN line (the exception itself propagates)
_local = threading.local()


class NoActiveJob(RuntimeError):
    """``report_loss`` was called on a thread that is not inside any ``slaq.job`` block."""


class JobClosed(RuntimeError):
    """A report for a job whose ``with`` block has already ended."""


class JobRuntime(Protocol):
    """What a job, and the integrations that open jobs, use of SLAQ attached to a SparkContext
    (:class:`slaq.runtime.SlaqRuntime`: its docstring says what each call does)."""

    sc: Any

    @property
    def enabled(self) -> bool: ...
    def spark_alive(self) -> bool: ...
    def open(self, job: LiveJob) -> None: ...
    def close(self, job: LiveJob) -> None: ...
    def report(self, job: LiveJob, loss: float) -> None: ...
    def sync(self) -> None: ...
    def job_named(self, name: str) -> Any: ...
    def enter_thread(self, job: str) -> Any: ...
    def restore_thread(self, previous: Any) -> None: ...
    def thread_job(self) -> str | None: ...


def attached_runtime() -> Any:
    """The runtime attached to the active SparkContext, or None (none attached, or SLAQ's runtime module never loaded)."""
    runtimes = registered(PRODUCT.name)
    return None if runtimes is None else runtimes.current()


def _attach_quietly() -> Any:
    """The active context's started runtime, attached as the confs say: a job alone never switches SLAQ on.
    None only while SLAQ's runtime module was never loaded (nothing can schedule the job then)."""
    runtimes = registered(PRODUCT.name)
    return None if runtimes is None else runtimes.attach(explicit=False)


def current_job() -> Job | None:
    """The job this thread's work belongs to: its innermost ``slaq.job`` block, else the job named by its
    JVM thread's ``slaq.job`` local property, which ``pyspark.InheritableThread`` and
    ``inheritable_thread_target`` (CrossValidator's pool threads) copy from the thread that started them.
    A plain ``threading.Thread`` inherits nothing: its work is outside every job."""
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    runtime = attached_runtime()
    name = None if runtime is None else runtime.thread_job()
    return None if runtime is None or name is None else runtime.job_named(name)


class Job:
    """One training job: ``with slaq.job("lr-0.1") as job: ... job.report(loss)``."""

    def __init__(self, name: str, weight: float = 1.0, target_loss: float | None = None, target_reduction: float | None = None,
                 *, reports: bool | None = None, tuning: Tuning = NOT_TUNING, family: str = ""):
        """``reports``: whether the job will report per-iteration losses, when known before it starts
        (SLAQ knows it for spark.ml fits); ``None``, the default, lets the epoch loop find out. ``tuning``:
        its place in a CrossValidator/TrainValidationSplit (a spark.ml fit's, shown grouped in the UI tab). ``family``:
        the jobs it shares its set-up's cost with (a spark.ml fit's estimator class; the ``order`` policy estimates from them)."""
        name = check_name_size(check_job_name(name))  # bounded where it enters: the tab and the event log hold it
        weight = positive_number(weight, "weight")
        target = Target.checked(target_loss, target_reduction)
        # the job's one history: the runtime's epoch loop schedules on it while SLAQ is enabled
        self._track = LiveJob(name, weight, target, reports, owner=self, tuning=tuning, family=family)
        self.runtime: JobRuntime | None = None
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
        runtime = self.runtime = _attach_quietly()
        if runtime is not None:
            runtime.open(self._track)
            try:
                self._previous = runtime.enter_thread(self.name)  # gives the thread back what it had if it fails part-way
            except BaseException:
                self._release()  # a job that never started is not left open in the loop
                raise
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
            self._track.failed = True
            log.warning("SLAQ: job %s ended with %s: %s; its pool is released", self._track.shown, type(exc).__name__,
                        one_line(str(exc), MAX_ERROR_TEXT))
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


__all__ = ["Job", "JobClosed", "JobRuntime", "NoActiveJob", "attached_runtime", "current_job"]
