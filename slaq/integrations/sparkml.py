"""Zero-change tuning: every leaf spark.ml fit runs as its own SLAQ job, and so does every fit of a Pipeline a tuner tunes.

A *leaf* fit is one that reaches ``JavaEstimator._fit`` (LogisticRegression, KMeans, ...), not a
meta-estimator (CrossValidator, TrainValidationSplit, Pipeline, OneVsRest), whose own ``_fit`` only
calls leaf fits. While SLAQ is attached and enabled, the hook below wraps that method and ``Pipeline._fit``;
the wrapper (:func:`run_fit`) opens a job for the fit unless the calling thread is already in a
``slaq.job`` (an explicit choice wins). A Pipeline's fit is a job only when a CrossValidator or
TrainValidationSplit tunes it (:mod:`~slaq.integrations.tuners`): it is then one fit of its candidate, its stages'
fits run inside its job (a LogisticRegression stage's captured losses are the job's), and only the refit is the
refit; outside tuners each stage's fit is a job of its own. The hooks are class attributes, installed on attach
and removed on detach: no thread or process state of the user's program changes.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, Protocol

from slaq.integrations import tuners
from slaq.integrations.catalogue import reports_loss
from slaq.jobs import Job, JobRuntime, attached_runtime, current_job
from slaq.live.status import NOT_TUNING
from slaq.names import fit_job_name, one_line, shown

log = logging.getLogger("slaq")


class FitRuntime(JobRuntime, Protocol):
    """What the hook uses of the runtime that installed it (:class:`slaq.runtime.SlaqRuntime`)."""

    attached: bool  # between its start() and stop()

    def next_fit_number(self) -> int: ...


_lock = threading.Lock()
_installed: tuple[dict[type, Any], FitRuntime] | None = None  # (each hooked class's own _fit, the runtime whose fits they route)


def hyperparameters(estimator: Any) -> dict[str, object]:
    """The params the user (or a tuning param map) set explicitly, without column wiring (``*Col``/``*Cols``); a
    Pipeline's are its stages', each as ``Stage.param``."""
    stages = getattr(estimator, "getStages", None)
    if callable(stages):
        return {f"{type(stage).__name__}.{k}": v for stage in stages() for k, v in hyperparameters(stage).items()}
    return {p.name: v for p, v in estimator._paramMap.items() if not p.name.endswith(("Col", "Cols"))}


def reports(estimator: Any) -> bool | None:
    """Whether a fit of ``estimator`` will report per-iteration losses (:func:`reports_loss`); a Pipeline's does when
    one of its estimators does, and does not when none of them can."""
    from pyspark.ml.base import Estimator

    stages = getattr(estimator, "getStages", None)
    if not callable(stages):
        return reports_loss(type(estimator).__name__, hyperparameters(estimator))
    found = [reports(stage) for stage in stages() if isinstance(stage, Estimator)]
    return True if True in found else False if all(f is False for f in found) else None


def run_fit(runtime: FitRuntime, estimator: Any, fit: Callable[[], Any], leaf: bool = True) -> Any:
    """``fit()``, a fit of ``estimator`` (a ``leaf``, else a Pipeline's: a job only when a tuner tunes it): in its own
    job, unless the calling thread already is in one (that choice wins) or ``runtime`` is not started, enabled and
    attached to the active context any more. A job that cannot open leaves the fit to run as
    plain Spark work, with one WARN: SLAQ never makes a fit fail that succeeds without it."""
    if not (runtime.attached and runtime.enabled):
        return fit()
    if attached_runtime() is not runtime or current_job() is not None:
        return fit()
    tuning = tuners.place_of(estimator)  # its CrossValidator/TrainValidationSplit place: shown grouped in the UI tab
    if not leaf and tuning == NOT_TUNING:
        return fit()  # a Pipeline outside tuners: each stage's fit is a job of its own
    name = fit_job_name(type(estimator).__name__, hyperparameters(estimator), runtime.next_fit_number())
    with ExitStack() as block:
        try:
            block.enter_context(Job(name, reports=reports(estimator), tuning=tuning, family=type(estimator).__name__))
        except Exception as exc:  # only opening the job is guarded: the fit's own errors are the user's
            log.warning("SLAQ: spark.ml fit %s runs as plain Spark work, not as a SLAQ job: %s: %s", shown(name), type(exc).__name__,
                        one_line(str(exc), 300))
        return fit()


def _hooked() -> dict[type, bool]:
    """The classes whose ``_fit`` is hooked, each with whether its fits are leaf fits."""
    from pyspark.ml import Pipeline
    from pyspark.ml.wrapper import JavaEstimator

    return {JavaEstimator: True, Pipeline: False}


def install(runtime: FitRuntime) -> None:
    """Route every ``JavaEstimator._fit`` and ``Pipeline._fit`` through :func:`run_fit` for ``runtime``; replaces a
    previous runtime's."""
    global _installed

    with _lock:
        originals = _installed[0] if _installed is not None else {cls: cls.__dict__["_fit"] for cls in _hooked()}
        for cls, leaf in _hooked().items():
            original = originals[cls]

            def _fit(self: Any, dataset: Any, _original: Any = original, _leaf: bool = leaf) -> Any:
                return run_fit(runtime, self, lambda: _original(self, dataset), _leaf)

            functools.update_wrapper(_fit, original)
            _fit.__slaq_hook__ = True  # type: ignore[attr-defined]
            setattr(cls, "_fit", _fit)  # noqa: B010 (either class)
        _installed = (originals, runtime)


def uninstall(runtime: FitRuntime | None = None) -> None:
    """Restore pyspark's own ``_fit`` methods (only if ``runtime``, when given, is the one installed)."""
    global _installed

    with _lock:
        if _installed is None or (runtime is not None and _installed[1] is not runtime):
            return
        for cls, original in _installed[0].items():
            setattr(cls, "_fit", original)  # noqa: B010 (either class)
        _installed = None


def installed() -> bool:
    return _installed is not None


__all__ = ["FitRuntime", "hyperparameters", "install", "installed", "run_fit", "uninstall"]
