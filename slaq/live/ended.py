"""The UI tab's view of ended jobs: each one's final row, handed to the next status once, and the
tuning fits' rows marked pruned when their candidate is (slaq.integrations.pruning)."""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict, deque
from collections.abc import Container, Iterable
from dataclasses import replace

from slaq.live.job import LiveJob
from slaq.live.status import ENDED, FAILED, FINISHED, PRUNED, TARGET, job_status
from slaq.messages import JobStatus
from slaq.predict.forecast import job_forecast

log = logging.getLogger("slaq.loop")
MAX_ENDED = 500  # final rows kept for the next status (the UI keeps as many finished jobs)
PRUNED_KEPT = 1024  # (tuner, candidate) pairs remembered as pruned


def final_row(job: LiveJob, now: float, pruned: bool) -> JobStatus:
    """A finished job's row from its whole history (the last epoch's row misses the losses ingested
    after it): final loss and iterations, wall time, core-seconds, and its figures (:meth:`LiveJob.figures`)."""
    losses = list(job.history.losses)
    forecast = job_forecast(job.name, job.history, job.curves, job.weight, math.inf, job.order)
    why = FAILED if job.failed else TARGET if job.satisfied else PRUNED if pruned else ENDED  # failing beats a target reached before
    figures = job.figures(forecast, why, now, finished=True)
    return job_status(job.name, FINISHED, len(losses), losses[-1] if losses else 0.0, 0.0, 0.0, 0.0, figures)


class EndedJobs:
    """Final rows of the jobs ended since the last status, and the latest tuning fits' rows with the
    candidates pruned so far (any thread: jobs end on user threads, statuses are built on the loop's)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ended: deque[JobStatus] = deque(maxlen=MAX_ENDED)  # final rows since the last status (bounded while none publishes)
        self._tuned_rows: OrderedDict[str, JobStatus] = OrderedDict()  # the latest tuning fits' final rows, to mark them pruned
        self._pruned: OrderedDict[tuple[str, int], None] = OrderedDict()  # (tuner, candidate) pairs pruned

    def add(self, job: LiveJob, now: float) -> None:
        """``job`` ended: its final row goes to the next status."""
        try:
            with self._lock:
                pruned = (job.tuning.group, job.tuning.candidate) in self._pruned
            row = final_row(job, now, pruned)
            with self._lock:
                self._ended.append(row)
                if job.tuning.group:
                    self._tuned_rows[job.name] = row
                    while len(self._tuned_rows) > MAX_ENDED:
                        self._tuned_rows.popitem(last=False)
        except Exception as exc:  # the view of the schedule must never fail the job
            log.warning("SLAQ: could not summarize finished job %s for the UI tab: %s", job.shown, exc)

    def mark_pruned(self, group: str, candidates: Iterable[int]) -> None:
        """Candidates of tuner ``group`` whose remaining fits will not run: their finished fits' rows say
        so from the next status on (the UI tab replaces a finished row by its name), and so does every
        later one of theirs."""
        with self._lock:
            for c in candidates:
                self._pruned[(group, c)] = None
            while len(self._pruned) > PRUNED_KEPT:
                self._pruned.popitem(last=False)
            marked = [replace(row, why=PRUNED) for row in self._tuned_rows.values()
                      if (row.group, row.candidate) in self._pruned and row.why != PRUNED]
            for row in marked:
                self._tuned_rows[row.job] = row
            self._ended.extend(marked)

    def take(self, listed: Container[str]) -> list[JobStatus]:
        """The rows for the status being built (each row is handed on once). The row of a job that status still lists
        (it ended after the decision the status shows) waits for the next status: the UI tab takes a listed job for a
        running one, and the last row listed for the final one when the job is gone."""
        with self._lock:
            ready = [row for row in self._ended if row.job not in listed]
            waiting = [row for row in self._ended if row.job in listed]
            self._ended.clear()
            self._ended.extend(waiting)
            return ready
