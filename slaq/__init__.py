"""SLAQ: quality-driven scheduling of many concurrent ML training jobs in one Spark application.

``slaq.attach(spark)``, ``with slaq.job(name) as job:``, ``job.report(loss)`` or
``slaq.report_loss(loss)``, ``job.should_stop()``. Switched on by ``slaq.attach`` or ``spark.slaq.enabled=true``.
"""

from slaq.api import InvalidReport, JobClosed, NoActiveJob, attach, current_job, detach, job, report_loss
from slaq.runtime import SlaqRuntime

__all__ = ["InvalidReport", "JobClosed", "NoActiveJob", "SlaqRuntime", "attach", "current_job", "detach", "job", "report_loss"]
