"""A run's work split into a trace's phases (:mod:`slaq.sim.trace`), from what Spark's status store kept (pure).

A Spark job belongs to the phase in which it was submitted (after loss ``k-1`` was reported, it is work
towards loss ``k``); the phase's driver time is its wall time outside every one of the job's Spark jobs.
Runs of several configurations are combined into one trace by taking each phase's median across runs, so
the trace is the work, not one run's luck. Times are each task's slot time (launch to end, what holds a
core) plus the Spark jobs' latency, not only the executor run time: a first recording with run time alone
left the replay 38-45% short of the measured times to 90%. The status store is read by
:mod:`slaq.live.status_store`; the lab's sweeps and an application's own recording
(:mod:`slaq.live.trace_out`) both build their traces here.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from slaq.sim.trace import Phase, Stage, Trace, TraceJob, gaps_within, local_within

__all__ = ["RunJob", "RunPhase", "SparkJob", "busy_cores", "combine", "phases_of", "slot_split", "union_length"]


@dataclass(frozen=True)
class SparkJob:
    submitted: float  # seconds, the run's clock
    completed: float
    stages: tuple[Stage, ...]
    first_launch: float  # its first task's launch (``completed`` if it ran none)
    last_end: float  # its last task's end (``submitted`` if it ran none)


def union_length(intervals: Sequence[tuple[float, float]]) -> float:
    """Total length covered by possibly overlapping ``(start, end)`` intervals."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def busy_cores(intervals: Sequence[tuple[float, float]]) -> Callable[[float], int]:
    """``busy(t)``: how many of the tasks in ``intervals`` were running at ``t``."""
    starts, ends = sorted(a for a, _ in intervals), sorted(b for _, b in intervals)
    return lambda t: bisect.bisect_right(starts, t) - bisect.bisect_right(ends, t)


def slot_split(spark_jobs: dict[str, list[SparkJob]], intervals: Sequence[tuple[float, float]]) -> dict[str, float]:
    """Executor slot seconds of the tasks launched from the run's start (time 0) on: inside the recorded
    jobs' Spark jobs and outside them (a CrossValidator's evaluations, for one)."""
    total = sum(end - launch for launch, end in intervals if launch >= 0)
    inside = sum(s.seconds for jobs in spark_jobs.values() for j in jobs if j.submitted >= 0 for s in j.stages)
    return {"in_recorded_jobs": round(inside, 1), "outside": round(max(total - inside, 0.0), 1)}


@dataclass(frozen=True)
class RunPhase:
    """One phase as one run saw it; ``latency`` None when a Spark job of it was submitted with every core
    busy (its wait for a core would be counted as latency)."""
    phase: Phase
    latency: float | None


def phases_of(arrival: float, loss_times: Sequence[float], spark_jobs: Sequence[SparkJob], busy: Callable[[float], int],
              cores: int) -> list[RunPhase]:
    """One phase per loss: its Spark jobs' stages, its driver time (wall time outside them) and its
    Spark jobs' latency (from submission to their first task, if a core was free then, and from their
    last task's end to their completion)."""
    starts = [arrival, *loss_times[:-1]]
    mine: list[list[SparkJob]] = [[] for _ in loss_times]
    for sj in spark_jobs:
        k = bisect.bisect_right(loss_times, sj.submitted)
        if k < len(loss_times):
            mine[k].append(sj)  # submitted after loss k-1: work towards loss k (work after the last loss is left out)
    phases = []
    for k, end in enumerate(loss_times):
        begin = starts[k]
        inside = union_length([(max(j.submitted, begin), min(j.completed, end)) for j in mine[k] if min(j.completed, end) > max(j.submitted, begin)])
        ordered = sorted(mine[k], key=lambda j: j.submitted)
        stages = tuple(s for j in ordered for s in j.stages)
        free = all(busy(j.submitted) < cores for j in ordered)
        latency = sum(max(j.first_launch - j.submitted, 0.0) + max(j.completed - j.last_end, 0.0) for j in ordered)
        phases.append(RunPhase(Phase(max(end - begin - inside, 0.0), stages, gaps=_gaps(begin, end, ordered)), latency if free else None))
    return phases


def _gaps(begin: float, end: float, ordered: Sequence[SparkJob]) -> tuple[float, ...]:
    """The driver time before each stage of a phase's Spark jobs (by submission): before a job's first stage, the time
    since every earlier one ended; 0 before its others. With the time after the last, they add up to its driver time."""
    gaps: list[float] = []
    reach = begin
    for j in ordered:
        if j.stages:
            gaps += [max(min(j.submitted, end) - reach, 0.0)] + [0.0] * (len(j.stages) - 1)
        reach = max(reach, min(j.completed, end))
    return tuple(gaps)


@dataclass(frozen=True)
class RunJob:
    """One job as one live run saw it."""
    name: str
    family: str
    arrival: float
    losses: tuple[float, ...]
    phases: tuple[RunPhase, ...]
    reports: bool | None = None
    weight: float = 1.0


def _median_phase(seen: list[RunPhase]) -> Phase:
    """The phase's medians over the runs; its latency over the runs that measured it free of a wait for a
    core (0 when none did: a wait for a core is the scheduler's to model, not the phase's)."""
    phases = [r.phase for r in seen]
    first = phases[0]
    same = [p for p in phases if [s.tasks for s in p.stages] == [s.tasks for s in first.stages]]
    stages = tuple(Stage(s.tasks, statistics.median(p.stages[i].seconds for p in same), _median_local([p.stages[i] for p in same]))
                   for i, s in enumerate(first.stages))
    known = [r.latency for r in seen if r.latency is not None]
    latency = statistics.median(known) if known else 0.0
    driver = statistics.median(p.driver_s for p in phases)
    gaps = None
    if all(p.gaps is not None for p in same):  # the medians of the parts need not fit in the median of the whole
        gaps = gaps_within([statistics.median(p.gaps[i] for p in same if p.gaps is not None) for i in range(len(stages))], driver)
    return Phase(driver, stages, latency, gaps)


def _median_local(seen: list[Stage]) -> tuple[int, ...]:
    """Per executor, the median over the runs of the stage's tasks run on its cached data (a run without any: 0)."""
    width = max(len(s.local) for s in seen)
    medians = [int(statistics.median(s.local[e] if e < len(s.local) else 0 for s in seen)) for e in range(width)]
    return local_within(medians, seen[0].tasks) if any(medians) else ()


def combine(runs: Sequence[Sequence[RunJob]], cores: int, epoch: float, setting: dict[str, Any],
            measured: dict[str, list[dict[str, Any]]]) -> Trace:
    """One trace from the runs of one workload: the first run's jobs, arrivals and losses, each phase
    the median of the runs that recorded it (stage seconds over the runs whose phase had the same stages).
    A job only later runs had is left out: a CrossValidator's refit is named by its best entry, which runs
    may pick differently, and the replay would run two refits."""
    by_name: dict[str, list[RunJob]] = {j.name: [] for j in runs[0]} if runs else {}
    for run in runs:
        for j in run:
            if j.name in by_name:
                by_name[j.name].append(j)
    jobs = []
    for name, seen in by_name.items():
        ref = seen[0]
        same = [j for j in seen if len(j.phases) == len(ref.phases)]
        phases = tuple(_median_phase([j.phases[k] for j in same]) for k in range(len(ref.phases)))
        jobs.append(TraceJob(name, ref.family, ref.arrival, ref.losses, phases, ref.reports, ref.weight))
    return Trace(tuple(sorted(jobs, key=lambda j: j.arrival)), cores, epoch, setting, measured)
