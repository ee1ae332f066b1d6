"""Python side of the shim's ``SlaqPools``: a few coarse py4j calls per epoch, in the typed messages
of :mod:`slaq.messages` (``iteration`` and ``pool_state`` from the JVM, ``allocation`` to it)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from slaq import messages
from slaq.product import PRODUCT
from sparkshim.bridge import shim_for

JOB_PROPERTY, POOL_PREFIX = messages.JOB_PROPERTY, messages.POOL_PREFIX  # shared with the JVM through slaq/messages.json
# Spark's own local properties behind SparkContext.setJobGroup / setJobDescription
JOB_GROUP_PROPERTY, JOB_DESCRIPTION_PROPERTY = "spark.jobGroup.id", "spark.job.description"
JOB_GROUP_PREFIX = "slaq:"  # a SLAQ job's Spark jobs are in job group "slaq:<name>" unless the application set one
PYTHON_SOURCE = "python"  # the source of losses reported from Python; the JVM stamps its captured ones "mllib"

Iteration = messages.Iteration  # one reported loss: job, loss, t, core_seconds, source (stamped by the JVM)
PoolState = messages.PoolState  # one pool: job, consumed, tokens (negative: debt), running, closed
Drained = tuple[list[Iteration], dict[str, PoolState]]


def split_drain(text: str) -> Drained:
    """The shim's drain(): its ``iteration`` messages in order, and the latest ``pool_state`` per job."""
    iterations: list[Iteration] = []
    pools: dict[str, PoolState] = {}
    for m in messages.decode(text):
        if isinstance(m, Iteration):
            iterations.append(m)
        elif isinstance(m, PoolState):
            pools[m.job] = m
    return iterations, pools


def allocation_message(alloc: Mapping[str, float], seconds: float, new_epoch: bool = True, ranks: Mapping[str, float] | None = None) -> str:
    """``ranks``: the order the pools are offered cores, least first (None or empty: by their tokens)."""
    return messages.encode(messages.Allocation(float(seconds), bool(new_epoch), {job: max(float(c), 0.0) for job, c in alloc.items()},
                                               {job: float(r) for job, r in (ranks or {}).items() if math.isfinite(r)}))


class PoolBridge:
    """The driver JVM's SLAQ pools, as seen from Python. Building one changes nothing in the JVM
    (beyond loading the shim); :meth:`configure` sets the mode."""

    def __init__(self, sc: Any):
        self._j = shim_for(sc).component(PRODUCT.shim_component)

    def configure(self, work_conserving: bool, stale_after: float) -> None:
        """Work-conserving or strict, and after how many seconds without an allocation the pools open."""
        self._j.configure(bool(work_conserving), float(stale_after))

    def register(self, job: str, weight: float) -> bool:
        return bool(self._j.register(job, float(weight)))

    def close(self, job: str) -> None:
        self._j.close(job)

    def report(self, job: str, loss: float) -> bool:
        return bool(self._j.report(job, float(loss), PYTHON_SOURCE))

    def drain(self) -> Drained:
        return split_drain(self._j.drain())

    def drain_losses(self) -> list[Iteration]:
        """The ``iteration`` messages reported since the last drain, without the pools' states (a job's sync and close)."""
        return split_drain(self._j.drainLosses())[0]

    def connect_fits(self, on: bool) -> bool:
        """Make each spark.ml fit a Spark Connect client submits a job (False: Connect is not there)."""
        return bool(self._j.connectFits(bool(on)))

    def poll_connect_fits(self) -> list[messages.ConnectFit]:
        """The ``connect_fit`` messages (Connect fits that became jobs, or ended) since the last call, in order."""
        return [m for m in messages.decode(self._j.pollConnectFits()) if isinstance(m, messages.ConnectFit)]

    def deposit(self, alloc: Mapping[str, float], seconds: float, new_epoch: bool = True, ranks: Mapping[str, float] | None = None) -> None:
        """Cores per job for the next ``seconds``: a new epoch's, or (``new_epoch`` False) the rest of the current one's;
        with ``ranks``, the pools are offered cores in their order instead of their tokens'."""
        self._j.deposit(allocation_message(alloc, seconds, new_epoch, ranks))

    def publish(self, status: messages.EpochStatus) -> None:
        """One epoch's ``epoch_status`` message to the JVM (the SLAQ UI tab and the driver log's line)."""
        self._j.publish(messages.encode(status))

    def status_report(self) -> messages.StatusReport:
        """What the SLAQ UI tab shows, as a ``status_report`` message."""
        report = messages.decode(self._j.statusReport())
        if not isinstance(report, messages.StatusReport):
            raise messages.MessageError(f"expected a status_report, got {type(report).__name__}")
        return report

    def open_all(self, reason: str) -> None:
        """Every pool opens because something failed (a WARN in the driver log says ``reason``)."""
        self._j.openAll(reason)

    def detach(self) -> None:
        """Every pool opens because SLAQ is switched off (an INFO line: nothing failed)."""
        self._j.detach()

    def resume(self) -> None:
        self._j.resume()

    def is_open(self) -> bool:
        return bool(self._j.isOpenNow())

    def capacity(self) -> float:
        return float(self._j.capacity())

    def clock_offset(self) -> float:
        """What to add to an ``iteration``'s ``t`` to get ``time.monotonic()`` (to about a py4j round trip)."""
        before = time.monotonic()
        jvm = float(self._j.now())
        return (before + time.monotonic()) / 2 - jvm


def enter_thread(sc: Any, job: str, pool: str | None) -> Any:
    """Put the calling thread's JVM local properties in ``job`` (and ``pool``, when SLAQ enforces).

    Returns the thread's previous properties object (:func:`own_properties`). If a call fails part-way, the thread
    gets that object back before the error propagates: a failed py4j call drops the thread's connection, and its next
    call runs on another JVM thread, which has none of the properties the application set.
    """
    previous = own_properties(sc)
    try:
        if pool is not None:
            sc.setLocalProperty("spark.scheduler.pool", pool)
        sc.setLocalProperty(JOB_PROPERTY, job)
        # Spark's Jobs and Stages pages then name the SLAQ job (and sc.statusTracker() finds its Spark jobs by group);
        # a group or description the application set itself is left as it is.
        for key, value in ((JOB_GROUP_PROPERTY, JOB_GROUP_PREFIX + job), (JOB_DESCRIPTION_PROPERTY, f"SLAQ job {job}")):
            if not sc.getLocalProperty(key):
                sc.setLocalProperty(key, value)
    except BaseException:
        restore_thread(sc, previous)
        raise
    return previous


def own_properties(sc: Any) -> Any:
    """Give the calling thread a copy of its JVM local properties; returns the object it had.

    pyspark's ``inheritable_thread_target`` hands one ``Properties`` object to every thread of a pool
    (CrossValidator's), so a key set in place would be set for the sibling threads too: their Spark jobs
    would run in this thread's job, pool and job group."""
    jsc = sc._jsc.sc()
    previous = jsc.getLocalProperties()
    jsc.setLocalProperties(previous.clone())
    return previous


def restore_thread(sc: Any, previous: Any) -> None:
    """Give the calling thread back the properties object it had before :func:`own_properties`."""
    sc._jsc.sc().setLocalProperties(previous)


def thread_job(sc: Any) -> str | None:
    """The SLAQ job the calling thread's JVM local properties name (set by a ``slaq.job`` block and
    inherited by ``pyspark.InheritableThread``/``inheritable_thread_target``), or None."""
    return sc.getLocalProperty(JOB_PROPERTY) or None
