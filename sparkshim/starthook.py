"""Attach the registered products (:mod:`sparkshim.products`) when a SparkContext starts, so ``spark-submit
--conf spark.<product>.enabled=true app.py`` works with no change to the application.

The wheel (or, in a checkout, ``scripts/setup.sh`` through ``python -m sparkshim.autoload install``) puts a one-line ``.pth`` file in
the environment's site-packages; at interpreter start it only registers an import hook, which
wraps ``SparkContext.__init__`` the first time pyspark's context module is imported. Nothing else
is imported until an application actually creates a SparkContext with one of the flags on.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import logging
import sys
from typing import Any

log = logging.getLogger("sparkshim.starthook")
TARGET = "pyspark.core.context"
PTH_NAME = "slaq_riffle_autoload.pth"
# A .pth line must never break interpreter start-up (e.g. after the package was removed).
PTH_LINE = 'import sys; exec("try:\\n import sparkshim.starthook as h; h.register()\\nexcept Exception:\\n pass")\n'


# The JVM plugin (sparkshim/java/io/slaqriffle/SlaqRifflePlugin.java): in a driver it starts, its brain attaches.
PLUGIN_CLASS = "io.slaqriffle.SlaqRifflePlugin"
JSC_ARG = 9  # SparkContext.__init__'s positional index of ``jsc`` (pyspark 4)


def attach_enabled(sc: Any) -> None:
    """Attach every registered product (:mod:`sparkshim.products`) that ``sc``'s conf switches on (parsed
    exactly as the products parse it), through the product's ``attach`` with ``explicit=False``: the
    runtimes the application later gets from it are these (:mod:`sparkshim.attach` keeps one per context
    and stops it with the context). A product with any key in the conf is imported to check its keys
    first, so a misspelt key (even ``enabled``) is a WARN naming the closest known one; a product with
    none is not imported at all.

    A bad ``spark.<product>.*`` value is the user's to fix, so it stops the application here, at start,
    with one line naming the key (the context is stopped and ``ConfigError`` raised; a script under
    spark-submit prints just that line). Any other failure to attach is ours: it is logged and the app
    runs as plain Spark.
    """
    import importlib

    from sparkshim import driver_log
    from sparkshim.attach import registered
    from sparkshim.conf import ConfigError, enabled
    from sparkshim.products import conf_prefix, product, product_names

    conf = sc.getConf()
    keys = [str(k) for k, _ in conf.getAll()]
    for name in product_names():
        prefix = conf_prefix(name)
        if not any(k.startswith(prefix) for k in keys):
            continue
        without = "as plain Spark"
        try:
            driver_log.attach(sc)  # a misspelt key's WARN below is a driver log line
            registration = product(name)
            without = registration.without
            importlib.import_module(registration.attachments_module)
            attachments = registered(name)
            if attachments is not None:
                attachments.check_keys(sc)
            if not enabled(conf.get, prefix + "enabled"):
                continue
            importlib.import_module(name).attach(sc, explicit=False)
        except ConfigError as exc:
            _print_config_errors_in_one_line()
            try:
                sc.stop()
            finally:
                raise ConfigError(f"{name}: {exc}") from None
        except Exception:
            log.exception("%s could not attach; the application runs %s", name, without)


def _print_config_errors_in_one_line() -> None:
    """An uncaught ``ConfigError`` in a script prints as one line, not a traceback (notebooks, which
    show exceptions their own way, are unaffected)."""
    from sparkshim.conf import ConfigError

    previous = sys.excepthook
    if getattr(previous, "_slaq_riffle", False):
        return

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        if issubclass(kind, ConfigError):
            print(f"error: {value}", file=sys.stderr)
        else:
            previous(kind, value, tb)

    hook._slaq_riffle = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def plugin_configured(plugins: str | None) -> bool:
    """Whether ``spark.plugins`` lists SLAQ/Riffle's plugin. A Python process that wraps a JVM driver's running
    context (``SparkContext(jsc=...)``: an application launched by a Java driver, or the plugin's own brain)
    must then leave attaching to the plugin's brain: a second attach would drain the same JVM queues."""
    return PLUGIN_CLASS in [p.strip() for p in (plugins or "").split(",")]


def patch(module: Any) -> None:
    cls = module.SparkContext
    if getattr(cls, "_slaq_riffle_patched", False):
        return
    original = cls.__init__

    @functools.wraps(original)  # pyspark's own signature and docstring stay visible
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        wraps_running = kwargs.get("jsc") is not None or (len(args) > JSC_ARG and args[JSC_ARG] is not None)
        if wraps_running and plugin_configured(self.getConf().get("spark.plugins", "")):
            log.debug("SLAQ/Riffle: a wrapped JVM driver's SparkContext with %s: attaching is its brain's, not this "
                      "start hook's", PLUGIN_CLASS)
            return
        attach_enabled(self)

    cls.__init__ = __init__
    cls._slaq_riffle_patched = True


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        exec_module = loader.exec_module  # type: ignore[union-attr]

        def exec_and_patch(module: Any) -> None:
            exec_module(module)
            patch(module)

        loader.exec_module = exec_and_patch  # type: ignore[union-attr, method-assign]
        return spec


def register() -> None:
    """Called from the .pth file at interpreter start: cheap, imports nothing heavy."""
    if TARGET in sys.modules:
        patch(sys.modules[TARGET])
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
