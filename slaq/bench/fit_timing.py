"""Passive timing of spark.ml fits, the same in every configuration (SLAQ on or off).

Two sources, neither of which touches scheduling:

* **When each iteration ended**: breeze logs one INFO line per L-BFGS/OWLQN iteration on the thread
  that called ``fit()``. :class:`IterationClock` adds a log4j2 file appender on ``breeze.optimize``
  whose layout writes only the event's wall-clock millis, the fit's name (a log4j ThreadContext entry
  the fit's thread sets, see :func:`tag_thread`) and the message. The objective values themselves
  are taken from the fitted model's ``objectiveHistory``, not from these lines.
* **Where a fit's time went**: every Spark job a fit submits carries the fit's name as its job group;
  after the run, :func:`job_split` reads Spark's own status store (kept whether or not the UI runs)
  for those jobs' intervals, their stages' summed executor run time and task counts.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from typing import Any

FIT_KEY = "slaq.bench.fit"  # log4j ThreadContext key naming the fit a thread runs
BREEZE_LOGGER = "breeze.optimize"
# breeze's FirstOrderMinimizer logs this once per finished iteration (also the line LossAppender.java parses)
ITERATION_LINE = "Val and Grad Norm"
_APPENDER = "slaq-bench-iteration-clock"
# the status store forgets old jobs after spark.ui.retainedJobs (default 1000): keep every job of a run
RETAIN_CONF = {"spark.ui.retainedJobs": "1000000", "spark.ui.retainedStages": "1000000"}


class IterationClock:
    """A log4j2 appender on ``breeze.optimize`` that writes ``millis<TAB>fit<TAB>message`` lines to a file.

    If a ``breeze.optimize`` logger config exists (SLAQ's loss capture adds one), the appender joins
    it; otherwise it gets its own non-additive INFO config, so nothing reaches the console.
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
                if len(parts) == 3 and parts[1] and parts[2].startswith(ITERATION_LINE):
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


def tag_thread(sc: Any, fit: str | None) -> tuple[str | None, str | None]:
    """Name the calling thread's fit for both sources (ThreadContext entry and Spark job group);
    ``None`` clears them. Returns the previous job group and entry, for :func:`restore_thread`."""
    log4j = sc._jvm.org.apache.logging.log4j
    previous = (sc.getLocalProperty("spark.jobGroup.id"), log4j.ThreadContext.get(FIT_KEY))
    restore_thread(sc, (fit, fit))
    return previous


def restore_thread(sc: Any, previous: tuple[str | None, str | None]) -> None:
    group, entry = previous
    sc.setLocalProperty("spark.jobGroup.id", group)
    thread_context = sc._jvm.org.apache.logging.log4j.ThreadContext
    if entry is None:
        thread_context.remove(FIT_KEY)
    else:
        thread_context.put(FIT_KEY, entry)


def _seq(sc: Any, scala_seq: Any) -> list[Any]:
    return list(sc._jvm.scala.jdk.javaapi.CollectionConverters.asJava(scala_seq))


def job_split(sc: Any, fits: set[str]) -> dict[str, dict[str, Any]]:
    """Per fit (job group): its Spark jobs' intervals, summed executor run time and tasks per stage.

    ``in_jobs_s`` is the union of the fit's job intervals (submission to completion), so a fit's wall
    time minus it is time its thread spent outside Spark jobs: driver-side work between iterations.
    """
    store = sc._jsc.sc().statusStore()
    stages: dict[int, tuple[float, int]] = {}
    # stageList(statuses, details, withSummaries, quantiles, taskStatuses): Scala defaults spelled out for py4j
    every_stage = store.stageList(None, False, False, sc._gateway.new_array(sc._jvm.double, 0), sc._jvm.java.util.ArrayList())
    for s in _seq(sc, every_stage):
        ms_before, tasks_before = stages.get(s.stageId(), (0.0, 0))
        stages[s.stageId()] = (ms_before + float(s.executorRunTime()), max(tasks_before, int(s.numTasks())))
    intervals: dict[str, list[tuple[float, float]]] = defaultdict(list)
    run_ms: dict[str, float] = defaultdict(float)
    tasks: dict[str, list[int]] = defaultdict(list)
    for job in _seq(sc, store.jobsList(None)):
        group = job.jobGroup()
        if not group.isDefined() or group.get() not in fits:
            continue
        name = group.get()
        submitted, completed = job.submissionTime(), job.completionTime()
        if submitted.isDefined() and completed.isDefined():
            intervals[name].append((submitted.get().getTime() / 1000.0, completed.get().getTime() / 1000.0))
        for stage_id in _seq(sc, job.stageIds()):
            ms, n = stages.get(int(stage_id), (0.0, 0))
            run_ms[name] += ms
            if n:
                tasks[name].append(n)
    return {name: {"spark_jobs": len(intervals[name]), "in_jobs_s": union_length(intervals[name]),
                   "executor_run_s": run_ms[name] / 1000.0,
                   "tasks_per_stage": (sum(tasks[name]) / len(tasks[name])) if tasks[name] else 0.0} for name in fits}


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by possibly overlapping ``(start, end)`` intervals."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total
