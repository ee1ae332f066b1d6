"""Python side of the shim's ``SlaqScheduler``: a few coarse py4j calls per epoch, and the pure
parser for what the shim reports back."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkshim.bridge import shim_for

JOB_PROPERTY = "slaq.job"
POOL_PREFIX = "slaq."
_FORBIDDEN = set(";=\t\n\r")


@dataclass(frozen=True)
class Iteration:
    """One reported loss, stamped by the JVM with its time and the job's cumulative core-seconds."""

    job: str
    loss: float
    t: float
    core_seconds: float
    source: str


@dataclass(frozen=True)
class PoolState:
    job: str
    consumed: float  # core-seconds used since the pool was created
    tokens: float  # core-seconds left (negative: debt)
    running: int
    closed: bool


def check_job_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a SLAQ job name must be a non-empty string, got {name!r}")
    if _FORBIDDEN & set(name):
        raise ValueError(f"a SLAQ job name may not contain ';', '=', tabs or newlines: {name!r}")
    return name


def parse_drain(text: str) -> tuple[list[Iteration], dict[str, PoolState]]:
    """Parse the shim's drain() lines (``R job loss t core source`` / ``P job consumed tokens running closed``)."""
    iterations: list[Iteration] = []
    pools: dict[str, PoolState] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if parts[0] == "R" and len(parts) == 6:
            loss = float(parts[2])
            if math.isfinite(loss):
                iterations.append(Iteration(parts[1], loss, float(parts[3]), float(parts[4]), parts[5]))
        elif parts[0] == "P" and len(parts) == 6:
            pools[parts[1]] = PoolState(parts[1], float(parts[2]), float(parts[3]), int(parts[4]), parts[5] == "true")
    return iterations, pools


def format_allocation(alloc: Mapping[str, float]) -> str:
    return ";".join(f"{job}={max(float(cores), 0.0)!r}" for job, cores in alloc.items())


class PoolBridge:
    """The driver JVM's SLAQ pools, as seen from Python."""

    def __init__(self, sc: Any, work_conserving: bool, stale_after: float):
        self._sc = sc
        self._j = shim_for(sc).slaq()
        self._j.configure(bool(work_conserving), float(stale_after))

    def register(self, job: str, weight: float) -> bool:
        return bool(self._j.register(job, float(weight)))

    def close(self, job: str) -> None:
        self._j.close(job)

    def report(self, job: str, loss: float) -> bool:
        return bool(self._j.report(job, float(loss), "python"))

    def drain(self) -> tuple[list[Iteration], dict[str, PoolState]]:
        return parse_drain(self._j.drain())

    def deposit(self, alloc: Mapping[str, float], epoch: float) -> None:
        self._j.deposit(format_allocation(alloc), float(epoch))

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
