"""SLAQ: quality-driven scheduling of many concurrent ML training jobs in one Spark application.

``slaq.attach(spark)``, ``with slaq.job(name) as job:``, ``job.report(loss)`` or
``slaq.report_loss(loss)``, ``job.should_stop()``. Switched on by ``slaq.attach`` or ``spark.slaq.enabled=true``.
The API is imported on first use, so the ``slaq`` command (:mod:`slaq.console`) starts with the standard library
alone and names a missing dependency in one line.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slaq.api import InvalidReport, JobClosed, NoActiveJob, attach, current_job, detach, job, report_loss
    from slaq.runtime import SlaqRuntime

__all__ = ["InvalidReport", "JobClosed", "NoActiveJob", "SlaqRuntime", "attach", "current_job", "detach", "job", "report_loss"]


def __dir__() -> list[str]:
    """The API, though imported on first use, and only it (not this module's own imports): what a notebook's tab
    completion lists."""
    return sorted({n for n in globals() if n.startswith("__")} | set(__all__))


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'slaq' has no attribute {name!r}")
    return getattr(importlib.import_module("slaq.runtime" if name == "SlaqRuntime" else "slaq.api"), name)
