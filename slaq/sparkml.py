"""Zero-change tuning: every leaf spark.ml fit runs as its own SLAQ job.

A *leaf* fit is one that reaches ``JavaEstimator._fit`` (LogisticRegression, KMeans, ...), not a
meta-estimator (CrossValidator, TrainValidationSplit, Pipeline, OneVsRest), whose own ``_fit`` only
calls leaf fits. While SLAQ is attached and enabled, the hook below wraps that one method; the
wrapper asks the runtime whether to open a job (it does not when the calling thread is already in a
``slaq.job``: an explicit choice wins). The hook is a class attribute, installed on attach and
removed on detach: no thread or process state of the user's program changes.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Mapping
from typing import Any

from slaq.estimators import reports_loss

MAX_NAME = 160  # characters of a generated job name, before its "#N" suffix

# (estimator, the original fit bound to it) -> the fitted model
FitRunner = Callable[[Any, Callable[[], Any]], Any]

_lock = threading.Lock()
_installed: tuple[Any, FitRunner] | None = None  # (the original JavaEstimator._fit, the runner it calls)


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else str(value)
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_format_value(v) for v in value) + "]"
    return type(value).__name__  # vectors, matrices, nested estimators: their type is enough to read


def fit_job_name(estimator: str, params: Mapping[str, object], seq: int) -> str:
    """``LogisticRegression[elasticNetParam=0,regParam=0.1]#3``: the estimator, its hyperparameters
    (sorted, tabs and newlines removed) and a sequence number that keeps the name unique while it runs."""
    body = one_line(",".join(f"{k}={_format_value(v)}" for k, v in sorted(params.items())), MAX_NAME)
    return f"{estimator}[{body}]#{seq}"


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (runs of whitespace, newlines and tabs included, become one space), at most
    ``limit`` characters, the last an ellipsis when cut: job names may not hold tabs or newlines, and a
    Py4JJavaError's text carries the whole Java stack."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def hyperparameters(estimator: Any) -> dict[str, object]:
    """The params the user (or a tuning param map) set explicitly, without column wiring (``*Col``/``*Cols``)."""
    return {p.name: v for p, v in estimator._paramMap.items() if not p.name.endswith(("Col", "Cols"))}


def install(runner: FitRunner) -> None:
    """Route every ``JavaEstimator._fit`` through ``runner``; replaces a previous runner."""
    global _installed
    from pyspark.ml.wrapper import JavaEstimator

    with _lock:
        original = _installed[0] if _installed is not None else JavaEstimator._fit

        @functools.wraps(original)
        def _fit(self: Any, dataset: Any) -> Any:
            return runner(self, lambda: original(self, dataset))

        _fit.__slaq_hook__ = True  # type: ignore[attr-defined]
        JavaEstimator._fit = _fit  # type: ignore[method-assign]
        _installed = (original, runner)


def uninstall(runner: FitRunner | None = None) -> None:
    """Restore pyspark's own ``JavaEstimator._fit`` (only if ``runner``, when given, is the installed one)."""
    global _installed
    from pyspark.ml.wrapper import JavaEstimator

    with _lock:
        if _installed is None or (runner is not None and _installed[1] != runner):
            return
        JavaEstimator._fit = _installed[0]  # type: ignore[method-assign]
        _installed = None


def installed() -> bool:
    return _installed is not None


__all__ = ["MAX_NAME", "FitRunner", "fit_job_name", "hyperparameters", "install", "installed", "one_line", "reports_loss",
           "uninstall"]
