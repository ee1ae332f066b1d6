"""Load the shim into a running driver JVM through py4j, once per SparkContext.

The jar is added with a child ``URLClassLoader`` of Spark's own loader, so the user adds no jar to
the command line; if the jar is already on the driver class path (``spark.driver.extraClassPath``)
the parent's copy wins. :func:`shim_for` gives a context's :class:`Shim`, whose :meth:`Shim.riffle`
and :meth:`Shim.slaq` attach one product each: the JVM loads only the classes of the products used.
Callers make a few coarse calls on what they return (one per epoch), never one per task.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from sparkshim.build import BuildError, build

log = logging.getLogger(__name__)
_lock = threading.Lock()
PACKAGE = "io.slaqriffle"  # shim classes are named relative to this: "seam.Shim", "riffle.RiffleTracker"
ENTRY = "seam.Shim"  # the per-context registry the products attach to
_CONTEXT = "org.apache.spark.SparkContext"
# One class loader per jar per JVM (keyed by its py4j gateway): py4j caches reflected methods by class
# name, so a second copy of the classes (e.g. for a second SparkContext) would be called with the first's
# methods. Kept here, in the Python process that owns the gateway, not in the JVM's system properties.
_loaders: dict[tuple[int, Path], tuple[Any, Any]] = {}


class ShimUnavailable(RuntimeError):
    """The shim could not be built or loaded into this driver."""


def jar_class(gateway: Any, jar: Path, name: str) -> Any:
    """The ``java.lang.Class`` ``name`` (fully qualified) from ``jar`` in ``gateway``'s JVM, loading the jar once per JVM."""
    jvm = gateway.jvm
    with _lock:
        key = (id(gateway), jar)
        entry = _loaders.get(key)
        if entry is None or entry[0] is not gateway:
            urls = gateway.new_array(jvm.java.net.URL, 1)
            urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
            parent = jvm.java.lang.Class.forName(_CONTEXT).getClassLoader()
            entry = _loaders[key] = (gateway, jvm.java.net.URLClassLoader(urls, parent))
            log.info("sparkshim: loaded %s into the driver JVM", jar.name)
    return jvm.java.lang.Class.forName(name, True, entry[1])


def shim_class(gateway: Any, name: str) -> Any:
    """The ``java.lang.Class`` of ``io.slaqriffle.<name>`` (e.g. ``"seam.Messages"``) in ``gateway``'s JVM."""
    try:
        jar = build()
    except BuildError as exc:
        raise ShimUnavailable(str(exc)) from exc
    return jar_class(gateway, jar, f"{PACKAGE}.{name}")


def instantiate(gateway: Any, cls: Any, *args: Any) -> Any:
    """``new cls(args...)`` for a ``java.lang.Class`` ``cls`` with a public constructor of that many parameters."""
    for ctor in cls.getConstructors():
        if len(ctor.getParameterTypes()) == len(args):
            jargs = gateway.new_array(gateway.jvm.java.lang.Object, len(args))
            for i, a in enumerate(args):
                jargs[i] = a
            return ctor.newInstance(jargs)
    raise ShimUnavailable(f"{cls.getName()} has no public constructor taking {len(args)} arguments")


def new_instance(gateway: Any, name: str, *args: Any) -> Any:
    """``new io.slaqriffle.<name>(args...)`` through the shim's loader (tests build pools and clocks this way)."""
    return instantiate(gateway, shim_class(gateway, name), *args)


def _java_type(gateway: Any, type_name: str) -> Any:
    if type_name.startswith(PACKAGE + "."):
        return shim_class(gateway, type_name[len(PACKAGE) + 1:])
    return gateway.jvm.java.lang.Class.forName(type_name)


def call_static(gateway: Any, name: str, method: str, arg_types: list[str], *args: Any) -> Any:
    """``io.slaqriffle.<name>.<method>(args)`` for a static method; ``arg_types`` are fully qualified Java class names."""
    jvm = gateway.jvm
    params = gateway.new_array(jvm.java.lang.Class, len(args))
    jargs = gateway.new_array(jvm.java.lang.Object, len(args))
    for i, (type_name, arg) in enumerate(zip(arg_types, args, strict=True)):
        params[i] = _java_type(gateway, type_name)
        jargs[i] = arg
    return shim_class(gateway, name).getMethod(method, params).invoke(None, jargs)


class Shim:
    """One SparkContext's shim: each product's JVM component, attached on first use.

    ``riffle()`` and ``slaq()`` call their package's static ``attach(SparkContext)``, which registers
    the component with the JVM's ``seam.Shim`` of that context (one per context, however often asked).
    """

    def __init__(self, sc: Any):
        self._sc = sc
        self.java = self._attach(ENTRY, "install")

    def _attach(self, name: str, method: str = "attach") -> Any:
        try:
            return call_static(self._sc._gateway, name, method, [_CONTEXT], self._sc._jsc.sc())
        except ShimUnavailable:
            raise
        except Exception as exc:  # py4j surfaces JVM errors as Py4JJavaError
            raise ShimUnavailable(f"could not attach {name} in the driver JVM: {exc}") from exc

    def riffle(self) -> Any:
        """Riffle's ``RiffleTracker`` for this context (its listener and reducer gate installed)."""
        return self._attach("riffle.RiffleTracker")

    def slaq(self) -> Any:
        """SLAQ's ``SlaqPools`` for this context (its pools, UI tab and spark.ml loss capture installed)."""
        return self._attach("slaq.SlaqPools")


def shim_for(sc: Any) -> Shim:
    """The :class:`Shim` of the (Python) SparkContext ``sc``."""
    cached = getattr(sc, "_slaqriffle_shim", None)
    if cached is not None:
        return cached
    shim = Shim(sc)
    sc._slaqriffle_shim = shim
    return shim
