"""Recording a live workload as a ``slaq-trace/1`` (:mod:`slaq.sim.trace`) from what a run already keeps.

Each job's thread tags its Spark jobs with the job's name as job group; after the run, Spark's status store
(kept whether or not the UI runs) gives each Spark job's submission and completion and each of its tasks'
launch and end. A Spark job belongs to the phase in which it was submitted (after loss
``k-1`` was reported, it is work towards loss ``k``); the phase's driver time is its wall time outside
every one of the job's Spark jobs. Runs of several configurations are combined into one trace by taking
each phase's median across runs, so the trace is the work, not one run's luck. Times are each task's slot
time (launch to end, what holds a core) plus the Spark jobs' latency, not only the executor run time: a
first recording with run time alone left the replay 38-45% short of the measured times to 90%.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from slaq.sim.trace import Phase, Stage, Trace, TraceJob
from srlab.slaq_bench.fit_timing import RETAIN_CONF, scala_list, union_length

__all__ = ["RETAIN_CONF", "RunJob", "RunPhase", "SparkJob", "busy_cores", "combine", "phases_of", "slot_split", "spark_jobs_by_group"]


@dataclass(frozen=True)
class SparkJob:
    submitted: float  # seconds, the run's clock
    completed: float
    stages: tuple[Stage, ...]
    first_launch: float  # its first task's launch (``completed`` if it ran none)
    last_end: float  # its last task's end (``submitted`` if it ran none)


@dataclass
class _StageTasks:
    tasks: int = 0
    seconds: float = 0.0
    first: float = float("inf")
    last: float = float("-inf")


_ALL_TASKS = 2**31 - 1


def spark_jobs_by_group(sc: Any, groups: set[str], offset: float,
                        others: list[SparkJob] | None = None) -> tuple[dict[str, list[SparkJob]], list[tuple[float, float]]]:
    """Every finished Spark job of each job group in ``groups``, and every task's ``(launch, end)`` of the
    run (any group), times as epoch seconds minus ``offset``; ``others`` gets every other finished Spark job."""
    store = sc._jsc.sc().statusStore()
    stages: dict[int, _StageTasks] = {}
    intervals: list[tuple[float, float]] = []
    every = store.stageList(None, False, False, sc._gateway.new_array(sc._jvm.double, 0), sc._jvm.java.util.ArrayList())
    for st in scala_list(sc, every):
        cost = stages.setdefault(int(st.stageId()), _StageTasks())
        for task in scala_list(sc, store.taskList(st.stageId(), st.attemptId(), _ALL_TASKS)):
            duration = task.duration()
            if duration.isDefined():
                launch = task.launchTime().getTime() / 1000.0 - offset
                end = launch + float(duration.get()) / 1000.0
                cost.tasks += 1
                cost.seconds += end - launch
                cost.first, cost.last = min(cost.first, launch), max(cost.last, end)
                intervals.append((launch, end))
    out: dict[str, list[SparkJob]] = {g: [] for g in groups}
    for job in scala_list(sc, store.jobsList(None)):
        group = job.jobGroup()
        mine = group.isDefined() and group.get() in groups
        submitted, completed = job.submissionTime(), job.completionTime()
        if not (mine or others is not None) or not (submitted.isDefined() and completed.isDefined()):
            continue
        ran = [stages[i] for i in sorted(int(x) for x in scala_list(sc, job.stageIds())) if i in stages and stages[i].tasks]
        t0, t1 = submitted.get().getTime() / 1000.0 - offset, completed.get().getTime() / 1000.0 - offset
        found = SparkJob(t0, t1, tuple(Stage(c.tasks, c.seconds) for c in ran), min((c.first for c in ran), default=t1),
                         max((c.last for c in ran), default=t0))
        if mine:
            out[group.get()].append(found)
        elif others is not None:
            others.append(found)
    return out, intervals


def busy_cores(intervals: Sequence[tuple[float, float]]) -> Callable[[float], int]:
    """``busy(t)``: how many of the tasks in ``intervals`` were running at ``t`` (pure)."""
    starts, ends = sorted(a for a, _ in intervals), sorted(b for _, b in intervals)
    return lambda t: bisect.bisect_right(starts, t) - bisect.bisect_right(ends, t)


def slot_split(spark_jobs: dict[str, list[SparkJob]], intervals: Sequence[tuple[float, float]]) -> dict[str, float]:
    """Executor slot seconds of the tasks launched from the run's start (time 0) on (pure): inside the recorded
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
    """One phase per loss (pure): its Spark jobs' stages, its driver time (wall time outside them) and its
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
        phases.append(RunPhase(Phase(max(end - begin - inside, 0.0), stages), latency if free else None))
    return phases


@dataclass(frozen=True)
class RunJob:
    """One job as one live run saw it."""
    name: str
    family: str
    arrival: float
    losses: tuple[float, ...]
    phases: tuple[RunPhase, ...]
    reports: bool | None = None


def _median_phase(seen: list[RunPhase]) -> Phase:
    """The phase's medians over the runs; its latency over the runs that measured it free of a wait for a
    core (0 when none did: a wait for a core is the scheduler's to model, not the phase's)."""
    phases = [r.phase for r in seen]
    first = phases[0]
    same = [p for p in phases if [s.tasks for s in p.stages] == [s.tasks for s in first.stages]]
    stages = tuple(Stage(s.tasks, statistics.median(p.stages[i].seconds for p in same)) for i, s in enumerate(first.stages))
    known = [r.latency for r in seen if r.latency is not None]
    latency = statistics.median(known) if known else 0.0
    return Phase(statistics.median(p.driver_s for p in phases), stages, latency)


def combine(runs: Sequence[Sequence[RunJob]], cores: int, epoch: float, setting: dict[str, Any],
            measured: dict[str, list[dict[str, Any]]]) -> Trace:
    """One trace from the runs of one workload (pure): the first run's jobs, arrivals and losses, each phase
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
        jobs.append(TraceJob(name, ref.family, ref.arrival, ref.losses, phases, ref.reports))
    return Trace(tuple(sorted(jobs, key=lambda j: j.arrival)), cores, epoch, setting, measured)
