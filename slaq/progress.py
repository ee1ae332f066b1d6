"""A compact progress table of the SLAQ scheduler on the console (stderr), every few seconds.

It prints the latest ``epoch_status`` of the attached SLAQ runtime (the same message the Spark UI's
SLAQ tab and the driver log show, :mod:`slaq.live.status`), and only when a new epoch happened.
One line in an example or a notebook::

    with slaq.progress.console(every=5):
        run_the_sweep()
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from slaq.api import latest_status
from sparkshim.wording import counted

ROWS = 12  # jobs listed per table; the rest are summed up in one line


def format_table(status: Any, rows: int = ROWS) -> str:
    """One epoch as a fixed-width table: a header line, then one line per job (most cores first), each
    figure as the status has it (``-``: none)."""
    jobs = sorted(status.jobs, key=lambda j: (-j.cores, j.job))
    allocated = sum(j.cores for j in status.jobs)
    used = sum(j.used_cores for j in status.jobs)
    width = max([len(j.job) for j in jobs[:rows]] + [3])
    width = min(width, 32)
    lines = [f"SLAQ epoch {status.epoch} t={status.t:.0f}s policy={status.policy}: {counted(len(jobs), 'job')}, "
             f"cores allocated {allocated:.1f} / used {used:.1f} of {status.capacity:.0f}",
             f"  {'job':<{width}} {'state':<8} {'iter':>5} {'loss':>10} {'norm':>6} {'gain':>6} {'cores':>11} {'to target':>9}"]
    for j in jobs[:rows]:
        loss = f"{j.loss:10.4g}" if j.iterations else f"{'-':>10}"
        norm = f"{j.normalized_loss:6.3f}" if j.iterations else f"{'-':>6}"
        name = j.job if len(j.job) <= width else j.job[: width - 1] + "~"
        target = f"{j.seconds_to_target:8.1f}s" if j.seconds_to_target >= 0 else f"{'-':>9}"
        lines.append(f"  {name:<{width}} {j.state:<8} {j.iterations:>5} {loss} {norm} {j.predicted_gain:6.3f} {j.cores:5.2f}/{j.used_cores:.2f} {target}")
    if len(jobs) > rows:
        rest = jobs[rows:]
        cores = sum(j.cores for j in rest)
        lines.append(f"  ... {counted(len(rest), 'more job', plural='more jobs')} with {counted(cores, 'core', f'{cores:.2f}')}")
    return "\n".join(lines)


class ConsoleProgress:
    """Prints :func:`format_table` of ``source()`` to ``stream`` whenever a new epoch with jobs is there."""

    def __init__(self, source: Callable[[], Any] = latest_status, stream: TextIO | None = None):
        self.source = source
        self.stream = stream
        self._printed: tuple[float, int] | None = None

    def tick(self) -> bool:
        """Prints the table if a new epoch was published since the last print; True when it printed."""
        status = self.source()
        if status is None or not status.jobs or (status.t, status.epoch) == self._printed:
            return False  # nothing new, or no SLAQ job registered (an idle table is noise)
        self._printed = (status.t, status.epoch)
        stream = self.stream or sys.stderr
        print(format_table(status), file=stream, flush=True)
        return True


@contextmanager
def console(every: float = 5.0, enabled: bool = True, stream: TextIO | None = None,
            source: Callable[[], Any] = latest_status) -> Iterator[ConsoleProgress | None]:
    """Print the SLAQ progress table to stderr every ``every`` seconds while the block runs
    (``enabled=False``, e.g. under ``--json``, prints nothing)."""
    if not enabled:
        yield None
        return
    if every <= 0:
        raise ValueError(f"every must be > 0 seconds, got {every!r}")
    progress = ConsoleProgress(source, stream)
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(every):
            progress.tick()

    thread = threading.Thread(target=run, name="slaq-progress", daemon=True)
    thread.start()
    try:
        yield progress
    finally:
        stop.set()
        thread.join(every + 1.0)
