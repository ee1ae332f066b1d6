"""A recorded live workload (``slaq-trace/1``): what each job did on the cluster, so the simulator can
replay it task by task (:mod:`slaq.sim.replay`) and be checked against the live runs it came from.

Per job: its arrival, its loss after each phase, and each phase's work. Phase 0 is the set-up before the
first loss (data generation, ``first()``, a spark.ml fit's caching and initial pass); phase ``k >= 1``
ends with loss ``k``. A phase is driver time (the job's thread outside any Spark job: Python, py4j,
the driver's own computation) and its Spark jobs' latency (inside a Spark job, no task of it running
though a core was free: stage submission, task launch, result delivery), neither holding an executor
core, then its Spark stages, each ``tasks`` tasks sharing ``seconds`` of core time (launch to end).
Spark jobs outside every job (a CrossValidator's evaluations) are kept apart, each as its submission and
stages: they run in Spark's ``default`` pool, which no policy allocates. The lab writes traces
(``--record-trace`` on the sweeps); ``measured`` holds the live runs' figures the check compares with.
JSON, gzip when the name ends in ``.gz``.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "slaq-trace/1"


class TraceError(ValueError):
    """A trace file that is missing, unreadable or not a ``slaq-trace/1`` document (one line, for the CLI)."""


@dataclass(frozen=True)
class Stage:
    tasks: int
    seconds: float  # all its tasks' time on a core together, each from its launch to its end

    @property
    def task_seconds(self) -> float:
        return self.seconds / self.tasks


@dataclass(frozen=True)
class Phase:
    driver_s: float
    stages: tuple[Stage, ...] = ()
    latency_s: float = 0.0  # inside its Spark jobs with no task of theirs running and a core free: scheduling, result delivery

    @property
    def waits(self) -> float:
        """Seconds of the phase that hold no executor core: the driver's and the Spark jobs' latency."""
        return self.driver_s + self.latency_s

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
    def replayed(self) -> tuple[TraceJob, ...]:
        """What the check replays: the jobs and the Spark jobs outside them."""
        return tuple(sorted((*self.jobs, *self.outside), key=lambda j: j.arrival))


def outside_job(index: int, submitted: float, stages: tuple[Stage, ...]) -> TraceJob:
    """A Spark job outside every job as the replay runs it: one phase of its stages after an empty one."""
    return TraceJob(f"outside-{index}", "", submitted, (1.0, 1.0), (Phase(0.0), Phase(0.0, stages)), False, outside=True)


def _stages(raw: dict) -> tuple[Stage, ...]:
    return tuple(Stage(int(t), float(s)) for t, s in raw.get("stages", []))


def _phase(raw: dict) -> Phase:
    return Phase(float(raw["driver_s"]), _stages(raw), float(raw.get("latency_s", 0.0)))


def _invalid(job: TraceJob) -> bool:
    """A stage without tasks, or a negative time."""
    return any(s.tasks < 1 or s.seconds < 0 for p in job.phases for s in p.stages) or any(p.driver_s < 0 or p.latency_s < 0 for p in job.phases)


def from_dict(doc: dict, name: str = "") -> Trace:
    """The trace a :func:`to_dict` document describes; :class:`TraceError` names what is wrong."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TraceError(f"{name or 'trace'}: not a {FORMAT} document")
    try:
        jobs = []
        for j in doc["jobs"]:
            phases = tuple(_phase(p) for p in j["phases"])
            losses = tuple(float(v) for v in j["losses"])
            if len(phases) != len(losses) or len(losses) < 2:
                raise TraceError(f"{name or 'trace'}: job {j.get('name')!r} needs one phase per loss and two or more losses")
            jobs.append(TraceJob(str(j["name"]), str(j.get("family", "")), float(j["arrival_s"]), losses, phases,
                                 j.get("reports"), float(j.get("weight", 1.0))))
        outside = tuple(outside_job(k, float(o["submitted_s"]), _stages(o)) for k, o in enumerate(doc.get("outside_spark_jobs", [])))
        bad = next((job for job in (*jobs, *outside) if _invalid(job)), None)
        if bad is not None:
            raise TraceError(f"{name or 'trace'}: job {bad.name!r} has a stage without tasks or a negative time")
        setting = dict(doc["setting"])
        cores, epoch = int(setting["executor_cores"]), float(setting["epoch_s"])
    except TraceError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceError(f"{name or 'trace'}: malformed {FORMAT} document ({type(exc).__name__}: {exc})") from None
    if not jobs or cores < 1 or epoch <= 0:
        raise TraceError(f"{name or 'trace'}: needs jobs, executor_cores >= 1 and epoch_s > 0")
    return Trace(tuple(sorted(jobs, key=lambda j: j.arrival)), cores, epoch, setting, dict(doc.get("measured", {})), name, outside)


def to_dict(trace: Trace) -> dict:
    """The JSON document of ``trace`` (times to the millisecond, losses to 7 significant digits)."""
    return {"format": FORMAT, "setting": {**trace.setting, "executor_cores": trace.cores, "epoch_s": trace.epoch},
            "measured": trace.measured,
            "jobs": [{"name": j.name, "family": j.family, "arrival_s": round(j.arrival, 3), "reports": j.reports, "weight": j.weight,
                      "losses": [float(f"{v:.7g}") for v in j.losses],
                      "phases": [{"driver_s": round(p.driver_s, 3), "latency_s": round(p.latency_s, 3),
                                  "stages": [[s.tasks, round(s.seconds, 3)] for s in p.stages]}
                                 for p in j.phases]} for j in trace.jobs],
            "outside_spark_jobs": [{"submitted_s": round(o.arrival, 3), "stages": [[s.tasks, round(s.seconds, 3)] for s in o.phases[1].stages]}
                                   for o in trace.outside]}


def load(path: str | Path) -> Trace:
    """Read a trace file (``.gz``: gzip); :class:`TraceError` with a one-line reason when it cannot."""
    p = Path(path)
    try:
        raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        doc = json.loads(raw)
    except FileNotFoundError:
        raise TraceError(f"{p}: no such trace file") from None
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(f"{p}: not a readable trace ({type(exc).__name__}: {exc})") from None
    return from_dict(doc, str(p))


def save(trace: Trace, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(to_dict(trace), separators=(",", ":")).encode()
    p.write_bytes(gzip.compress(data, mtime=0) if p.suffix == ".gz" else data)
    return p
