"""What Spark's status store (kept whether or not the UI runs) holds of a run's work, read through py4j: each
finished Spark job's submission, completion, job group and scheduling pool, its stages' tasks, core
time and tasks run on an executor's cached data, and every task's ``(launch, end)``; and what the store no longer held (it forgets old jobs, stages and
tasks past ``spark.ui.retained*``). :mod:`slaq.sim.record` turns it into a trace's phases.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from py4j.java_gateway import JavaClass

from slaq.sim.record import SparkJob
from slaq.sim.trace import CORES, LOCALITY_WAIT_S, MAX_SECONDS, Stage

__all__ = ["RETAIN_CONF", "RETAIN_KEYS", "Lost", "StoreJob", "StoreRead", "locality_wait", "read_store", "scala_list", "spark_jobs_by_group"]

ALL_TASKS = 2**31 - 1  # taskList's maxTasks: every task of a stage
# the status store forgets old jobs and stages past these (default 1000 each; tasks past spark.ui.retainedTasks, default
# 100000): the lab's recorded runs keep every job and stage
RETAIN_CONF = {"spark.ui.retainedJobs": "1000000", "spark.ui.retainedStages": "1000000"}
RETAIN_KEYS = (*RETAIN_CONF, "spark.ui.retainedTasks")


def scala_list(sc: Any, scala_seq: Any) -> list[Any]:
    """A Scala collection py4j handed back (the status store's answers), as a Python list. Copied into an
    ``ArrayList`` in the JVM and read by index: py4j's iterator ends on a Java exception, which pyspark's error
    conversion turns into a dozen more round trips per list (a Scala ``List`` read by index is quadratic)."""
    client = sc._gateway._gateway_client
    copy = JavaClass("java.util.ArrayList", client)(JavaClass("scala.jdk.javaapi.CollectionConverters", client).asJava(scala_seq))
    return [copy.get(i) for i in range(copy.size())]


def every_stage(sc: Any) -> list[Any]:
    """Every stage the status store of ``sc`` holds (v1 ``StageData``, without tasks or summaries)."""
    # stageList(statuses, details, withSummaries, quantiles, taskStatuses): Scala defaults spelled out for py4j
    every = sc._jsc.sc().statusStore().stageList(None, False, False, sc._gateway.new_array(sc._jvm.double, 0), sc._jvm.java.util.ArrayList())
    return scala_list(sc, every)


@dataclass(frozen=True)
class StoreJob:
    group: str | None  # its job group
    pool: str | None  # its stages' scheduling pool
    job: SparkJob


@dataclass(frozen=True)
class Lost:
    """What the status store no longer held: Spark jobs and stages (their ids run from 0 up), stages with fewer tasks than they ran."""
    jobs: int = 0
    stages: int = 0
    stages_missing_tasks: int = 0

    def __bool__(self) -> bool:
        return bool(self.jobs or self.stages or self.stages_missing_tasks)


@dataclass
class StoreRead:
    jobs: list[StoreJob] = field(default_factory=list)  # every finished Spark job
    tasks: list[tuple[float, float]] = field(default_factory=list)  # every finished task's (launch, end)
    lost: Lost = field(default_factory=Lost)


@dataclass
class _StageTasks:
    tasks: int = 0
    seconds: float = 0.0
    first: float = float("inf")
    last: float = float("-inf")
    pool: str | None = None
    local: Counter[str] = field(default_factory=Counter)  # executor -> tasks that ran on its cached data


def read_store(sc: Any, offset: float) -> StoreRead:
    """Everything the status store of ``sc`` holds, times as epoch seconds minus ``offset``."""
    store = sc._jsc.sc().statusStore()
    stages: dict[int, _StageTasks] = {}
    out = StoreRead()
    short = 0
    executors: set[str] = set()
    for st in every_stage(sc):
        cost = stages.setdefault(int(st.stageId()), _StageTasks(pool=str(st.schedulingPool())))
        listed = scala_list(sc, store.taskList(st.stageId(), st.attemptId(), ALL_TASKS))
        short += len(listed) < int(st.numCompleteTasks()) + int(st.numFailedTasks()) + int(st.numKilledTasks())
        for task in listed:
            duration = task.duration()
            if duration.isDefined():
                launch = task.launchTime().getTime() / 1000.0 - offset
                end = launch + float(duration.get()) / 1000.0
                cost.tasks += 1
                cost.seconds += end - launch
                cost.first, cost.last = min(cost.first, launch), max(cost.last, end)
                out.tasks.append((launch, end))
                executor = str(task.executorId())
                executors.add(executor)
                if str(task.taskLocality()) == "PROCESS_LOCAL":
                    cost.local[executor] += 1
    executors.update(str(e.id()) for e in scala_list(sc, store.executorList(True)) if str(e.id()) != "driver")  # one that ran no task too
    local = _local_counts(executors, int(sc.defaultParallelism))
    job_ids = []
    for job in scala_list(sc, store.jobsList(None)):
        job_ids.append(int(job.jobId()))
        submitted, completed, group = job.submissionTime(), job.completionTime(), job.jobGroup()
        if not (submitted.isDefined() and completed.isDefined()):
            continue
        ids = sorted(int(x) for x in scala_list(sc, job.stageIds()))
        t0, t1 = submitted.get().getTime() / 1000.0 - offset, completed.get().getTime() / 1000.0 - offset
        # a stage an earlier job ran (a shuffle's map stage, skipped here) is listed too, with that job's tasks and pool:
        # this job's work is what ran after its submission, and its pool is its result stage's (created last: the highest id)
        ran = [stages[i] for i in ids if i in stages and stages[i].tasks and stages[i].first >= t0]
        pool = stages[ids[-1]].pool if ids and ids[-1] in stages else None
        found = SparkJob(t0, t1, tuple(Stage(c.tasks, c.seconds, local(c.local)) for c in ran), min((c.first for c in ran), default=t1),
                         max((c.last for c in ran), default=t0))
        out.jobs.append(StoreJob(group.get() if group.isDefined() else None, pool, found))
    out.lost = Lost(max(job_ids, default=-1) + 1 - len(set(job_ids)), max(stages, default=-1) + 1 - len(stages), short)
    return out


def locality_wait(sc: Any) -> float:
    """Seconds Spark holds a task for the executor caching its data (``spark.locality.wait.process``, else
    ``spark.locality.wait``), within a trace's bounds."""
    conf = sc._jsc.sc().conf()
    return min(max(conf.getTimeAsMs("spark.locality.wait.process", conf.get("spark.locality.wait", f"{LOCALITY_WAIT_S:g}s")) / 1000.0, 0.0), MAX_SECONDS)


def _local_counts(executors: set[str], cores: int) -> Callable[[Counter[str]], tuple[int, ...]]:
    """A stage's tasks run on each executor's cached data, one count per executor of the run (by id), or none
    when the replay could not place them: one executor, or executors that do not divide the cores (as a trace
    holds them) evenly."""
    ids = sorted(executors, key=lambda e: (not e.isdigit(), int(e) if e.isdigit() else 0, e))
    cores = min(cores, CORES[1])
    if not 1 < len(ids) <= cores or cores % len(ids):
        return lambda counts: ()
    return lambda counts: tuple(counts[e] for e in ids) if counts else ()


def spark_jobs_by_group(sc: Any, groups: set[str], offset: float,
                        others: list[SparkJob] | None = None) -> tuple[dict[str, list[SparkJob]], list[tuple[float, float]]]:
    """Every finished Spark job of each job group in ``groups``, and every task's ``(launch, end)`` of the
    run (any group), times as epoch seconds minus ``offset``; ``others`` gets every other finished Spark job."""
    read = read_store(sc, offset)
    out: dict[str, list[SparkJob]] = {g: [] for g in groups}
    for j in read.jobs:
        if j.group is not None and j.group in groups:
            out[j.group].append(j.job)
        elif others is not None:
            others.append(j.job)
    return out, read.tasks
