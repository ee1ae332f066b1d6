"""Watchers of the SLAQ epoch loop for the tests and the lab (:class:`slaq.live.observer.LoopObserver`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from slaq.live.allocation import Decision
from slaq.live.job import LiveJob
from slaq.live.observer import LoopObserver

ENDED_KEPT = 1024  # ended jobs whose allocation before their first loss is remembered


class FirstLossCores(LoopObserver):
    """Per ended job, its mean allocation over the epochs before its first loss."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cores: dict[str, list[float]] = {}
        self.ended: OrderedDict[str, float] = OrderedDict()

    def on_allocated(self, jobs: Sequence[LiveJob], decision: Decision) -> None:
        with self._lock:
            for j in jobs:
                if not j.history.losses:
                    self._cores.setdefault(j.name, []).append(decision.alloc[j.name])

    def on_job_ended(self, job: LiveJob) -> None:
        with self._lock:
            cores = self._cores.pop(job.name, None)
            if cores:
                self.ended[job.name] = sum(cores) / len(cores)
                while len(self.ended) > ENDED_KEPT:
                    self.ended.popitem(last=False)


class Statuses(LoopObserver):
    """Every ``epoch_status`` the loop built, in order (``decided``: the latest allocation)."""

    def __init__(self) -> None:
        self.published: list[Any] = []
        self.decided: Decision | None = None

    def on_allocated(self, jobs: Sequence[LiveJob], decision: Decision) -> None:
        self.decided = decision

    def on_status(self, status: Any) -> None:
        self.published.append(status)


def loop_history(loop: Any, name: str) -> Any:
    """The loss history the epoch loop schedules job ``name`` on, or None while it does not schedule it."""
    job = loop.jobs.get(name)
    return None if job is None else job.history

