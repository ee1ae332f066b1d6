"""Spark Connect: each spark.ml fit a Connect client submits is its own SLAQ job.

A Connect fit runs in the server's JVM on its operation's thread, where no Python hook sees it. The
shim (``ConnectFits``) opens the job there, at the fit's first task set, names it after the
estimator and the operation (``LogisticRegression@<operation id>``), puts its Spark jobs in the
job's pool and its breeze losses in the job's history, and closes it when Spark Connect reports the
operation ended. This module turns the shim's ``connect_fit`` messages into the runtime's records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from slaq.estimators import reports_loss


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
    """The record of one Connect fit's job (what the runtime keeps as its owner): the estimator, its
    params and the Connect operation, and the job's losses once the runtime has them."""

    name: str
    operation: str
    estimator: str
    params: dict[str, object] = field(default_factory=dict)
    track: Any = None  # the job's record (slaq.live.job.LiveJob)

    @property
    def losses(self) -> list[float]:
        return [] if self.track is None else list(self.track.history.losses)

    @property
    def core_seconds(self) -> float:
        """Core-seconds the job's pool ran between its first and its last loss (0 if its tasks ran elsewhere)."""
        return 0.0 if self.track is None else float(sum(self.track.history.core_seconds))

    @property
    def reports(self) -> bool | None:
        """Whether the fit logs a per-iteration loss, from the estimator catalogue."""
        return reports_loss(estimator_kind(self.estimator), self.params)


def fit_job(name: str, operation: str, estimator: str, params: Mapping[str, str]) -> ConnectFitJob:
    return ConnectFitJob(name, operation, estimator, {k: param_value(v) for k, v in params.items()})


__all__ = ["ConnectFitJob", "estimator_kind", "fit_job", "param_value"]
