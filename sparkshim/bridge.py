"""Load the shim into a running driver JVM through py4j, once per SparkContext.

The jar is added with a child ``URLClassLoader`` of Spark's own loader, so the user adds no jar to
the command line; if the jar is already on the driver class path (``spark.driver.extraClassPath``)
the parent's copy wins. The returned object is the Java ``Shim``: callers make a few coarse calls
on it (one per epoch), never one per task.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sparkshim.build import BuildError, build

log = logging.getLogger(__name__)
_lock = threading.Lock()
ENTRY = "io.slaqriffle.shim.Shim"
LOADER_KEY = "io.slaqriffle.shim.loader"


class ShimUnavailable(RuntimeError):
    """The shim could not be built or loaded into this driver."""


def shim_for(sc: Any) -> Any:
    """The Java ``Shim`` of the (Python) SparkContext ``sc``."""
    with _lock:
        cached = getattr(sc, "_slaqriffle_shim", None)
        if cached is not None:
            return cached
        try:
            jar = build()
        except BuildError as exc:
            raise ShimUnavailable(str(exc)) from exc
        jvm, gateway = sc._jvm, sc._gateway
        jsc = sc._jsc.sc()
        try:
            props = jvm.java.lang.System.getProperties()
            loader = props.get(LOADER_KEY)
            if loader is None:
                # One loader per JVM: py4j caches reflected methods by class name, so a second copy of
                # the classes (e.g. for a second SparkContext) would be called with the first's methods.
                urls = gateway.new_array(jvm.java.net.URL, 1)
                urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
                loader = jvm.java.net.URLClassLoader(urls, jsc.getClass().getClassLoader())
                props.put(LOADER_KEY, loader)
            entry = jvm.java.lang.Class.forName(ENTRY, True, loader)
            params = gateway.new_array(jvm.java.lang.Class, 1)
            params[0] = jvm.java.lang.Class.forName("org.apache.spark.SparkContext")
            args = gateway.new_array(jvm.java.lang.Object, 1)
            args[0] = jsc
            shim = entry.getMethod("install", params).invoke(None, args)
        except Exception as exc:  # py4j surfaces JVM errors as Py4JJavaError
            raise ShimUnavailable(f"could not load {jar.name} into the driver JVM: {exc}") from exc
        log.info("sparkshim: loaded %s into the driver JVM", jar.name)
        sc._slaqriffle_shim = shim
        return shim
