"""Load the shim into a running driver JVM through py4j, once per SparkContext.

The jar ships inside the package (:data:`sparkshim.build.PACKAGED_JAR`: built with the wheel, or by
scripts/setup.sh in a checkout); loading it never compiles, so a driver needs only a Java runtime. It
is added with a child ``URLClassLoader`` of Spark's own loader, so the user adds no jar to the command
line; if the jar is already on the driver class path (``spark.driver.extraClassPath``) the parent's
copy wins. :func:`shim_for` gives a context's :class:`Shim`, whose :meth:`Shim.component` attaches one
product's JVM component (named by its registration, :mod:`sparkshim.products`): the JVM loads only the
classes of the products used.
Callers make a few coarse calls on what they return (one per epoch), never one per task.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from sparkshim.build import PACKAGED_JAR, SPARK_VERSION_ATTR, is_current, jar_manifest
from sparkshim.spark_line import in_line, supported_spark

log = logging.getLogger(__name__)
_lock = threading.Lock()
PACKAGE = "io.slaqriffle"  # shim classes are named relative to this: "seam.Shim", "<product>.<Class>"
ENTRY = "seam.Shim"  # the per-context registry the products attach to
_CONTEXT = "org.apache.spark.SparkContext"
# One class loader per jar per JVM (keyed by its py4j gateway): py4j caches reflected methods by class
# name, so a second copy of the classes (e.g. for a second SparkContext) would be called with the first's
# methods. Kept here, in the Python process that owns the gateway, not in the JVM's system properties.
_loaders: dict[tuple[int, Path], tuple[Any, Any]] = {}
# A JVM whose shim came in with the driver (the plugin's --jars): its loader, used instead of loading a copy.
_adopted: dict[int, tuple[Any, Any]] = {}


class ShimUnavailable(RuntimeError):
    """The shim could not be built or loaded into this driver."""


def in_checkout(package_dir: Path) -> bool:
    """The package runs from a source checkout (editable install or PYTHONPATH), not from a wheel."""
    return (package_dir.parent / "pyproject.toml").exists()


def packaged_jar(jar: Path | None = None) -> Path:
    """The shim jar to load (default: the package's), or ``ShimUnavailable`` naming why it cannot be and the fix."""
    jar = jar or PACKAGED_JAR
    checkout = in_checkout(jar.parents[1])
    if not jar.exists():
        if checkout:
            raise ShimUnavailable(f"this checkout's shim jar is not built ({jar} is missing): run `bash scripts/setup.sh` "
                                  "(or `python -m sparkshim.build`, which needs a JDK 17)")
        raise ShimUnavailable(f"the installed slaq-riffle has no shim jar ({jar} is missing): reinstall the slaq-riffle wheel "
                              "(pip install --force-reinstall --no-deps slaq-riffle)")
    if checkout and not is_current(jar):
        raise ShimUnavailable(f"this checkout's shim jar ({jar}) is older than the Java sources next to it: "
                              "run `python -m sparkshim.build` (or `bash scripts/setup.sh`)")
    return jar


def major_minor(version: str) -> tuple[int, ...] | None:
    parts = version.split(".")[:2]
    try:
        return tuple(int(p) for p in parts) if len(parts) == 2 else None
    except ValueError:
        return None


def spark_line_mismatch(built: str, running: str, supported: str | None = None) -> str | None:
    """One WARN line when the driver's Spark is outside the supported lines (``supported``, default: the
    package's pyspark requirement, :mod:`sparkshim.spark_line`); else None. One jar serves every supported
    line, so a driver inside them on another line than the jar was compiled against is no news. Only when
    the range or the running version cannot be read is the line the jar was built against compared.

    The jar still loads: the features that depend on Spark internals are each switched off by
    the seam's own check (``Features``) when what they need is not there.
    """
    supported = supported_spark() if supported is None else supported
    consequence = "it still loads, and any feature whose Spark internals differ is switched off by the shim's self-check"
    inside = in_line(running, supported) if supported else None
    if inside is False:
        return (f"sparkshim: this driver runs Spark {running}, outside the Spark lines slaq-riffle supports (pyspark{supported}; "
                f"the shim jar was built against Spark {built or 'an unrecorded version'}); {consequence}")
    if inside or major_minor(built) is not None and major_minor(built) == major_minor(running):
        return None
    return (f"sparkshim: the shim jar was built against Spark {built or 'an unrecorded version'} but this driver runs Spark "
            f"{running or 'of an unknown version'}; {consequence}")


def running_spark_version(gateway: Any) -> str:
    """The driver JVM's Spark version, from spark-core's manifest."""
    try:
        return str(gateway.jvm.java.lang.Class.forName("org.apache.spark.SparkContext").getPackage().getImplementationVersion() or "")
    except Exception:  # a JVM whose spark-core jar has no manifest version
        return ""


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
            log.info("sparkshim: loaded %s into the driver JVM", jar)
            built = jar_manifest(jar).get(SPARK_VERSION_ATTR, "")
            warning = spark_line_mismatch(built, running_spark_version(gateway)) if built else None
            if warning:
                log.warning(warning)
    return jvm.java.lang.Class.forName(name, True, entry[1])


def adopt(gateway: Any, loader: Any) -> None:
    """Use the shim classes ``loader`` already holds in ``gateway``'s JVM (the plugin's own, from
    ``--jars``) rather than loading the packaged jar: the plugin and the brain then share one copy, so
    the plugin can fail the brain's components open."""
    with _lock:
        _adopted[id(gateway)] = (gateway, loader)


def shim_class(gateway: Any, name: str) -> Any:
    """The ``java.lang.Class`` of ``io.slaqriffle.<name>`` (e.g. ``"seam.Messages"``) in ``gateway``'s JVM."""
    adopted = _adopted.get(id(gateway))
    if adopted is not None and adopted[0] is gateway:
        return gateway.jvm.java.lang.Class.forName(f"{PACKAGE}.{name}", True, adopted[1])
    return jar_class(gateway, packaged_jar(), f"{PACKAGE}.{name}")


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

    ``component(name)`` calls the product class's static ``attach(SparkContext)``, which registers the
    component with the JVM's ``seam.Shim`` of that context (one per context, however often asked).
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

    def component(self, name: str) -> Any:
        """The component ``io.slaqriffle.<name>`` of this context (a product's ``Product.shim_component``), installed on first use."""
        return self._attach(name)


def shim_for(sc: Any) -> Shim:
    """The :class:`Shim` of the (Python) SparkContext ``sc``."""
    cached = getattr(sc, "_slaqriffle_shim", None)
    if cached is not None:
        return cached
    shim = Shim(sc)
    sc._slaqriffle_shim = shim
    return shim
