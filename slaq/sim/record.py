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

from slaq.sim.trace import Phase, Stage, Trace, TraceJob, local_within, parts_within

__all__ = ["RunJob", "SparkJob", "combine", "free_time", "phases_of", "slot_split", "union_length"]


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


def free_time(intervals: Sequence[tuple[float, float]], cores: int) -> Callable[[float, float], float]:
    """``free(a, b)``: the seconds of ``[a, b]`` in which fewer than ``cores`` of the tasks in ``intervals`` ran
    (a core was free), by the running count's prefix sums: each call is a bisection."""
    deltas: dict[float, int] = {}
    for a, b in intervals:
        deltas[a] = deltas.get(a, 0) + 1
        deltas[b] = deltas.get(b, 0) - 1
    times = sorted(deltas)
    counts: list[int] = []  # tasks running from each step to the next
    free_by: list[float] = []  # free seconds from the first step to each step
    for k, t in enumerate(times):
        free_by.append(free_by[-1] + (t - times[k - 1]) * (counts[-1] < cores) if k else 0.0)
        counts.append((counts[-1] if k else 0) + deltas[t])

    def upto(x: float) -> float:
        k = bisect.bisect_right(times, x) - 1
        if k < 0:
            return x - (times[0] if times else 0.0)  # before every task: all free
        return free_by[k] + (x - times[k]) * (counts[k] < cores)

    return lambda a, b: max(upto(b) - upto(a), 0.0)


def slot_split(spark_jobs: dict[str, list[SparkJob]], intervals: Sequence[tuple[float, float]]) -> dict[str, float]:
    """Executor slot seconds of the tasks launched from the run's start (time 0) on: inside the recorded
    jobs' Spark jobs and outside them (a CrossValidator's evaluations, for one)."""
    total = sum(end - launch for launch, end in intervals if launch >= 0)
    inside = sum(s.seconds for jobs in spark_jobs.values() for j in jobs if j.submitted >= 0 for s in j.stages)
    return {"in_recorded_jobs": round(inside, 1), "outside": round(max(total - inside, 0.0), 1)}


def phases_of(arrival: float, loss_times: Sequence[float], spark_jobs: Sequence[SparkJob], free: Callable[[float, float], float]) -> list[Phase]:
    """One phase per loss: its Spark jobs' stages, its driver time (wall time outside them) and its Spark jobs'
    latency, each placed before the stage that follows it (:func:`_latencies`)."""
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
        latencies, after = _latencies(ordered, free)
        phases.append(Phase(max(end - begin - inside, 0.0), tuple(s for j in ordered for s in j.stages), sum(latencies) + after,
                            _gaps(begin, end, ordered), latencies))
    return phases


def _latencies(ordered: Sequence[SparkJob], free: Callable[[float, float], float]) -> tuple[tuple[float, ...], float]:
    """Each Spark job's latency before each stage of a phase, and after its last: before a job's first stage, its
    wait for its first task while a core was free (a wait for a core is the scheduler's to model, not the phase's)
    and the previous job's time from its last task's end to its completion (a job that ran no task: all of it)."""
    out: list[float] = []
    carry = 0.0
    for j in ordered:
        if j.stages:
            out += [carry + free(j.submitted, j.first_launch)] + [0.0] * (len(j.stages) - 1)
            carry = max(j.completed - j.last_end, 0.0)
        else:
            carry += max(j.completed - j.submitted, 0.0)
    return tuple(out), carry


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
    phases: tuple[Phase, ...]
    reports: bool | None = None
    weight: float = 1.0


def _median_phase(phases: list[Phase]) -> Phase:
    """The phase's medians over the runs: its driver time and latency, and, over the runs whose phase had the same stages,
    each stage's core time and the parts of the driver time and latency before it."""
    first = phases[0]
    same = [p for p in phases if [s.tasks for s in p.stages] == [s.tasks for s in first.stages]]
    stages = tuple(Stage(s.tasks, statistics.median(p.stages[i].seconds for p in same), _median_local([p.stages[i] for p in same]))
                   for i, s in enumerate(first.stages))
    driver, latency = statistics.median(p.driver_s for p in phases), statistics.median(p.latency_s for p in phases)
    return Phase(driver, stages, latency, _median_parts([p.gaps for p in same], driver), _median_parts([p.latencies for p in same], latency))


def _median_parts(seen: list[tuple[float, ...] | None], whole: float) -> tuple[float, ...] | None:
    """Per stage, the median over the runs of the part before it, within ``whole``; None if a run placed none."""
    if not seen or any(p is None for p in seen):
        return None
    known = [p for p in seen if p is not None]
    return parts_within([statistics.median(p[i] for p in known) for i in range(len(known[0]))], whole)


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
