"""``riffle.attach(spark)``: the merge scheduler of a running SparkContext, configured by its
``spark.riffle.*`` confs and switched on by the call itself (notebooks) or, through the start-up hook,
by ``spark-submit --conf spark.riffle.enabled=true``. One :class:`RiffleRuntime` per context
(:mod:`sparkshim.attach`), stopped with the context: held reducers are released and merged files deleted.
"""

from __future__ import annotations

import logging
from typing import Any

from riffle.driver.config import PREFIX, RiffleConfig
from riffle.driver.scheduler import MergeScheduler
from riffle.product import PRODUCT
from sparkshim.announce import announce, tab_location
from sparkshim.attach import Attachments
from sparkshim.bridge import shim_for

log = logging.getLogger("riffle")


class RiffleRuntime:
    """Riffle attached to one SparkContext: the merge scheduler while enabled and started, else nothing."""

    def __init__(self, sc: Any, config: RiffleConfig):
        self.sc = sc
        self.config = config
        self.scheduler: MergeScheduler | None = None  # between start() and stop()
        self.reason = off_reason(sc, config)  # why Riffle is off (None while on)

    @property
    def enabled(self) -> bool:
        return self.reason is None

    def start(self) -> RiffleRuntime:
        """Start merging (nothing happens while disabled or already started)."""
        if self.enabled and self.scheduler is None:
            scheduler = MergeScheduler(self.sc, shim_for(self.sc).component(PRODUCT.shim_component), self.config)
            scheduler.start()
            self.scheduler = scheduler
            announce(self.sc, log, f"Riffle: on for {self.sc.applicationId} ({describe(self.config)}); "
                                   f"{tab_location(self.sc, '/riffle/', 'Riffle')}")
        return self

    def stop(self, cleanup: bool = True) -> None:
        """Stop merging: held shuffles are released unmerged and (``cleanup``) merged files deleted."""
        scheduler, self.scheduler = self.scheduler, None
        if scheduler is not None:
            scheduler.stop(cleanup)


def off_reason(sc: Any, config: RiffleConfig) -> str | None:
    """Why Riffle cannot run on ``sc`` with ``config``, with the fix, or None when it can."""
    if sc is None:
        return "no active SparkContext: create the SparkSession first, then call riffle.attach(spark)"
    if not config.enabled:
        return f"{PREFIX}enabled=false: set it to true (or leave it unset and call riffle.attach) to switch Riffle on"
    return None


def describe(config: RiffleConfig) -> str:
    """What the attach line says about ``config``: where merges go and when reducers stop waiting."""
    mergers = ",".join(config.mergers) if config.mergers else f"one per executor host at port {config.merger_port}"
    grouping = f"n-way {config.nway}" if config.policy == "nway" else f"policy {config.policy}, target block {config.target_block_bytes} bytes"
    return f"mergers {mergers}, {grouping}, best-effort {config.best_effort:g}, hold timeout {config.hold_timeout:g} s"


def _make(sc: Any, config: RiffleConfig) -> RiffleRuntime:
    return RiffleRuntime(sc, config)


_runtimes: Attachments[RiffleRuntime] = Attachments("riffle", "Riffle", PREFIX, RiffleConfig.from_conf, _make)


def attach(spark: Any = None, config: RiffleConfig | None = None, explicit: bool = True) -> RiffleRuntime:
    """Riffle for ``spark`` (a SparkSession or SparkContext; default: the active one), configured from
    its ``spark.riffle.*`` confs or from ``config``. Calling it switches Riffle on unless
    ``spark.riffle.enabled=false`` (``explicit=False``, the start-up hook's call, attaches only what
    the confs switch on). Idempotent. Always a runtime: when Riffle cannot run (no active context,
    the conf or ``config`` says disabled) ``.enabled`` is False, ``.reason`` says why and an explicit
    call logs that in one WARN line; the app runs as plain Spark."""
    return _runtimes.attach(spark, config, explicit)


def current(spark: Any = None) -> RiffleRuntime | None:
    """The runtime attached to ``spark``'s context (default: the active one), if any."""
    return _runtimes.current(spark)


def detach(spark: Any = None) -> None:
    """Stop merging for ``spark``; held reducers are released and merged files deleted."""
    _runtimes.detach(spark)
