"""Python side of the shim's ``SlaqPools``: a few coarse py4j calls per epoch, in the typed messages
of :mod:`sparkshim.messages` (``iteration`` and ``pool_state`` from the JVM, ``allocation`` to it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkshim import messages
from sparkshim.bridge import shim_for

JOB_PROPERTY = "slaq.job"
POOL_PREFIX = "slaq."
_FORBIDDEN = set("\t\n\r")

Iteration = messages.Iteration  # one reported loss: job, loss, t, core_seconds, source (stamped by the JVM)
PoolState = messages.PoolState  # one pool: job, consumed, tokens (negative: debt), running, closed


def check_job_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a SLAQ job name must be a non-empty string, got {name!r}")
    if _FORBIDDEN & set(name):
        raise ValueError(f"a SLAQ job name may not contain tabs or newlines: {name!r}")
    return name


def split_drain(text: str) -> tuple[list[Any], dict[str, Any]]:
    """The shim's drain(): its ``iteration`` messages in order, and the latest ``pool_state`` per job."""
    iterations: list[Any] = []
    pools: dict[str, Any] = {}
    for m in messages.decode(text):
        if isinstance(m, Iteration):
            iterations.append(m)
        elif isinstance(m, PoolState):
            pools[m.job] = m
    return iterations, pools


def allocation_message(alloc: Mapping[str, float], epoch: float) -> str:
    return messages.encode(messages.Allocation(float(epoch), {job: max(float(c), 0.0) for job, c in alloc.items()}))


class PoolBridge:
    """The driver JVM's SLAQ pools, as seen from Python. Building one changes nothing in the JVM
    (beyond loading the shim); :meth:`configure` sets the mode."""

    def __init__(self, sc: Any):
        self._sc = sc
        self._j = shim_for(sc).slaq()

    def configure(self, work_conserving: bool, stale_after: float) -> None:
        """Work-conserving or strict, and after how many seconds without an allocation the pools open."""
        self._j.configure(bool(work_conserving), float(stale_after))

    def register(self, job: str, weight: float) -> bool:
        return bool(self._j.register(job, float(weight)))

    def close(self, job: str) -> None:
        self._j.close(job)

    def report(self, job: str, loss: float) -> bool:
        return bool(self._j.report(job, float(loss), "python"))

    def drain(self) -> tuple[list[Any], dict[str, Any]]:
        return split_drain(self._j.drain())

    def deposit(self, alloc: Mapping[str, float], epoch: float) -> None:
        self._j.deposit(allocation_message(alloc, epoch))

    def publish(self, status: Any) -> None:
        """One epoch's ``epoch_status`` message to the JVM (the SLAQ UI tab and the driver log's line)."""
        self._j.publish(messages.encode(status))

    def status_report(self) -> Any:
        """What the SLAQ UI tab shows, as a ``status_report`` message."""
        return messages.decode(self._j.statusReport())

    def open_all(self, reason: str) -> None:
        self._j.openAll(reason)

    def resume(self) -> None:
        self._j.resume()

    def is_open(self) -> bool:
        return bool(self._j.isOpenNow())

    def capacity(self) -> float:
        return float(self._j.capacity())

    def enter(self, job: str) -> tuple[str | None, str | None]:
        """Route the calling thread's Spark work to ``job``'s pool; returns the previous properties."""
        previous = (self._sc.getLocalProperty("spark.scheduler.pool"), self._sc.getLocalProperty(JOB_PROPERTY))
        self.set_thread(POOL_PREFIX + job, job)
        return previous

    def set_thread(self, pool: str | None, job: str | None) -> None:
        self._sc.setLocalProperty("spark.scheduler.pool", pool)
        self._sc.setLocalProperty(JOB_PROPERTY, job)
