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


def slaq_page_html(gateway: Any, status: Any) -> str:
    """The SLAQ tab's page body for the JVM ``SlaqStatus`` ``status`` (``SlaqPage.html``, package-private: by reflection)."""
    from sparkshim.bridge import shim_class

    jvm = gateway.jvm
    params = gateway.new_array(jvm.java.lang.Class, 3)
    params[0] = shim_class(gateway, "slaq.SlaqMessages$StatusReport")
    params[1], params[2] = jvm.java.lang.Class.forName("java.lang.String"), jvm.java.lang.Integer.TYPE
    html = shim_class(gateway, "slaq.SlaqPage").getDeclaredMethod("html", params)
    html.setAccessible(True)
    args = gateway.new_array(jvm.java.lang.Object, 3)
    args[0], args[1], args[2] = status.report(), "json/", 0
    return str(html.invoke(None, args))
