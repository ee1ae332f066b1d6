"""``spark.slaq.recordTrace``: the application's own workload written as a ``slaq-trace/1`` when SLAQ stops (its
SparkContext's stop, before the context goes away), for ``slaq simulate --check`` and ``--project``.

While the run lasts, :class:`TraceRecorder` keeps each ended job's arrival and losses (the registry keeps only
the latest ones); at stop it adds the open jobs, reads Spark's status store (:mod:`slaq.live.status_store`),
builds the trace (:func:`slaq.sim.app_trace.app_trace`) and writes it atomically, never over an existing file:
a directory gets ``<application id>.json.gz`` (``-2``, ``-3``... when taken). One INFO line says where it is
and how to use it; one WARN line says what the trace leaves out.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from slaq.live.config import PREFIX, SlaqConfig
from slaq.live.job import LiveJob
from slaq.live.observer import LoopObserver
from slaq.live.status_store import RETAIN_KEYS, Lost, locality_wait, read_store
from slaq.names import shown
from slaq.sim import trace as bounds
from slaq.sim.app_trace import RanJob, app_trace
from slaq.sim.trace import to_dict
from sparkshim.announce import announce

log = logging.getLogger("slaq")
KEY = PREFIX + "recordTrace"


def lost_note(lost: Lost) -> str:
    """What the status store had forgotten, and the confs that keep it."""
    parts = [f"{lost.jobs:,} Spark jobs" * bool(lost.jobs), f"{lost.stages:,} stages" * bool(lost.stages),
             f"tasks of {lost.stages_missing_tasks:,} stages" * bool(lost.stages_missing_tasks)]
    return (f"{' and '.join(p for p in parts if p)} that Spark's status store no longer held (raise {', '.join(RETAIN_KEYS)} "
            "when starting the application to keep them)")


def target_names(target: str, app_id: str) -> tuple[Path, ...]:
    """Where the trace may go: the file ``target``, or in the directory ``target`` (an existing one, or a path ending in ``/``)
    ``<app id>.json.gz``, then ``-2``, ``-3``... (so a directory collects one trace per application)."""
    path = Path(target).expanduser()
    if not (target.endswith(os.sep) or path.is_dir()):
        return (path,)
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in app_id) or "app"
    return tuple(path / (f"{stem}.json.gz" if k == 1 else f"{stem}-{k}.json.gz") for k in range(1, 1000))


def write_new(data: bytes, names: tuple[Path, ...]) -> Path | None:
    """``data`` written to a temporary file, then linked to the first of ``names`` that does not exist (an
    existing file is never overwritten, a reader never sees half a file); None when every name is taken."""
    names[0].parent.mkdir(parents=True, exist_ok=True)
    tmp = names[0].with_name(f".{names[0].name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask's mode, as any file the application writes
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        for name in names:
            try:
                os.link(tmp, name)
                return name
            except FileExistsError:
                continue
        return None
    finally:
        os.unlink(tmp)


def has_room(jobs: int, events: int, job: RanJob) -> bool:
    """Whether a trace already holding ``jobs`` jobs with ``events`` losses among them has room for ``job``."""
    return jobs < bounds.MAX_JOBS and events + len(job.losses) <= bounds.MAX_EVENTS


def _ran(job: LiveJob) -> RanJob:
    """The job's arrival and losses (the loop's clock), at most one loss past what a trace holds."""
    keep = bounds.MAX_PHASES + 1
    return RanJob(job.name, job.added_at, tuple(job.history.times[:keep]), tuple(job.history.losses[:keep]), job.weight, job.reports)


class TraceRecorder(LoopObserver):
    """Keeps the ended jobs' arrivals and losses, at most as many as a trace holds, and writes the trace once."""

    def __init__(self, target: str):
        self.target = target
        self.written: Path | None = None
        self._jobs: list[RanJob] = []
        self._events = 0
        self._dropped = 0
        self._done = False
        self._lock = threading.Lock()

    def on_job_ended(self, job: LiveJob) -> None:
        self._keep(_ran(job))

    def _keep(self, job: RanJob) -> None:
        with self._lock:
            if has_room(len(self._jobs), self._events, job):
                self._jobs.append(job)
                self._events += len(job.losses)
            else:
                self._dropped += 1

    def write(self, sc: Any, config: SlaqConfig, still_open: list[LiveJob]) -> Path | None:
        """The trace of every job so far (``still_open`` too), once; a failure is one WARN line, never the stop's."""
        if self._done:
            return self.written
        self._done = True
        try:
            for job in still_open:
                self._keep(_ran(job))
            self.written = self._write(sc, config)
        except Exception as exc:
            log.warning("SLAQ: could not record the trace (%s=%s): %s: %s", KEY, shown(self.target), type(exc).__name__, exc)
            log.debug("recording the trace failed", exc_info=True)
        return self.written

    def _write(self, sc: Any, config: SlaqConfig) -> Path | None:
        with self._lock:
            jobs, dropped = list(self._jobs), self._dropped
        if not jobs:
            log.info("SLAQ: no job ran, so no trace was written (%s)", KEY)
            return None
        origin = min(j.arrival for j in jobs)
        read = read_store(sc, origin + time.time() - time.monotonic())  # the status store's epoch times -> the run's clock
        ran = [RanJob(j.name, j.arrival - origin, tuple(t - origin for t in j.times), j.losses, j.weight, j.reports) for j in jobs]
        cores = min(max(int(sc.defaultParallelism), bounds.CORES[0]), bounds.CORES[1])
        app_id = str(sc.applicationId)
        setting = {"source": KEY, "app_id": app_id, "app_name": str(sc.appName), "master": str(sc.master),
                   "policy": config.policy, "work_conserving": config.work_conserving, "reserve_cores": config.reserve_cores,
                   "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "locality_wait_s": locality_wait(sc)}
        trace, notes = app_trace(ran, [(j.pool, j.job) for j in read.jobs], read.tasks, cores, config.epoch, config.policy, setting)
        if dropped:
            notes.insert(0, f"{dropped:,} jobs after the first {len(jobs):,} past a trace's bounds")
        if read.lost:
            notes.append(lost_note(read.lost))
        names = target_names(self.target, app_id)
        data = json.dumps(to_dict(trace), separators=(",", ":")).encode()
        path = write_new(gzip.compress(data, mtime=0) if names[0].suffix == ".gz" else data, names)
        if path is None:
            log.warning("SLAQ: did not record the trace: %s exists and is never overwritten (%s names a new file, or a directory)",
                        shown(str(names[0])), KEY)
            return None
        where = shown(str(path))
        announce(sc, log, f"SLAQ: recorded this run's workload ({len(trace.jobs)} jobs, {len(trace.outside)} Spark jobs outside them, "
                          f"as measured under {config.policy}) in {where}; replay it against this run: slaq simulate --check {where}; "
                          f"on larger clusters: slaq simulate --project {where}")
        if notes:
            log.warning("SLAQ: the trace %s leaves out: %s", where, "; ".join(notes))
        return path


def trace_recorder(config: SlaqConfig) -> TraceRecorder | None:
    """The recorder ``spark.slaq.recordTrace`` asks for, if any."""
    return None if config.record_trace is None else TraceRecorder(config.record_trace)
