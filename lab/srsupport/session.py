"""An embedded Spark session for the live benchmarks and demos (local-cluster by default)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DEFAULT_MASTER = "local-cluster[2,1,1024]"
LAB_JAVA = Path(__file__).resolve().parents[1] / "java"  # the benchmarks' own JVM classes (not in the product jar)
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]")


def executor_memory(master: str, mb: int) -> tuple[str, dict[str, str]]:
    """The master and conf that give every executor ``mb`` MiB of heap: ``spark.executor.memory``, and
    on a ``local-cluster[n,cores,worker MiB]`` master a worker memory of at least ``mb`` (Spark refuses
    an executor larger than its worker; the worker's third field alone does not size the executor)."""
    if mb < 512:
        raise ValueError(f"executor memory must be at least 512 MiB (Spark reserves 300 MiB of it); got {mb}")
    m = _LOCAL_CLUSTER.fullmatch(master.strip())
    if m is not None and int(m.group(3)) < mb:
        master = f"local-cluster[{m.group(1)},{m.group(2)},{mb}]"
    return master, {"spark.executor.memory": f"{mb}m"}


def lab_jar() -> Path:
    """The lab jar (``io.slaqriffle.lab``: NodeShuffleService, StageMetricsListener), built like the shim's
    (compiled again only when its sources changed)."""
    from sparkshim.build import JarSpec, build

    return build(spec=JarSpec((LAB_JAVA,), LAB_JAVA.parent / "build" / "slaq-riffle-lab.jar"))


def lab_instance(sc: Any, name: str, *args: Any) -> Any:
    """``new io.slaqriffle.lab.<name>(args...)`` in ``sc``'s driver JVM (the lab jar loaded once per JVM)."""
    from sparkshim.bridge import instantiate, jar_class

    return instantiate(sc._gateway, jar_class(sc._gateway, lab_jar(), f"io.slaqriffle.lab.{name}"), *args)


def neutral_gateway() -> None:
    """Start pyspark's JVM gateway with no application conf, if it is not running yet.

    pyspark launches the gateway through spark-submit with the *first* context's conf, which becomes
    JVM system properties that every later SparkConf in the process loads as defaults: a key only the
    first session set (say ``spark.shuffle.service.enabled``) would silently apply to every later one.
    """
    from pyspark import SparkContext

    SparkContext._ensure_initialized()


def shutdown_gateway(timeout: float = 30.0) -> None:
    """Stop pyspark's JVM gateway (after the last context stopped), so the next context gets a new JVM.

    One JVM keeps state across contexts that no conf resets, e.g. the local root dirs Spark computes
    once per JVM (``Utils.getOrCreateLocalRootDirs``): a later local-cluster app would write its
    shuffle files under the first app's dirs. Tests that run differently configured apps in one
    process use this between them.
    """
    import subprocess

    from pyspark import SparkContext

    with SparkContext._lock:
        if SparkContext._active_spark_context is not None:
            raise RuntimeError("a SparkContext is still running; stop it before shutting the gateway down")
        gateway, SparkContext._gateway, SparkContext._jvm = SparkContext._gateway, None, None
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    if proc is not None:
        if proc.stdin is not None:
            proc.stdin.close()  # pyspark's gateway JVM exits when its stdin closes
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def spark_session(name: str, master: str = DEFAULT_MASTER, conf: dict[str, str] | None = None, executors: int = 0) -> Iterator[Any]:
    """A fresh quiet SparkSession on loopback whose executors run this Python (so numpy and this package are there).

    ``executors``: wait until that many have registered (a standalone app's executors come up after
    the context does; measuring before that would measure fewer nodes)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the driver binds loopback, not the machine's first interface
    neutral_gateway()
    builder = (SparkSession.builder.master(master).appName(name)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        if executors:
            from srlab.cluster import wait_executors

            wait_executors(spark.sparkContext, executors)
        yield spark
    finally:
        spark.stop()
