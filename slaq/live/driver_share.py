"""The driver's share of a job's iterations, and what SLAQ does when the driver is the bottleneck.

An iteration's wall time splits into the time the job had a stage in Spark's scheduler (its tasks
queued or running: the executor side, measured by the job's pool in the JVM) and the rest, when only
the driver worked for it (spark.ml's driver-side aggregation, optimizer steps, Python, job set-up).
When the driver takes most of every iteration, executor cores cannot speed the job up (a
``CrossValidator`` fit at default sizes spends about 1.5 s of driver time per iteration against
0.44 s of executor time): such a *driver-bound* job gets no more cores than its executors actually
used, and the rest go to jobs that can use them. Pure functions over per-iteration samples.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from slaq.names import shown
from sparkshim.wording import counted

WINDOW = 5  # iterations the split is measured over (the latest ones)
MIN_ITERATIONS = 3  # iterations measured before a job can be called driver-bound
DRIVER_BOUND = 0.6  # driver fraction of iteration wall time above which a job is driver-bound
HEADROOM = 1.5  # a driver-bound job's cap: this many times the cores its executors used on average


@dataclass(frozen=True)
class IterationSplit:
    """One iteration: its wall seconds, the seconds the job had a stage in the scheduler, and the
    core-seconds its tasks used."""

    wall: float
    stage: float
    core_seconds: float


@dataclass
class DriverShare:
    """A job's latest :data:`WINDOW` iteration splits, and their figures worked out once per new sample: the
    allocator reads them for every open job at every epoch, and most jobs add no sample between two epochs."""

    samples: deque[IterationSplit] = field(default_factory=lambda: deque(maxlen=WINDOW))
    added: int = 0  # samples ever added: what identifies the window's state
    figures: tuple[int, float | None, float] = (-1, None, 0.0)  # (added when worked out, fraction, executor cores)

    def add(self, wall: float, stage: float, core_seconds: float) -> None:
        if wall > 0:
            self.samples.append(IterationSplit(wall, min(max(stage, 0.0), wall), max(core_seconds, 0.0)))
            self.added += 1

    def _figures(self) -> tuple[int, float | None, float]:
        added, figures = self.added, self.figures  # read first: a sample added meanwhile makes the next read recompute
        if figures[0] != added:
            figures = self.figures = (added, driver_fraction(self.samples), executor_cores(self.samples))
        return figures

    def fraction(self) -> float | None:
        return self._figures()[1]

    def executor_cores(self) -> float:
        return self._figures()[2]


def driver_fraction(samples: Iterable[IterationSplit]) -> float | None:
    """The share of the iterations' wall time with no stage of the job in the scheduler; None before
    :data:`MIN_ITERATIONS` iterations were measured."""
    rows = list(samples)
    wall = sum(s.wall for s in rows)
    if len(rows) < MIN_ITERATIONS or wall <= 0:
        return None
    return max(0.0, 1.0 - sum(s.stage for s in rows) / wall)


def executor_cores(samples: Iterable[IterationSplit]) -> float:
    """The cores the job's tasks used on average over the iterations' wall time."""
    rows = list(samples)
    wall = sum(s.wall for s in rows)
    return sum(s.core_seconds for s in rows) / wall if wall > 0 else 0.0


def driver_bound(fraction: float | None, threshold: float = DRIVER_BOUND) -> bool:
    return fraction is not None and fraction > threshold


def cap_driver_bound(alloc: Mapping[str, float], caps: Mapping[str, float]) -> dict[str, float]:
    """``alloc`` with each job in ``caps`` held to its cap, and the cores that frees given to the other
    jobs of ``alloc`` in proportion to what they already get (to none when there are none: in
    work-conserving mode idle cores are used anyway). Total cores never change upward."""
    out = dict(alloc)
    freed = 0.0
    for job, cap in caps.items():
        if job in out and out[job] > cap:
            freed += out[job] - cap
            out[job] = cap
    others = {job: c for job, c in out.items() if job not in caps}
    total = sum(others.values())
    if freed > 0 and others:
        for job, c in others.items():
            out[job] = c + freed * (c / total if total > 0 else 1.0 / len(others))
    return out


def driver_caps(shares: Mapping[str, DriverShare], minimum: float) -> dict[str, tuple[float, float]]:
    """Per driver-bound job: ``(driver fraction, cap)``, the cap :data:`HEADROOM` times the cores its
    executors used, never below ``minimum`` (the policy's minimum share)."""
    out = {}
    for job, share in shares.items():
        fraction = share.fraction()
        if driver_bound(fraction):
            assert fraction is not None
            out[job] = (fraction, max(HEADROOM * share.executor_cores(), minimum))
    return out


def driver_bound_warning(found: Mapping[str, tuple[float, float]]) -> str:
    """The one WARN line per application: the driver-bound jobs and their measured split."""
    parts = [f"{shown(job)} (driver {fraction:.0%} of each iteration, executors {1 - fraction:.0%}; capped at {counted(cap, 'core', f'{cap:.2g}')})"
             for job, (fraction, cap) in sorted(found.items())]
    return ("SLAQ: the driver is the bottleneck of " + ", ".join(parts) + ": more executor cores would not speed these up, "
            "so each gets what its executors use and the other jobs the rest (said once per application)")
