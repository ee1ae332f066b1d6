"""CPU time of the processes a local benchmark session runs: this Python driver, the driver JVM and
the executor JVMs (on a local-cluster master, the driver JVM's child processes).

On a machine with as many cores as executors, any CPU the driver side burns is taken from the
executors' tasks; these figures say how much, per configuration. Linux only (``/proc``): elsewhere
:func:`session_cpu` returns ``None`` and the benchmark reports no CPU split.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from slaq.live.observer import LoopObserver

_PROC = Path("/proc")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (all its threads) so far."""
    fields = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    # after the ")" that ends comm: field 3 (state) is fields[0], so utime (14) and stime (15) are [11], [12]
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_s(name: str) -> float:
    """CPU seconds so far of this process's live thread called ``name`` (e.g. SLAQ's epoch loop,
    ``slaq.live.loop.LOOP_THREAD``), from the thread's own CPU clock; 0.0 when no such thread runs."""
    for thread in threading.enumerate():
        if thread.name == name and thread.ident is not None:
            return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    return 0.0


def child_pids(pid: int) -> list[int]:
    """The direct children of ``pid``, from every one of its threads' ``children`` lists."""
    out: set[int] = set()
    for task in (_PROC / str(pid) / "task").iterdir():
        try:
            out.update(int(c) for c in (task / "children").read_text().split())
        except OSError:  # a thread that ended meanwhile
            continue
    return sorted(out)


def session_cpu(sc: Any) -> dict[str, float] | None:
    """CPU seconds so far of this process, the driver JVM and its child processes (the executors of a
    local-cluster master; none on a remote master). ``None`` where ``/proc`` is not there."""
    if not (_PROC / "self" / "stat").exists():
        return None
    jvm = int(sc._jvm.java.lang.ProcessHandle.current().pid())
    executors = 0.0
    for child in child_pids(jvm):
        try:
            executors += process_cpu_s(child)
        except OSError:  # exited meanwhile
            continue
    return {"driver_python_s": time.process_time(), "driver_jvm_s": process_cpu_s(jvm), "executors_s": executors}


def cpu_delta(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float] | None:
    """Seconds of CPU each part used between two :func:`session_cpu` readings."""
    if before is None or after is None:
        return None
    return {k: round(after[k] - before[k], 2) for k in after}


class StatusCpu(LoopObserver):
    """CPU seconds the loop thread spent building and publishing its statuses (UI tab, driver log):
    from before each status is built to this observer's turn, so watch the loop after the runtime's
    own publisher (observers are told in the order they were appended)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started: float | None = None

    def before_status(self) -> None:
        self._started = time.thread_time()

    def on_status(self, status: Any) -> None:
        if self._started is not None:
            self.seconds += time.thread_time() - self._started
            self._started = None
