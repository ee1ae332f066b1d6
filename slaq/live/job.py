"""One SLAQ job, the one record of it: what its owner declared and what the epoch loop learns.

The user API creates it (:class:`slaq.jobs.Job`, a Spark Connect fit), the runtime opens and closes
it, the epoch loop schedules on it: one loss history (:func:`slaq.live.registry.record` appends to it, the user reads
it), the curve fits cached for it (shared by the forecasts and the target check) and whether it
reached its target.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from slaq.live.driver_share import DriverShare
from slaq.live.status import NOT_TUNING, JobFigures, Tuning
from slaq.live.target import Target
from slaq.metrics import NINETY, loss_reference, seconds_to_target, time_to_reduction
from slaq.names import shown
from slaq.predict.forecast import CurveCache, JobForecast
from slaq.stats.history import JobHistory

log = logging.getLogger("slaq")  # the lines a user reads about their own jobs


@dataclass(eq=False)
class LiveJob:
    name: str
    weight: float = 1.0
    target: Target = field(default_factory=Target)
    reports: bool | None = None  # whether it will report losses, when known in advance (slaq.integrations.catalogue.reports_loss)
    owner: Any = None  # the user's object for this job (a ``slaq.jobs.Job``), handed back by ``SlaqRuntime.job_named``
    history: JobHistory = field(default_factory=JobHistory)
    curves: CurveCache = field(default_factory=CurveCache)
    tuning: Tuning = NOT_TUNING  # its place in a CrossValidator/TrainValidationSplit, if any
    family: str = ""  # the jobs it shares its set-up's cost with: a spark.ml fit's estimator class ("": none known)
    satisfied: bool = False  # reached its target: the minimum share from then on
    satisfied_at: float | None = None  # when it reached its target (the loop's clock)
    # what the epoch loop keeps while it schedules the job
    order: float = 0.0  # arrival order
    added_at: float = 0.0  # when the loop took it on (the loop's clock)
    last: tuple[float, float] | None = None  # (time, cumulative core-seconds) of the latest report
    last_stage: float = 0.0  # the pool's stage seconds at the latest report
    cores: float = 0.0  # latest allocation
    consumed: float = 0.0  # core-seconds used so far (from the pool)
    silent_epochs: int = 0  # epochs in a row that ended without any loss from this job yet
    driver: DriverShare = field(default_factory=DriverShare)  # its latest iterations' driver/executor split
    skipped: int = 0  # NaN or infinite losses its owner reported: skipped, not in the history
    failed: bool = False  # its block ended with an exception: its final row's why is FAILED

    @property
    def shown(self) -> str:
        """Its name as log lines show it (:func:`shown`)."""
        return shown(self.name)

    def skip(self, loss: float) -> None:
        """A NaN or infinite loss its owner reported: left out of the history; the first one is logged."""
        self.skipped += 1
        if self.skipped == 1:
            log.warning("SLAQ: job %s reported a loss of %s; skipped, as will be any later NaN or infinite loss of this job "
                        "(counted in job.skipped_losses); SLAQ schedules it on its finite losses", self.shown, loss)

    def figures(self, forecast: JobForecast, why: str, now: float, finished: bool = False) -> JobFigures:
        """Its row's figures at ``now``, each as :mod:`slaq.metrics` defines it: time to its target, time to
        90% of its loss reduction (known once it ``finished``), and what its normalized loss is measured
        against (``forecast``: the one its row shows)."""
        losses = list(self.history.losses)[: int(forecast.k_now) + 1]  # the losses the forecast saw
        times = list(self.history.times)[: len(losses)]
        ninety = time_to_reduction(times, losses, NINETY) if finished else None
        first, floor = loss_reference(losses, forecast.floor)
        return JobFigures(why, now - self.added_at, self.consumed, seconds_to_target(self.added_at, self.satisfied_at), self.tuning,
                          self.driver.fraction(), None if ninety is None else max(ninety - self.added_at, 0.0),
                          self.target.describe(), first, floor)

    def check_target(self, now: float | None = None) -> bool:
        """Marks the job satisfied (at ``now``) once its history reached its target; True only that first time."""
        if self.satisfied or not self.target.reached(self.history, self.curves):
            return False
        self.satisfied, self.satisfied_at = True, now
        return True
