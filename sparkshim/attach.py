"""One runtime per SparkContext and package: what ``slaq.attach`` and ``riffle.attach`` share.

A runtime is created once per context (from the context's ``spark.*`` confs, or a config the caller
passes), started on every attach (a no-op while it runs, so a runtime stopped by hand starts again),
and stopped when its context stops (``SparkContext.stop`` is wrapped once per context, for every
package) or the interpreter exits. Without an active context the runtime belongs to "no context"
(``None``): a disabled one, so the program runs as plain Python.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

log = logging.getLogger("sparkshim.attach")


class Runtime(Protocol):
    config: Any

    @property
    def enabled(self) -> bool: ...
    def start(self) -> Any: ...
    def stop(self) -> None: ...


R = TypeVar("R", bound=Runtime)
_registries: list[Attachments[Any]] = []
_STOP_WRAPPED = "_sparkshim_stop_wrapped"


def spark_context(spark: Any = None) -> Any:
    """The SparkContext of ``spark`` (a SparkSession or SparkContext); default: the active one, or None."""
    if spark is None:
        from pyspark import SparkContext

        return SparkContext._active_spark_context
    return getattr(spark, "sparkContext", spark)


def _alive(sc: Any) -> bool:
    return sc is None or getattr(sc, "_jsc", None) is not None


class Attachments(Generic[R]):
    """The runtimes of one package, keyed by SparkContext. ``make(sc, config)`` builds one (``config``
    None: read it from ``sc``'s conf); its ``start()`` and ``stop()`` must be idempotent."""

    def __init__(self, package: str, make: Callable[[Any, Any], R]):
        self.package = package
        self._make = make
        self._lock = threading.Lock()
        self._runtimes: dict[int, tuple[Any, R]] = {}  # id(sc) -> (sc, runtime); id(None) for no context
        _registries.append(self)

    def attach(self, spark: Any = None, config: Any = None) -> R:
        """The started runtime of ``spark``'s context; a new one if it has none yet, if its context
        stopped, or if ``config`` is given and differs from the runtime's."""
        sc = spark_context(spark)
        with self._lock:
            entry = self._runtimes.get(id(sc))
            stale = None
            if entry is not None and entry[0] is sc and _alive(sc) and (config is None or config == entry[1].config):
                runtime = entry[1]
            else:
                stale = None if entry is None else entry[1]
                runtime = self._make(sc, config)
                self._runtimes[id(sc)] = (sc, runtime)
                if sc is not None:
                    _wrap_stop(sc)
            runtime.start()
        if stale is not None:
            stale.stop()
        return runtime

    def current(self, spark: Any = None) -> R | None:
        """The runtime of ``spark``'s context (default: the active one) if one was attached, else None."""
        sc = spark_context(spark)
        entry = self._runtimes.get(id(sc))
        return entry[1] if entry is not None and entry[0] is sc else None

    def detach(self, spark: Any = None) -> R | None:
        """Forget and stop the runtime of ``spark``'s context; returns it (None if there was none)."""
        sc = spark_context(spark)
        with self._lock:
            entry = self._runtimes.get(id(sc))
            if entry is None or entry[0] is not sc:
                return None
            del self._runtimes[id(sc)]
        entry[1].stop()
        return entry[1]

    def detach_all(self) -> None:
        with self._lock:
            entries = list(self._runtimes.values())
            self._runtimes.clear()
        for _, runtime in entries:
            try:
                runtime.stop()
            except Exception:  # the JVM may already be gone at interpreter exit
                log.debug("%s: could not stop a runtime at exit", self.package, exc_info=True)


def _wrap_stop(sc: Any) -> None:
    """Detach every package's runtime before ``sc`` (and its executors' dirs) goes away; once per context."""
    if getattr(sc, _STOP_WRAPPED, False):
        return
    original = sc.stop

    def stop(*args: Any, **kwargs: Any) -> Any:
        for registry in list(_registries):
            try:
                registry.detach(sc)
            except Exception:
                log.exception("%s: detaching at SparkContext.stop failed", registry.package)
        return original(*args, **kwargs)

    sc.stop = stop
    setattr(sc, _STOP_WRAPPED, True)


@atexit.register
def _detach_all() -> None:
    for registry in list(_registries):
        registry.detach_all()
