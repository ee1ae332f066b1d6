"""``riffle.attach(spark)``: switch the merge scheduler on for a running SparkContext (notebooks),
and the hook that does it at SparkContext start for ``spark-submit --conf spark.riffle.enabled=true``."""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Any

from riffle.driver.config import RiffleConfig
from riffle.driver.scheduler import MergeScheduler
from sparkshim.bridge import shim_for

log = logging.getLogger("riffle")
_lock = threading.Lock()
_active: dict[int, MergeScheduler] = {}


def _context(spark: Any) -> Any:
    if spark is None:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is None:
            raise RuntimeError("riffle.attach() needs a running SparkContext (or pass the SparkSession)")
        return sc
    return getattr(spark, "sparkContext", spark)


def attach(spark: Any = None, config: RiffleConfig | None = None) -> MergeScheduler | None:
    """The merge scheduler of ``spark`` (default: the active context), started on first call.

    Returns None when ``spark.riffle.enabled`` is not true (and no ``config`` is given): the app then
    runs as plain Spark.
    """
    sc = _context(spark)
    with _lock:
        existing = _active.get(id(sc))
        if existing is not None:
            return existing
        cfg = config or RiffleConfig.from_conf(lambda k: sc.getConf().get(k))
        if not cfg.enabled:
            return None
        tracker = shim_for(sc).riffle()
        scheduler = MergeScheduler(sc, tracker, cfg)
        scheduler.start()
        _active[id(sc)] = scheduler
        _wrap_stop(sc)
        log.info("Riffle: attached to %s", sc.applicationId)
        return scheduler


def detach(spark: Any = None, cleanup: bool = True) -> None:
    """Stops merging for ``spark``; held reducers are released and merged files deleted."""
    sc = _context(spark)
    with _lock:
        scheduler = _active.pop(id(sc), None)
    if scheduler is not None:
        scheduler.stop(cleanup)


def _wrap_stop(sc: Any) -> None:
    """Delete merged files before the context (and its executors' dirs) go away."""
    if getattr(sc, "_riffle_stop_wrapped", False):
        return
    original = sc.stop

    def stop(*args: Any, **kwargs: Any) -> Any:
        try:
            detach(sc)
        except Exception:
            log.exception("Riffle: cleanup at SparkContext.stop failed")
        return original(*args, **kwargs)

    sc.stop = stop
    sc._riffle_stop_wrapped = True


@atexit.register
def _detach_all() -> None:
    for key in list(_active):
        scheduler = _active.pop(key, None)
        if scheduler is not None:
            scheduler.stop(cleanup=True)
