"""``riffle.attach(spark)``: the merge scheduler of a running SparkContext, switched on by its
``spark.riffle.*`` confs (notebooks call it; the start-up hook calls it for ``spark-submit --conf
spark.riffle.enabled=true``). One :class:`RiffleRuntime` per context (:mod:`sparkshim.attach`),
stopped with the context: held reducers are released and merged files deleted.
"""

from __future__ import annotations

import logging
from typing import Any

from riffle.driver.config import RiffleConfig
from riffle.driver.scheduler import MergeScheduler
from sparkshim.attach import Attachments
from sparkshim.bridge import shim_for

log = logging.getLogger("riffle")


class RiffleRuntime:
    """Riffle attached to one SparkContext: the merge scheduler while enabled and started, else nothing."""

    def __init__(self, sc: Any, config: RiffleConfig):
        self.sc = sc
        self.config = config
        self.scheduler: MergeScheduler | None = None  # between start() and stop()

    @property
    def enabled(self) -> bool:
        return self.config.enabled and self.sc is not None

    def start(self) -> RiffleRuntime:
        """Start merging (nothing happens while disabled or already started)."""
        if self.enabled and self.scheduler is None:
            scheduler = MergeScheduler(self.sc, shim_for(self.sc).riffle(), self.config)
            scheduler.start()
            self.scheduler = scheduler
            log.info("Riffle: attached to %s", self.sc.applicationId)
        return self

    def stop(self, cleanup: bool = True) -> None:
        """Stop merging: held shuffles are released unmerged and (``cleanup``) merged files deleted."""
        scheduler, self.scheduler = self.scheduler, None
        if scheduler is not None:
            scheduler.stop(cleanup)


def _make(sc: Any, config: RiffleConfig | None) -> RiffleRuntime:
    if config is None:
        config = RiffleConfig() if sc is None else RiffleConfig.from_conf(lambda k: sc.getConf().get(k))
    return RiffleRuntime(sc, config)


_runtimes: Attachments[RiffleRuntime] = Attachments("riffle", _make)


def attach(spark: Any = None, config: RiffleConfig | None = None) -> RiffleRuntime:
    """Riffle for ``spark`` (a SparkSession or SparkContext; default: the active one), configured from
    its ``spark.riffle.*`` confs or from ``config``. Idempotent. Always a runtime: ``.enabled`` is False
    when ``spark.riffle.enabled`` is not true (or no context is active), and the app runs as plain Spark."""
    return _runtimes.attach(spark, config)


def current(spark: Any = None) -> RiffleRuntime | None:
    """The runtime attached to ``spark``'s context (default: the active one), if any."""
    return _runtimes.current(spark)


def detach(spark: Any = None) -> None:
    """Stop merging for ``spark``; held reducers are released and merged files deleted."""
    _runtimes.detach(spark)
