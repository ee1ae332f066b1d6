"""A recorded live workload (``slaq-trace/1``): what each job did on the cluster, so the simulator can
replay it task by task (:mod:`slaq.sim.replay`) and be checked against the live runs it came from.

Per job: its arrival, its loss after each phase, and each phase's work. Phase 0 is the set-up before the
first loss (data generation, ``first()``, a spark.ml fit's caching and initial pass); phase ``k >= 1``
ends with loss ``k``. A job that reported no loss (a KMeans or random-forest fit, say, which SLAQ gives an even
share) is one phase, all its work, and no loss: it takes its cores in the replay and no part in its figures.
A phase is driver time (the job's thread outside any Spark job: Python, py4j,
the driver's own computation) and its Spark jobs' latency (inside a Spark job, no task of it running
though a core was free: stage submission, task launch, result delivery), neither holding an executor
core, and its Spark stages, each ``tasks`` tasks sharing ``seconds`` of core time (launch to end). Where the
trace has them, ``gaps_s`` place the driver time: the part before each stage (before a Spark job's first, the
driver's time since the previous one ended; 0 before its others), the rest after the last stage. A GBT fit's
one phase is some 120 Spark jobs with the driver working between them: replayed with all of its driver time
first, it left the pools' shares idle for whole epochs, and the check 22-34% off. Without them, all of it
comes first.
Where the live run had several executors, a stage may say how many of its tasks each executor ran on the data it
cached (``local``: Spark's PROCESS_LOCAL tasks, which it held for that executor for up to ``spark.locality.wait``,
``setting.locality_wait_s``); the replay holds them too. Under stock FAIR on the GBT-heavy sweep, a tree's tasks
waiting for their executor left the other core to the fits queued behind them (without it the check was 37% off).
Spark jobs outside every job (a CrossValidator's evaluations) are kept apart, each as its submission and
stages: they run in Spark's ``default`` pool, which no policy allocates. The lab writes traces
(``--record-trace`` on the sweeps), an application its own (``spark.slaq.recordTrace``, :mod:`slaq.live.trace_out`);
``measured`` holds the live runs' figures the check compares with.
JSON, gzip when the name ends in ``.gz``.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slaq.live.config import EPOCH_RANGE
from slaq.metrics import NINETY, reduction_index
from slaq.names import check_job_name, check_name_size
from slaq.sim.trace_json import TraceError, count, items, number, read_json
from slaq.stats.history import InvalidReport, positive_number

FORMAT = "slaq-trace/1"


@dataclass(frozen=True)
class Stage:
    tasks: int
    seconds: float  # all its tasks' time on a core together, each from its launch to its end
    local: tuple[int, ...] = ()  # per executor, how many of its tasks read that executor's cached data (Spark held them for it)

    @property
    def task_seconds(self) -> float:
        return self.seconds / self.tasks


@dataclass(frozen=True)
class Phase:
    driver_s: float
    stages: tuple[Stage, ...] = ()
    latency_s: float = 0.0  # inside its Spark jobs with no task of theirs running and a core free: scheduling, result delivery
    gaps: tuple[float, ...] | None = None  # driver seconds before each stage (the rest after the last); None: all before the first

    @property
    def waits(self) -> float:
        """Seconds of the phase that hold no executor core: the driver's and the Spark jobs' latency."""
        return self.driver_s + self.latency_s

    def wait_before(self, k: int) -> float:
        """Seconds off the cores before stage ``k`` (``k == len(stages)``: after the last, before the loss); the
        latency goes before the first stage."""
        if self.gaps is None or not self.stages:
            return self.waits if k == 0 else 0.0
        if k < len(self.stages):
            return self.gaps[k] + (self.latency_s if k == 0 else 0.0)
        return max(self.driver_s - sum(self.gaps), 0.0)

    @property
    def executor_s(self) -> float:
        return sum(s.seconds for s in self.stages)


@dataclass(frozen=True)
class TraceJob:
    name: str
    family: str
    arrival: float  # seconds after the workload's start
    losses: tuple[float, ...]  # losses[k] ends phases[k]
    phases: tuple[Phase, ...]
    reports: bool | None = None  # known in advance to report losses (a spark.ml fit: True); None lets the loop find out
    weight: float = 1.0
    outside: bool = False  # a Spark job outside every job: Spark's default pool, no loss, not a policy's to allocate

    @property
    def silent(self) -> bool:
        """A job that reported no loss: one phase, all its work; it has no time to 90%."""
        return not self.losses

    def work_to(self, phase: int) -> tuple[float, float]:
        """(executor seconds, driver seconds) of phases 0..``phase``."""
        done = self.phases[: phase + 1]
        return sum(p.executor_s for p in done), sum(p.driver_s for p in done)


@dataclass(frozen=True)
class Trace:
    jobs: tuple[TraceJob, ...]
    cores: int  # executor cores of the live runs
    epoch: float  # SLAQ's epoch in the live runs
    setting: dict[str, Any] = field(default_factory=dict)  # the rest of the live configuration, as recorded
    measured: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # configuration -> one figure dict per live run
    name: str = ""
    outside: tuple[TraceJob, ...] = ()  # the Spark jobs outside every job, by submission

    @property
    def executors(self) -> int:
        """The live runs' executors, as the stages' locality counts them (1: none recorded)."""
        return max(executor_counts(self.replayed), default=1)

    @property
    def locality_wait(self) -> float:
        """How long Spark held a task for the executor caching its data (``spark.locality.wait``, 3 s by default)."""
        return float(self.setting.get("locality_wait_s", LOCALITY_WAIT_S))

    @property
    def replayed(self) -> tuple[TraceJob, ...]:
        """What the check replays: the jobs and the Spark jobs outside them."""
        return tuple(sorted((*self.jobs, *self.outside), key=lambda j: j.arrival))


def local_within(local: Sequence[int], tasks: int) -> tuple[int, ...]:
    """``local`` cut down, if it must be, to at most ``tasks`` together, as a reader requires: the medians of the
    runs' counts need not fit in one stage."""
    out, room = [], tasks
    for n in local:
        out.append(min(int(n), room))
        room -= out[-1]
    return tuple(out)


def gaps_within(gaps: Sequence[float], driver: float) -> tuple[float, ...]:
    """``gaps`` scaled down, if they must be, to add up to at most the phase's ``driver`` time, as a reader requires."""
    total = sum(gaps)
    return tuple(g * driver / total for g in gaps) if total > driver else tuple(gaps)


def outside_job(index: int, submitted: float, stages: tuple[Stage, ...]) -> TraceJob:
    """A Spark job outside every job as the replay runs it: one phase of its stages after an empty one."""
    return TraceJob(f"outside-{index}", "", submitted, (1.0, 1.0), (Phase(0.0), Phase(0.0, stages)), False, outside=True)


def ninety_phase(job: TraceJob) -> int:
    """The phase whose loss first covers 90% of the job's whole reduction (its last phase if none does)."""
    at = reduction_index(job.losses, NINETY)
    return len(job.losses) - 1 if at is None else at


# What a trace may hold. A trace is untrusted input (recorded elsewhere, received, edited), so every bound is
# checked where it is read, before anything replays it: an accepted trace replays in bounded memory and time.
MAX_JOBS = 20_000  # jobs in one replay (a trace's, with its Spark jobs outside them; or a projection's)
MAX_PHASES = 10_000  # phases (and losses) of a job
MAX_STAGES = 1_000  # stages of a phase
MAX_TASKS = 100_000  # tasks of a stage
MAX_SECONDS = 86_400.0  # any time in a trace: an arrival, a phase's driver time or latency, a stage's core time, a measured figure
MAX_LOSS = 1e15  # a loss's magnitude: a job's whole reduction (first loss minus lowest) stays a finite number
MAX_EVENTS = 4_000_000  # phases and tasks in one replay: each is at most two events (a task's end, the wait before a stage)
MAX_EPOCHS = 1_000_000  # epochs of the longest replay a workload allows: (last arrival + every wait + every core-second) / epoch
MAX_RUNS = 1_000  # measured runs of a configuration
MAX_HELD_WORK = 200_000_000  # jobs x (phases and tasks) x executors of a replay holding tasks: each offer round visits every waiting job
CORES = (1, 4096)  # a trace's executor cores, and a projection's
LOCALITY_WAIT_S = 3.0  # Spark's default spark.locality.wait: a trace's when it records none


def _stages(raw: object, what: str) -> tuple[Stage, ...]:
    """Each stage: its tasks and core seconds, and optionally how many of its tasks each executor's cache held."""
    stages = []
    for k, item in enumerate(items(raw, what, list, MAX_STAGES)):
        tasks, seconds, *rest = items(item, f"{what}[{k}]", list, 3, 2)
        n = count(tasks, f"{what}[{k}] tasks", 1, MAX_TASKS)
        counts = items(rest[0], f"{what}[{k}] local", list, CORES[1], 1) if rest else []
        local = tuple(count(c, f"{what}[{k}] local[{e}]", 0, n) for e, c in enumerate(counts))
        if sum(local) > n:
            raise TraceError(f"{what}[{k}] local: {sum(local)} tasks held for executors, more than the stage's {n}")
        stages.append(Stage(n, number(seconds, f"{what}[{k}] seconds", 0, MAX_SECONDS), local))
    return tuple(stages)


def _stage(s: Stage) -> list:
    return [s.tasks, round(s.seconds, 3), *([list(s.local)] if s.local else [])]


def _phase(raw: Any, what: str) -> Phase:
    """A phase: driver time and latency off the cores, its stages, and where the driver time falls among them."""
    raw = items(raw, what, dict, 16)
    driver, stages = number(raw.get("driver_s"), f"{what}.driver_s", 0, MAX_SECONDS), _stages(raw.get("stages", []), f"{what}.stages")
    gaps = None
    if raw.get("gaps_s") is not None:
        gaps = tuple(number(g, f"{what}.gaps_s[{k}]", 0, MAX_SECONDS)
                     for k, g in enumerate(items(raw["gaps_s"], f"{what}.gaps_s", list, len(stages), len(stages))))
        if sum(gaps) > driver + 1e-3 * (len(gaps) + 1):  # each rounded to the millisecond
            raise TraceError(f"{what}.gaps_s add up to {sum(gaps):.3f} s, more than the phase's driver_s {driver:.3f}")
    return Phase(driver, stages, number(raw.get("latency_s", 0.0), f"{what}.latency_s", 0, MAX_SECONDS), gaps)


def _job(raw: Any, index: int, where: str) -> TraceJob:
    """Job ``index`` of the trace ``where``, its name checked as ``slaq.job`` checks one, its weight too."""
    raw = items(raw, f"{where}: jobs[{index}]", dict, 16)
    try:
        name = check_name_size(check_job_name(raw.get("name")))
    except ValueError as exc:
        raise TraceError(f"{where}: jobs[{index}].name: {exc}") from None
    what = f"{where}: job {name!r}"
    losses = tuple(number(v, f"{what} losses[{k}]", -MAX_LOSS, MAX_LOSS)
                   for k, v in enumerate(items(raw.get("losses"), f"{what} losses", list, MAX_PHASES)))
    phases = tuple(_phase(p, f"{what} phases[{k}]") for k, p in enumerate(items(raw.get("phases"), f"{what} phases", list, MAX_PHASES)))
    if len(losses) == 1 or len(phases) != max(len(losses), 1):
        raise TraceError(f"{what} needs one phase per loss and two losses or more, or no loss and one phase (a job that "
                         f"reported none), got {len(phases)} phases and {len(losses)} losses")
    reports, family = raw.get("reports"), raw.get("family", "")
    if reports not in (None, True, False) or not isinstance(family, str):
        raise TraceError(f"{what}: reports must be true, false or null, and family a string")
    try:
        weight = positive_number(raw.get("weight", 1.0), f"{what} weight")
    except InvalidReport as exc:
        raise TraceError(str(exc)) from None
    return TraceJob(name, family, number(raw.get("arrival_s"), f"{what} arrival_s", 0, MAX_SECONDS), losses, phases, reports, weight)


def _outside(raw: Any, index: int, what: str) -> TraceJob:
    raw = items(raw, what, dict, 16)
    return outside_job(index, number(raw.get("submitted_s"), f"{what}.submitted_s", 0, MAX_SECONDS), _stages(raw.get("stages", []), f"{what}.stages"))


def _measured(raw: object, where: str) -> dict[str, list[dict[str, Any]]]:
    """The live runs' figures the check compares with: per configuration, runs with their mean time to 90% and makespan."""
    out: dict[str, list[dict[str, Any]]] = {}
    for config, runs in items(raw, f"{where}: measured", dict, 100).items():
        for k, run in enumerate(items(runs, f"{where}: measured[{config!r}]", list, MAX_RUNS)):
            what = f"{where}: measured[{config!r}][{k}]"
            run = items(run, what, dict, 100)
            for key in ("mean_time_to_90pct_s", "makespan_s"):
                number(run.get(key), f"{what}.{key}", 0, MAX_SECONDS)
            for name, value in items(run.get("time_to_90pct_s", {}), f"{what}.time_to_90pct_s", dict, MAX_JOBS).items():
                if value is not None:
                    number(value, f"{what}.time_to_90pct_s[{name!r}]", 0, MAX_SECONDS)
        out[str(config)] = runs
    return out


def events_of(jobs: Sequence[TraceJob]) -> int:
    """The phases and tasks of ``jobs``: a replay's events, at most two each (a task's end, the wait before a stage)."""
    return sum(len(j.phases) + sum(s.tasks for p in j.phases for s in p.stages) for j in jobs)


def executor_counts(jobs: Sequence[TraceJob]) -> set[int]:
    """How many executors the stages of ``jobs`` hold tasks for (one number in a well-formed trace; none: no locality)."""
    return {len(s.local) for j in jobs for p in j.phases for s in p.stages if len(s.local) > 1 and any(s.local)}


def held_work(jobs: Sequence[TraceJob]) -> int:
    """What a replay holding tasks for executors costs, jobs x events x executors (0 when no stage holds any): a held
    task may refuse a free core, so each offer round visits every waiting job and its executors."""
    executors = max(executor_counts(jobs), default=1)
    return len(jobs) * events_of(jobs) * executors if executors > 1 else 0


def check_workload(jobs: Sequence[TraceJob], epoch: float, where: str) -> None:
    """TraceError unless a replay of ``jobs`` stays within :data:`MAX_JOBS`, :data:`MAX_EVENTS` and :data:`MAX_EPOCHS`
    (a trace's, and each projection's: jobs scale with the cores)."""
    if len(jobs) > MAX_JOBS:
        raise TraceError(f"{where}: {len(jobs)} jobs, more than a replay runs ({MAX_JOBS})")
    events = events_of(jobs)
    if events > MAX_EVENTS:
        raise TraceError(f"{where}: {events} phases and tasks, more than a replay runs ({MAX_EVENTS})")
    horizon = max(j.arrival for j in jobs) + sum(p.waits + p.executor_s for j in jobs for p in j.phases)
    if horizon / epoch > MAX_EPOCHS:
        raise TraceError(f"{where}: up to {horizon:.0f} s of work in epochs of {epoch:g} s, more than a replay runs ({MAX_EPOCHS} epochs)")


def from_dict(doc: object, name: str = "") -> Trace:
    """The trace a :func:`to_dict` document describes, every field in its bounds; :class:`TraceError` names the
    file, the job and the field that is wrong, and the bound."""
    where = name or "trace"
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TraceError(f"{where}: not a {FORMAT} document")
    setting = dict(items(doc.get("setting"), f"{where}: setting", dict, 100))
    cores = count(setting.get("executor_cores"), f"{where}: setting.executor_cores", *CORES)
    epoch = number(setting.get("epoch_s"), f"{where}: setting.epoch_s", *EPOCH_RANGE)
    if setting.get("arrival_mean_s") is not None:
        number(setting["arrival_mean_s"], f"{where}: setting.arrival_mean_s", 1e-6, MAX_SECONDS)
    bad = next((k for k, v in setting.items() if isinstance(v, float) and not math.isfinite(v)), None)
    if bad is not None or not isinstance(setting.get("work_conserving", True), bool):
        raise TraceError(f"{where}: setting.{bad or 'work_conserving'} must be {'finite' if bad else 'true or false'}")
    jobs = [_job(j, k, where) for k, j in enumerate(items(doc.get("jobs"), f"{where}: jobs", list, MAX_JOBS, 1))]
    names = [j.name for j in jobs]
    twice = next((n for k, n in enumerate(names) if n in names[:k]), None) if len(set(names)) < len(names) else None
    if twice is not None:
        raise TraceError(f"{where}: two jobs named {twice!r}: a job's name is its identity in the replay")
    outside = tuple(_outside(o, k, f"{where}: outside_spark_jobs[{k}]")
                    for k, o in enumerate(items(doc.get("outside_spark_jobs", []), f"{where}: outside_spark_jobs", list, MAX_JOBS)))
    trace = Trace(tuple(sorted(jobs, key=lambda j: j.arrival)), cores, epoch, setting, _measured(doc.get("measured", {}), where), name, outside)
    check_workload(trace.replayed, epoch, where)
    executors = executor_counts(trace.replayed)
    if len(executors) > 1 or cores % max(executors, default=1):
        raise TraceError(f"{where}: stages' local counts must all name the same executors, a divisor of the "
                         f"{cores} executor cores, got {sorted(executors)}")
    if (work := held_work(trace.replayed)) > MAX_HELD_WORK:
        raise TraceError(f"{where}: tasks held for {trace.executors} executors, and {len(trace.replayed):,} jobs x {events_of(trace.replayed):,} "
                         f"phases and tasks x {trace.executors} = {work:,}, more than a replay holding them runs ({MAX_HELD_WORK:,})")
    if "locality_wait_s" in setting:
        number(setting["locality_wait_s"], f"{where}: setting.locality_wait_s", 0, MAX_SECONDS)
    return trace


def to_dict(trace: Trace) -> dict:
    """The JSON document of ``trace`` (times to the millisecond, losses to 7 significant digits)."""
    return {"format": FORMAT, "setting": {**trace.setting, "executor_cores": trace.cores, "epoch_s": trace.epoch},
            "measured": trace.measured,
            "jobs": [{"name": j.name, "family": j.family, "arrival_s": round(j.arrival, 3), "reports": j.reports, "weight": j.weight,
                      "losses": [float(f"{v:.7g}") for v in j.losses],
                      "phases": [{"driver_s": round(p.driver_s, 3), "latency_s": round(p.latency_s, 3),
                                  "stages": [_stage(s) for s in p.stages],
                                  **({} if p.gaps is None else {"gaps_s": [round(g, 3) for g in p.gaps]})}
                                 for p in j.phases]} for j in trace.jobs],
            "outside_spark_jobs": [{"submitted_s": round(o.arrival, 3), "stages": [_stage(s) for s in o.phases[1].stages]}
                                   for o in trace.outside]}


def load(path: str | Path) -> Trace:
    """Read a trace file (``.gz``: gzip) within the bounds above; :class:`TraceError` with a one-line reason when it cannot."""
    p = Path(path)
    return from_dict(read_json(p), str(p))



def save(trace: Trace, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(to_dict(trace), separators=(",", ":")).encode()
    p.write_bytes(gzip.compress(data, mtime=0) if p.suffix == ".gz" else data)
    return p
