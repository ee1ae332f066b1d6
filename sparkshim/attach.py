"""One runtime per SparkContext and product: what every product's ``attach`` shares.

A runtime is created once per context (from the context's ``spark.*`` confs, or a config the caller
passes), started on every attach (a no-op while it runs, so a runtime stopped by hand starts again),
and stopped when its context stops (``SparkContext.stop`` is wrapped once per context, for every
package) or the interpreter exits. Without an active context the runtime belongs to "no context"
(``None``): a disabled one, so the program runs as plain Python.

Two callers, one path: the user's explicit ``attach`` (the call is the intent, so it switches the
package on unless its ``enabled`` conf says false, and says in one WARN line why it could not) and
the confs (the start-up hook, ``slaq.job``), which attach only what ``enabled=true`` switches on and
treat a switched-on package that cannot run as the user's config error.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from sparkshim import driver_log
from sparkshim.conf import ConfigError, keys_read, unknown_keys

log = logging.getLogger("sparkshim.attach")


class Runtime(Protocol):
    config: Any
    reason: str | None  # why it is not enabled: one line with the cause and the fix (None while enabled)

    @property
    def enabled(self) -> bool: ...
    def start(self) -> Any: ...
    def stop(self) -> None: ...


R = TypeVar("R", bound=Runtime)
ReadConfig = Callable[[Callable[[str], Any]], Any]  # a config class's from_conf
_registries: list[Attachments[Any]] = []
_STOP_WRAPPED = "_sparkshim_stop_wrapped"
_KEYS_CHECKED = "_sparkshim_keys_checked"  # on a SparkContext: the packages whose conf keys were checked


def spark_context(spark: Any = None) -> Any:
    """The SparkContext of ``spark`` (a SparkSession or SparkContext); default: the active one, or None."""
    if spark is None:
        from pyspark import SparkContext

        return SparkContext._active_spark_context
    return getattr(spark, "sparkContext", spark)


def _alive(sc: Any) -> bool:
    return sc is None or getattr(sc, "_jsc", None) is not None


class Attachments(Generic[R]):
    """The runtimes of one package (``title`` in log lines), keyed by SparkContext. ``read`` is the
    package's config parser (its ``from_conf``: the keys it reads under ``prefix`` are the known keys);
    ``make(sc, config)`` builds a runtime whose ``start()`` and ``stop()`` are idempotent."""

    def __init__(self, package: str, title: str, prefix: str, read: ReadConfig, make: Callable[[Any, Any], R]):
        self.package = package
        self.title = title
        self.prefix = prefix
        self.enabled_key = prefix + "enabled"
        self.known_keys = keys_read(read)
        self.log = logging.getLogger(package)
        self._read = read
        self._make = make
        self._lock = threading.Lock()
        self._runtimes: dict[int, tuple[Any, R, bool]] = {}  # id(sc) -> (sc, runtime, explicit); id(None) for no context
        _registries.append(self)

    def attach(self, spark: Any = None, config: Any = None, explicit: bool = True) -> R:
        """The started runtime of ``spark``'s context; a new one if it has none yet, if its context
        stopped, if ``config`` is given and differs from the runtime's, or if this ``explicit`` call
        finds a disabled runtime the confs made. ``explicit`` (the user's call) switches the package
        on unless its ``enabled`` conf is false, and a runtime it cannot switch on is one WARN line
        with its ``reason``; otherwise (the confs' call) a switched-on package that cannot run raises
        :class:`ConfigError`."""
        sc = spark_context(spark)
        if sc is not None:
            driver_log.attach(sc)  # from here on its lines (this attach's WARNs included) are driver log lines
        made = False
        with self._lock:
            entry = self._runtimes.get(id(sc))
            stale = None
            if entry is not None and _reusable(entry, sc, config, explicit):
                runtime = entry[1]
            else:
                self.check_keys(sc)
                runtime = self._make(sc, self.config_of(sc, explicit) if config is None else config)
                if not explicit and sc is not None and runtime.config.enabled and not runtime.enabled:
                    raise ConfigError(runtime.reason or f"{self.enabled_key}=true but {self.title} cannot run")
                stale = None if entry is None else entry[1]
                self._runtimes[id(sc)] = (sc, runtime, explicit)
                made = True
                if sc is not None:
                    _wrap_stop(sc)
            runtime.start()
        if stale is not None:
            stale.stop()
        if made and explicit and not runtime.enabled:
            self.log.warning("%s is off: %s", self.title, runtime.reason)
        return runtime

    def config_of(self, sc: Any, explicit: bool) -> Any:
        """The package's config from ``sc``'s confs; an ``explicit`` attach reads an unset ``enabled`` as true."""
        if sc is None:
            return self._read(lambda key: None)
        conf = sc.getConf()
        switch_on = explicit and conf.get(self.enabled_key) is None
        return self._read(lambda key: "true" if switch_on and key == self.enabled_key else conf.get(key))

    def check_keys(self, sc: Any) -> None:
        """One WARN per ``prefix`` key of ``sc``'s conf that no config reads, naming the closest known
        key; once per context (the start-up hook checks before deciding whether to attach)."""
        if sc is None:
            return
        checked: set[str] = getattr(sc, _KEYS_CHECKED, None) or set()
        if self.package in checked:
            return
        setattr(sc, _KEYS_CHECKED, checked | {self.package})
        try:
            pairs = [(str(k), v) for k, v in sc.getConf().getAll()]
        except Exception:  # a context going away: nothing to check against
            log.debug("%s: could not read the conf keys", self.package, exc_info=True)
            return
        for message in unknown_keys(pairs, self.prefix, self.known_keys):
            self.log.warning("%s: %s", self.title, message)

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
        for _, runtime, _ in entries:
            try:
                runtime.stop()
            except Exception:  # the JVM may already be gone at interpreter exit
                log.debug("%s: could not stop a runtime at exit", self.package, exc_info=True)


def registered(package: str) -> Attachments[Any] | None:
    """The attachments of product ``package`` (its name, :mod:`sparkshim.products`) once its module was imported."""
    return next((r for r in _registries if r.package == package), None)


def _reusable(entry: tuple[Any, Any, bool], sc: Any, config: Any, explicit: bool) -> bool:
    known, runtime, made_explicitly = entry
    if known is not sc or not _alive(sc) or (config is not None and config != runtime.config):
        return False
    return runtime.enabled or made_explicitly or not explicit  # an explicit call tries again what the confs left off


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
def detach_all() -> None:
    """Stop every runtime of every package (at interpreter exit, and when the brain is asked to stop)."""
    for registry in list(_registries):
        registry.detach_all()
