"""An application's own run as a ``slaq-trace/1`` (:mod:`slaq.sim.trace`): one measured run of the configuration
that ran, cut to what a trace may hold (pure; :mod:`slaq.live.trace_out` reads the run and writes the file).

A SLAQ job's Spark jobs are the ones whose stages ran in its pool (``POOL_PREFIX`` + its name); a name used
again after its job ended names the later job's Spark jobs from that job's arrival on. Every other Spark
job from the first arrival on is a Spark job outside every job. A job that reported fewer than two losses
is kept as a silent job (:attr:`~slaq.sim.trace.TraceJob.silent`): one phase, from its arrival to its last Spark
job's end, and no loss, so the replay gives it its cores as the run did. What a trace may not hold is cut, each
cut said in one note: the run's later jobs past the replay's bounds, a job's later losses, a phase's later
stages; a stage's tasks, a time past a day are clipped to the bound.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from slaq.messages import POOL_PREFIX
from slaq.metrics import NINETY, time_to_key, time_to_reduction
from slaq.names import check_name_size
from slaq.sim import trace as bounds
from slaq.sim.record import RunJob, SparkJob, busy_cores, combine, phases_of
from slaq.sim.trace import Phase, Stage, Trace, TraceJob, local_within, outside_job, to_dict
from slaq.sim.trace_json import MAX_FILE_BYTES

__all__ = ["RanJob", "app_trace", "measured_run"]


@dataclass(frozen=True)
class RanJob:
    """A SLAQ job as the run's registry kept it, times in seconds after the run's first arrival."""
    name: str
    arrival: float
    times: tuple[float, ...]  # when each loss was reported
    losses: tuple[float, ...]
    weight: float = 1.0
    reports: bool | None = None


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'s' * (n != 1)}"


def _unique(jobs: Sequence[RanJob]) -> list[tuple[RanJob, str]]:
    """Each job with the name the trace gives it: a name used again gets `` (2)``, `` (3)``... (a job's name is its identity in a replay)."""
    seen: dict[str, int] = {}
    out = []
    for j in jobs:
        seen[j.name] = seen.get(j.name, 0) + 1
        out.append((j, j.name if seen[j.name] == 1 else f"{j.name} ({seen[j.name]})"))
    return out


def _clip_phase(p: Phase, cut: dict[str, int]) -> Phase:
    """``p`` within the bounds of one phase: its first :data:`~slaq.sim.trace.MAX_STAGES` stages, each's tasks and every time clipped."""
    if len(p.stages) > bounds.MAX_STAGES:
        cut["stages"] += len(p.stages) - bounds.MAX_STAGES
    stages = tuple(Stage(min(s.tasks, bounds.MAX_TASKS), min(s.seconds, bounds.MAX_SECONDS), local_within(s.local, min(s.tasks, bounds.MAX_TASKS)))
                   for s in p.stages[: bounds.MAX_STAGES])
    cut["clipped"] += sum(s.tasks > bounds.MAX_TASKS or s.seconds > bounds.MAX_SECONDS for s in p.stages[: bounds.MAX_STAGES])
    driver = min(p.driver_s, bounds.MAX_SECONDS)
    gaps = None if p.gaps is None else bounds.gaps_within(p.gaps[: bounds.MAX_STAGES], driver)
    return Phase(driver, stages, min(p.latency_s, bounds.MAX_SECONDS), gaps)


def measured_run(jobs: Sequence[RanJob]) -> dict[str, object] | None:
    """The run's figures as a trace's ``measured`` holds one run: each job's time to 90% from its arrival, their
    mean, and the makespan from the first arrival to the last loss (where a replay ends); None when no job's loss fell."""
    per_job = {j.name: time_to_reduction(j.times, j.losses, NINETY) for j in jobs}
    times = {name: None if t is None else round(min(max(t - j.arrival, 0.0), bounds.MAX_SECONDS), 3)
             for (name, t), j in zip(per_job.items(), jobs)}
    known = [t for t in times.values() if t is not None]
    if not known:
        return None
    makespan = min(max(j.times[-1] for j in jobs), bounds.MAX_SECONDS)
    return {"mean_time_to_90pct_s": round(statistics.fmean(known), 3), "makespan_s": round(makespan, 3), time_to_key(NINETY): times}


def app_trace(jobs: Sequence[RanJob], spark_jobs: Sequence[tuple[str | None, SparkJob]], tasks: Sequence[tuple[float, float]],
              cores: int, epoch: float, config: str, setting: dict[str, object]) -> tuple[Trace, list[str]]:
    """The trace of one run of ``config`` (``slaq`` or ``fair``) on ``cores`` executor cores, and one note per cut.
    ``spark_jobs``: each finished Spark job with its scheduling pool; ``tasks``: every task's ``(launch, end)``."""
    cut = {"stages": 0, "clipped": 0}
    notes: list[str] = []
    ordered = sorted(jobs, key=lambda j: j.arrival)
    reporting: list[tuple[RanJob, str, int]] = []
    silent: dict[int, str] = {}
    unnamed = 0
    for k, (j, name) in enumerate(_unique(ordered)):
        try:
            check_name_size(name)
        except ValueError:
            unnamed += 1
            continue
        if not (len(j.losses) >= 2 and len(j.times) == len(j.losses) and all(abs(v) <= bounds.MAX_LOSS for v in j.losses)):
            silent[k] = name
            continue
        if len(j.losses) > bounds.MAX_PHASES:
            notes.append(f"job {name!r}: its losses after the first {bounds.MAX_PHASES:,}")
            j = replace(j, times=j.times[: bounds.MAX_PHASES], losses=j.losses[: bounds.MAX_PHASES])
        reporting.append((j, name, k))
    if unnamed:
        notes.append(f"{_count(unnamed, 'job')} whose name is longer than a trace holds, kept as Spark jobs outside every job")
    if lone := sum(bool(ordered[k].losses) for k in silent):
        notes.append(f"the losses of {_count(lone, 'job')} with one loss or a loss past ±{bounds.MAX_LOSS:g} (kept as reporting none)")
    # a Spark job in a job's pool belongs to the latest job of that name that had arrived when it was submitted
    arrivals: dict[str, list[tuple[float, int]]] = {}
    for k, j in enumerate(ordered):
        arrivals.setdefault(POOL_PREFIX + j.name, []).append((j.arrival, k))
    owners = {*silent, *(k for _, _, k in reporting)}
    mine: dict[int, list[SparkJob]] = {}
    outside: list[SparkJob] = []
    for pool, sj in spark_jobs:
        owner = next((k for at, k in reversed(arrivals.get(pool or "", [])) if at <= sj.submitted), None)
        if owner not in owners:
            if sj.submitted >= 0 and sj.stages:
                outside.append(sj)
        else:
            mine.setdefault(owner, []).append(sj)
    busy = busy_cores(tasks)
    runs = [RunJob(name, "", j.arrival, j.losses, tuple(phases_of(j.arrival, j.times, mine.get(k, []), busy, cores)), j.reports, j.weight)
            for j, name, k in reporting]
    runs += [RunJob(name, "", ordered[k].arrival, (), tuple(phases_of(ordered[k].arrival, [max(sj.completed for sj in mine[k])], mine[k], busy, cores)),
                    ordered[k].reports, ordered[k].weight) for k, name in silent.items() if mine.get(k)]
    recorded = {name: replace(j, name=name) for j, name, _ in reporting}

    def build(kept: Sequence[TraceJob]) -> Trace:
        figures = measured_run([recorded[t.name] for t in kept if not t.outside and not t.silent])
        return Trace(tuple(t for t in kept if not t.outside), cores, epoch, setting, {config: [figures]} if figures else {}, "",
                     tuple(t for t in kept if t.outside))

    traced = [replace(t, phases=tuple(_clip_phase(p, cut) for p in t.phases)) for t in combine([runs], cores, epoch, {}, {}).jobs]
    spares = [outside_job(k, sj.submitted, _clip_phase(Phase(0.0, sj.stages), cut).stages) for k, sj in enumerate(sorted(outside, key=lambda s: s.submitted))]
    kept = _within_bounds(sorted([*traced, *spares], key=lambda t: t.arrival), epoch, notes)
    if (held := bounds.held_work(kept)) > bounds.MAX_HELD_WORK:
        notes.append(f"which executor's cached data each task read ({len(kept):,} jobs x {bounds.events_of(kept):,} phases and tasks x "
                     f"{max(bounds.executor_counts(kept))} executors = {held:,}, more than a replay holding tasks for "
                     f"executors runs: {bounds.MAX_HELD_WORK:,})")
        kept = [replace(t, phases=tuple(replace(p, stages=tuple(replace(s, local=()) for s in p.stages)) for p in t.phases)) for t in kept]
    if cut["stages"]:
        notes.append(f"{_count(cut['stages'], 'stage')} past a phase's first {bounds.MAX_STAGES:,}")
    if cut["clipped"]:
        notes.append(f"{_count(cut['clipped'], 'stage')} clipped to {bounds.MAX_TASKS:,} tasks or {bounds.MAX_SECONDS:,.0f} s")
    trace = _within_size(kept, build, notes)
    if not trace.measured:
        notes.append("no measured run: no job's loss fell (slaq simulate --project still projects the trace, --check has nothing to compare)")
    return trace, notes


def _within_bounds(items: list[TraceJob], epoch: float, notes: list[str]) -> list[TraceJob]:
    """The run's first jobs (and Spark jobs outside them), by arrival, that a replay runs
    (:func:`slaq.sim.trace.check_workload`'s bounds): the rest is cut, in one note."""
    kept: list[TraceJob] = []
    events = work = 0.0
    for t in items:
        events += len(t.phases) + sum(s.tasks for p in t.phases for s in p.stages)
        work += sum(p.waits + p.executor_s for p in t.phases)
        if (len(kept) >= bounds.MAX_JOBS or events > bounds.MAX_EVENTS or t.arrival > bounds.MAX_SECONDS
                or (t.arrival + work) / epoch > bounds.MAX_EPOCHS):
            notes.append(f"the run after {t.arrival:,.1f} s: {_count(len(items) - len(kept), 'job')} (Spark jobs outside every job "
                         f"counted) past a replay's bounds ({bounds.MAX_JOBS:,} jobs, {bounds.MAX_EVENTS:,} phases and tasks, "
                         f"{bounds.MAX_EPOCHS:,} epochs, a day)")
            break
        kept.append(t)
    return kept


def _size(trace: Trace) -> int:
    return len(json.dumps(to_dict(trace), separators=(",", ":")))


def _within_size(kept: list[TraceJob], build: Callable[[Sequence[TraceJob]], Trace], notes: list[str]) -> Trace:
    """The trace of the first of ``kept`` whose JSON fits :data:`~slaq.sim.trace_json.MAX_FILE_BYTES`; a cut is one note."""
    trace = build(kept)
    size = _size(trace)
    if size <= MAX_FILE_BYTES:
        return trace
    keep = int(len(kept) * MAX_FILE_BYTES / size)
    while keep > 1:
        trace = build(kept[:keep])
        if _size(trace) <= MAX_FILE_BYTES:
            break
        keep = keep * 9 // 10
    notes.append(f"the run after {kept[keep].arrival:,.1f} s: {_count(len(kept) - keep, 'job')} past a trace's "
                 f"{MAX_FILE_BYTES // 2**20} MiB of JSON")
    return trace
