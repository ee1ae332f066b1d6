"""The user API: ``slaq.attach``, ``slaq.job``, ``job.report``/``slaq.report_loss``, ``job.should_stop``.

SLAQ is switched on by ``slaq.attach`` or by ``spark.slaq.enabled=true``; while it is off every call
still validates its input and keeps the job's losses (so ``should_stop`` works), but nothing touches
Spark's scheduler: the app runs as plain Spark.
The scheduling itself is the :class:`~slaq.runtime.SlaqRuntime` of the job's SparkContext; a job's handle
is :class:`slaq.jobs.Job`.
"""

from __future__ import annotations

import threading
from typing import Any

from slaq.jobs import Job, JobClosed, NoActiveJob, current_job
from slaq.messages import EpochStatus
from slaq.runtime import SlaqRuntime, runtimes
from slaq.stats.history import InvalidReport, real_number


def attach(spark: Any = None, explicit: bool = True) -> SlaqRuntime:
    """SLAQ for ``spark`` (a SparkSession or SparkContext; default: the active one), configured from
    its ``spark.slaq.*`` confs. Calling it switches SLAQ on unless ``spark.slaq.enabled=false``
    (``explicit=False``, the start-up hook's and ``slaq.job``'s call, attaches only what the confs
    switch on). Idempotent; starts a runtime that was stopped again. Always a runtime: when SLAQ
    cannot run (no active context, FIFO scheduling, the conf says false) ``.enabled`` is False,
    ``.reason`` says why and an explicit call logs that in one WARN line."""
    return runtimes.attach(spark, explicit=explicit)


def detach(spark: Any = None) -> None:
    """Stop SLAQ for ``spark`` (default: the active context): the loop and the spark.ml hook stop and
    the shim opens the pools (fair sharing). The next ``slaq.job`` or ``slaq.attach`` attaches anew."""
    runtimes.detach(spark)


def latest_status() -> EpochStatus | None:
    """The latest ``epoch_status`` of the active context's SLAQ runtime (None while disabled or before its first epoch)."""
    runtime = runtimes.current()
    return None if runtime is None or runtime.loop is None else runtime.loop.status


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


__all__ = ["InvalidReport", "Job", "JobClosed", "NoActiveJob", "attach", "current_job", "detach", "job", "latest_status", "report_loss"]
