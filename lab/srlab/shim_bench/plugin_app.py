"""The application that ``slaq-riffle bench plugin`` runs under both drivers: the ``riffle bench spark``
shuffle and the ``slaq bench enforce`` measurement, unchanged, from one Python process.

- ``--driver pyspark``: run by ``spark-submit plugin_app.py``: a pyspark driver, whose start-up hook
  attaches SLAQ and Riffle in this process (the in-process path).
- ``--driver jvm``: started by the benchmark's Java driver (``PluginBenchDriver``), which built the
  SparkContext itself (so the plugin started its out-of-process brain) and opened a py4j gateway for
  this process, as Spark's PythonRunner does for a Python application. This process only submits the
  workload; SLAQ's and Riffle's Python side runs in the brain.

Prints one ``PLUGIN-SAMPLE {json}`` line on stdout.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

MARK = "PLUGIN-SAMPLE "


def driver_context(driver: str) -> Any:
    """The driver's SparkContext as a pyspark one: built here (``pyspark``) or the JVM driver's (``jvm``)."""
    if driver == "pyspark":
        from pyspark.sql import SparkSession

        return SparkSession.builder.getOrCreate().sparkContext
    # This process is not the driver's Python side: the plugin's brain is. The start-up hook sees the
    # plugin in spark.plugins when the context is wrapped below and leaves attaching to that brain.
    from pyspark.java_gateway import launch_gateway

    from sparkshim.brain import wrap
    from sparkshim.bridge import adopt

    gateway = launch_gateway()  # PYSPARK_GATEWAY_PORT/SECRET from the Java driver
    entry = gateway.entry_point
    adopt(gateway, entry.shimClassLoader())  # the plugin's copy of the shim classes (one copy, as the brain does)
    return wrap(gateway, entry.context())


def riffle_jobs(sc: Any, jobs: int, maps: int, reducers: int, rows_per_map: int, payload: int) -> list[dict]:
    """``jobs`` runs of the ``riffle bench spark`` shuffle after one warm-up: job seconds and the reduce stage's metrics."""
    from pyspark.sql import SparkSession

    from srlab.riffle_bench.spark_shuffle import _metrics, _shuffle_job
    from srsupport.session import lab_instance

    spark = SparkSession(sc)
    listener = lab_instance(sc, "StageMetricsListener")
    sc._jsc.sc().addSparkListener(listener)
    _shuffle_job(spark, maps, reducers, rows_per_map, payload)  # warm-up: JIT, executors, page cache
    out = []
    for _ in range(jobs):
        t0 = time.monotonic()
        _, reduce_stage = _shuffle_job(spark, maps, reducers, rows_per_map, payload)
        out.append({"job_seconds": round(time.monotonic() - t0, 3), "reduce_stage": _metrics(listener, reduce_stage)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--driver", choices=("pyspark", "jvm"), required=True)
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--maps", type=int, default=100)
    parser.add_argument("--reducers", type=int, default=100)
    parser.add_argument("--rows-per-map", type=int, default=2000)
    parser.add_argument("--payload", type=int, default=20)
    parser.add_argument("--shares", default="0.5,0.3,0.2")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--epoch", type=float, default=1.0)
    args = parser.parse_args(argv)

    from slaq.enforce.pools import PoolBridge
    from srlab.slaq_bench.enforce import _burn, measure

    sc = driver_context(args.driver)
    shuffles = riffle_jobs(sc, args.jobs, args.maps, args.reducers, args.rows_per_map, args.payload)
    sc.parallelize(range(4), 4).map(lambda _: _burn(10)).count()  # Python workers up, as `slaq bench enforce` does
    enforce = [measure(sc, [float(s) for s in args.shares.split(",")], args.seconds, mode == "work-conserving", args.epoch)
               for mode in ("strict", "work-conserving")]
    print(MARK + json.dumps({
        "driver": args.driver, "cores": PoolBridge(sc).capacity(), "shuffles": shuffles, "enforce": enforce}), flush=True)
    if args.driver == "pyspark":
        sc.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
