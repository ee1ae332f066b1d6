"""Spark Connect: each spark.ml fit a Connect client submits is its own SLAQ job.

A Connect fit runs in the server's JVM on its operation's thread, where no Python hook sees it. The
shim (``ConnectFits``) opens the job there, at the fit's first task set, names it as a classic fit's
job is named (:func:`slaq.names.fit_job_name`: the estimator and its explicitly set params) with the
operation's id for the sequence number (``LogisticRegression[maxIter=10,regParam=0.1]@<operation id>``),
puts its Spark jobs in the job's pool and its breeze losses in the job's history, and closes it when
Spark Connect reports the operation ended. A Connect tuner's fits are not grouped as a classic one's
(docs/mllib.md says why: the request names no tuner, candidate or fold). This module turns the shim's ``connect_fit`` messages into the epoch loop's jobs
(:class:`ConnectFits`, an observer of the loop).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from slaq.enforce.pools import PoolBridge
from slaq.integrations.catalogue import reports_loss
from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.live.observer import LoopObserver

log = logging.getLogger("slaq")


def param_value(text: str) -> object:
    """A Connect fit's param as the shim spells it (a proto literal's scalar) back as a Python value."""
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def estimator_kind(estimator_class: str) -> str:
    """``org.apache.spark.ml.classification.LogisticRegression`` -> ``LogisticRegression``."""
    return estimator_class.rsplit(".", 1)[-1]


@dataclass(eq=False)
class ConnectFitJob:
    """What one Connect fit's job was made of (its :class:`~slaq.live.job.LiveJob`'s owner): the
    estimator, its params and the Connect operation."""

    name: str
    operation: str
    estimator: str
    params: dict[str, object] = field(default_factory=dict)

    @property
    def reports(self) -> bool | None:
        """Whether the fit logs a per-iteration loss, from the estimator catalogue."""
        return reports_loss(estimator_kind(self.estimator), self.params)


def fit_job(name: str, operation: str, estimator: str, params: Mapping[str, str]) -> ConnectFitJob:
    return ConnectFitJob(name, operation, estimator, {k: param_value(v) for k, v in params.items()})


class ConnectFits(LoopObserver):
    """Adds the Connect fits the shim made jobs of before each drain, so their first losses are not
    dropped, and removes the ones that ended after it, once their last losses are in."""

    def __init__(self, pools: PoolBridge, loop: EpochLoop):
        self.pools, self.loop = pools, loop
        self._ended: list[str] = []

    def before_drain(self) -> None:
        for m in self.pools.poll_connect_fits():
            if m.ended:
                self._ended.append(m.job)
                continue
            owner = fit_job(m.job, m.operation, m.estimator, m.params)
            try:
                self.loop.add(LiveJob(m.job, reports=owner.reports, owner=owner, family=m.job.split("[", 1)[0]))  # the class, as a bounded name has it
            except ValueError as exc:  # a name still open: this fit is not scheduled, the batch's others are
                log.warning("SLAQ: Spark Connect operation %s's fit %s is not scheduled: %s", m.operation, m.estimator, exc)
                continue
            log.info("SLAQ: Spark Connect operation %s fits %s: job %s", m.operation, m.estimator, m.job)

    def after_drain(self) -> None:
        ended, self._ended = self._ended, []
        for name in ended:
            self.loop.remove(name)


__all__ = ["ConnectFitJob", "ConnectFits", "estimator_kind", "fit_job", "param_value"]
