"""Passive timing of spark.ml fits, the same in every configuration (SLAQ on or off).

Two sources, neither of which touches scheduling:

* **When each iteration ended**: breeze logs one INFO line per L-BFGS/OWLQN iteration on the thread
  that called ``fit()``. :class:`IterationClock` adds a log4j2 file appender on its logger whose layout
  writes only the event's wall-clock millis, the fit's name (a log4j ThreadContext entry the fit's thread
  sets, see :func:`tag_thread`) and the message. The objective values are taken from the fitted model's
  ``objectiveHistory``, not from these lines.
* **Where a fit's time went**: every Spark job a fit submits carries the fit's name as its job group;
  after the run, :func:`job_split` reads Spark's own status store (kept whether or not the UI runs)
  for those jobs' intervals, their stages' summed executor run time and task counts.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from slaq.enforce.pools import own_properties, restore_thread
from slaq.live.status_store import ALL_TASKS, every_stage, scala_list
from slaq.messages import BREEZE_ITERATION_LINE, BREEZE_LOGGER
from slaq.sim.record import union_length

FIT_KEY = "srlab.slaq_bench.fit"  # log4j ThreadContext key naming the fit a thread runs
# breeze's FirstOrderMinimizer logs a line starting with BREEZE_ITERATION_LINE once per finished iteration
# on the BREEZE_LOGGER hierarchy: the same names SLAQ's loss capture uses (slaq/messages.json)
_APPENDER = "slaq-bench-iteration-clock"


class IterationClock:
    """A log4j2 appender on ``breeze.optimize`` that writes ``millis<TAB>fit<TAB>message`` lines to a file.

    If a ``breeze.optimize`` logger config exists, the appender joins it; otherwise it gets its own
    non-additive INFO config, so nothing reaches the console.
    """

    def __init__(self, sc: Any):
        self._sc = sc
        log4j = sc._jvm.org.apache.logging.log4j
        self._log4j = log4j
        fd, self.path = tempfile.mkstemp(prefix="slaq-bench-iterations-", suffix=".log")
        os.close(fd)
        ctx = log4j.LogManager.getContext(False)
        config = ctx.getConfiguration()
        layout = log4j.core.layout.PatternLayout.newBuilder().withPattern(f"%d{{UNIX_MILLIS}}\t%X{{{FIT_KEY}}}\t%m%n").build()
        self._appender = (log4j.core.appender.FileAppender.newBuilder().withFileName(self.path).setName(_APPENDER)
                          .setLayout(layout).setImmediateFlush(True).build())
        self._appender.start()
        config.addAppender(self._appender)
        existing = config.getLoggerConfig(BREEZE_LOGGER)
        if existing.getName() == BREEZE_LOGGER:
            existing.addAppender(self._appender, log4j.Level.INFO, None)
            if not existing.getLevel().isLessSpecificThan(log4j.Level.INFO):
                existing.setLevel(log4j.Level.INFO)
            self._own_config = False
        else:
            mine = log4j.core.config.LoggerConfig(BREEZE_LOGGER, log4j.Level.INFO, False)
            mine.addAppender(self._appender, log4j.Level.INFO, None)
            config.addLogger(BREEZE_LOGGER, mine)
            self._own_config = True
        ctx.updateLoggers()
        self._ctx = ctx

    def iteration_times(self) -> dict[str, list[float]]:
        """Seconds since the epoch at which each tagged fit's iterations ended, per fit name."""
        out: dict[str, list[float]] = defaultdict(list)
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t", 2)
                if len(parts) == 3 and parts[1] and parts[2].startswith(BREEZE_ITERATION_LINE):
                    out[parts[1]].append(int(parts[0]) / 1000.0)
        return dict(out)

    def close(self) -> None:
        """Detach the appender (and its logger config, if it added one) and delete the file."""
        config = self._ctx.getConfiguration()
        if self._own_config:
            config.removeLogger(BREEZE_LOGGER)
        else:
            config.getLoggerConfig(BREEZE_LOGGER).removeAppender(_APPENDER)
        self._ctx.updateLoggers()
        self._appender.stop()
        os.unlink(self.path)


def tag_thread(sc: Any, fit: str) -> tuple[Any, str | None]:
    """Name the calling thread's fit for both sources (ThreadContext entry and Spark job group). The group is
    set on the thread's own copy of its local properties (:func:`slaq.enforce.pools.own_properties`): the
    threads of a CrossValidator share one object, and a group set in place named its sibling fits' Spark
    jobs too. Returns what :func:`restore_tag` puts back."""
    thread_context = sc._jvm.org.apache.logging.log4j.ThreadContext
    previous = (own_properties(sc), thread_context.get(FIT_KEY))
    sc.setLocalProperty("spark.jobGroup.id", fit)
    thread_context.put(FIT_KEY, fit)
    return previous


def restore_tag(sc: Any, previous: tuple[Any, str | None]) -> None:
    """Give the calling thread back its local properties and ThreadContext entry from before :func:`tag_thread`."""
    properties, entry = previous
    restore_thread(sc, properties)
    thread_context = sc._jvm.org.apache.logging.log4j.ThreadContext
    if entry is None:
        thread_context.remove(FIT_KEY)
    else:
        thread_context.put(FIT_KEY, entry)


def job_split(sc: Any, fits: set[str]) -> dict[str, dict[str, Any]]:
    """Per fit (job group): its Spark jobs' intervals, its tasks' summed executor run, CPU and GC time,
    tasks per stage and how many of its tasks ran at each locality level (a cached partition read
    from another executor shows as NODE_LOCAL or ANY rather than PROCESS_LOCAL: a remote block fetch).

    ``in_jobs_s`` is the union of the fit's job intervals (submission to completion), so a fit's wall
    time minus it is time its thread spent outside Spark jobs: driver-side work between iterations.
    ``task_intervals``: each of its tasks' ``(launch, end)`` in seconds since the epoch, what
    :func:`cores_split` divides at the fit's first loss.
    """
    store = sc._jsc.sc().statusStore()
    stages: dict[int, StageCost] = {}
    for s in every_stage(sc):
        cost = stages.setdefault(s.stageId(), StageCost())
        cost.run_ms += float(s.executorRunTime())
        cost.cpu_ms += s.executorCpuTime() / 1e6
        cost.gc_ms += float(s.jvmGcTime())
        cost.tasks = max(cost.tasks, int(s.numTasks()))
        for task in scala_list(sc, store.taskList(s.stageId(), s.attemptId(), ALL_TASKS)):
            cost.locality[task.taskLocality()] += 1
            duration = task.duration()
            if duration.isDefined():
                launch = task.launchTime().getTime() / 1000.0
                cost.intervals.append((launch, launch + float(duration.get()) / 1000.0))
    intervals: dict[str, list[tuple[float, float]]] = defaultdict(list)
    per_fit: dict[str, StageCost] = defaultdict(StageCost)
    tasks: dict[str, list[int]] = defaultdict(list)
    for job in scala_list(sc, store.jobsList(None)):
        group = job.jobGroup()
        if not group.isDefined() or group.get() not in fits:
            continue
        name = group.get()
        submitted, completed = job.submissionTime(), job.completionTime()
        if submitted.isDefined() and completed.isDefined():
            intervals[name].append((submitted.get().getTime() / 1000.0, completed.get().getTime() / 1000.0))
        for stage_id in scala_list(sc, job.stageIds()):
            stage = stages.get(int(stage_id))
            if stage is not None:
                per_fit[name].add(stage)
                if stage.tasks:
                    tasks[name].append(stage.tasks)
    return {name: {"spark_jobs": len(intervals[name]), "in_jobs_s": union_length(intervals[name]),
                   "executor_run_s": per_fit[name].run_ms / 1000.0, "executor_cpu_s": per_fit[name].cpu_ms / 1000.0,
                   "executor_gc_s": per_fit[name].gc_ms / 1000.0,
                   "tasks_per_stage": (sum(tasks[name]) / len(tasks[name])) if tasks[name] else 0.0,
                   "task_locality": dict(sorted(per_fit[name].locality.items())),
                   "task_intervals": per_fit[name].intervals} for name in fits}


@dataclass
class StageCost:
    """What a stage's tasks cost on the executors (summed over its attempts), or a fit's sum of them.

    ``run_ms`` is the tasks' wall time and ``cpu_ms`` the CPU time their threads got: run time well
    above CPU time, for the same work, means the tasks waited for a core (another process on it)."""
    run_ms: float = 0.0
    cpu_ms: float = 0.0
    gc_ms: float = 0.0
    tasks: int = 0
    locality: Counter[str] = field(default_factory=Counter)
    intervals: list[tuple[float, float]] = field(default_factory=list)  # each task's (launch, end), seconds since the epoch

    def add(self, other: StageCost) -> None:
        self.run_ms += other.run_ms
        self.cpu_ms += other.cpu_ms
        self.gc_ms += other.gc_ms
        self.locality.update(other.locality)
        self.intervals.extend(other.intervals)


def cores_split(intervals: list[tuple[float, float]], start: float, first_loss: float, end: float) -> tuple[float, float, float]:
    """``(task seconds before the first loss, cores held before it, cores held after it)`` of a fit that
    ran from ``start`` to ``end``: its tasks' time on either side of ``first_loss`` over that side's wall time."""
    before = sum(max(min(b, first_loss) - a, 0.0) for a, b in intervals)
    after = sum(max(b - max(a, first_loss), 0.0) for a, b in intervals)
    return before, before / max(first_loss - start, 1e-9), after / max(end - first_loss, 1e-9)

