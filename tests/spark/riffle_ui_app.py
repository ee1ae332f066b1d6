"""A real app for the Riffle tab and metrics tests (its own process: its own driver JVM with the UI and
Spark's PrometheusServlet on, bound to 127.0.0.1).

argv: local dir, an up merger's address, a down merger's address. Runs one SLAQ job to its end, then
shuffle A with both mergers listed (the up one merges every group), shuffle B with only the down one
listed (every group falls back: merger down), both of 7 map outputs merged 2 by 2 on 2 executors (so exactly one
executor is left one output that fills no group), then shuffle C and UNSAFE_FLOOD more of JVM objects (Java
serialization: unsafe to merge, never held), as spark.ml's own tiny shuffles are. A's RDD is then dropped, and
Spark's ContextCleaner cleans A up, as it does in any
application that runs on after a shuffle; B's RDD is kept. The test runs a copy of this file from a directory whose
name needs HTML escaping: PySpark names each stage after its call site (this file's path), so the
stage names the Riffle tab shows are user input. Prints {"ui": <url>, "shuffles": {"A": id, "B": id}, "unsafe": [C's id,
then the flood's, in the order seen]} once everything settled, and stops the app when its stdin closes.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from operator import add

from pyspark.sql import SparkSession

import riffle
import slaq
from riffle import messages
from riffle.driver.config import RiffleConfig
from riffle.driver.cost import CostConfig
from slaq.ml import logistic_regression, synthetic_blocks
from srsupport.riffle_watch import on_events, use_config, wait_cleaned, wait_idle

SLAQ_JOB = "short <j>"
UNSAFE_FLOOD = 20  # unsafe shuffles after C, in one job
NAMESPACE = "srtest"  # spark.metrics.namespace: the scrape's series are metrics_srtest_driver_<source>_<name>_Value


def main() -> int:
    local_dir, up, down = sys.argv[1:4]
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("riffle-ui-test")
             .config("spark.local.dir", local_dir)
             .config("spark.ui.enabled", "true").config("spark.ui.port", "0").config("spark.ui.showConsoleProgress", "false")
             .config("spark.ui.prometheus.enabled", "true")
             .config("spark.metrics.conf.*.sink.prometheusServlet.class", "org.apache.spark.metrics.sink.PrometheusServlet")
             .config("spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus")
             .config("spark.metrics.namespace", NAMESPACE)
             .config("spark.driver.memory", "1g").config("spark.shuffle.sort.bypassMergeThreshold", "1")
             .config("spark.scheduler.mode", "FAIR").config("spark.slaq.enabled", "true").config("spark.slaq.epoch", "0.5s")
             .getOrCreate())
    sc = spark.sparkContext
    slaq.attach(spark)
    blocks = synthetic_blocks(sc, 2, 100, 5, seed=3, cache=True)
    with slaq.job(SLAQ_JOB):
        logistic_regression(blocks, 12)
    config = RiffleConfig(enabled=True, mergers=(up, down), nway=2, best_effort=1.0, hold_timeout=30.0, rpc_timeout=30.0,
                          cost=CostConfig(enabled=False))
    scheduler = riffle.attach(spark, config).scheduler
    assert scheduler is not None
    data = sc.parallelize(range(6000), 7)
    shuffles = {}
    kept = []
    for key, mergers in (("A", (up, down)), ("B", (down,))):
        use_config(scheduler, dataclasses.replace(config, mergers=mergers))
        before = set(scheduler.settled)
        counts = data.map(lambda x: (x % 7, 1)).reduceByKey(add, 4)
        assert sorted(counts.collect()) == [(k, len(range(k, 6000, 7))) for k in range(7)]
        assert wait_idle(scheduler, 60)
        (shuffles[key],) = set(scheduler.settled) - before
        kept += [counts] if key == "B" else []  # A's RDD is garbage once `counts` is B's: Spark cleans shuffle A up
    unheld: list[int] = []
    with on_events(scheduler, lambda e: unheld.append(e.shuffle) if isinstance(e, messages.MapStageSubmitted) and not e.mergeable else None):
        items = sc._jvm.java.util.ArrayList()
        for i in range(40):
            items.add(f"c{i}")
        kept.append(sc._jsc.parallelize(items, 2).repartition(1))  # kept: Spark cleans only A up
        assert kept[-1].count() == 40
        deadline = time.monotonic() + 30
        while not (unheld and unheld[0] in scheduler.shuffles) and time.monotonic() < deadline:
            time.sleep(0.02)  # the scheduler registers C when the listener's event reaches it
        gw = sc._gateway
        flood = gw.new_array(gw.jvm.org.apache.spark.api.java.JavaRDD, UNSAFE_FLOOD)
        for i in range(UNSAFE_FLOOD):
            one = gw.jvm.java.util.ArrayList()
            one.add(f"f{i}")
            flood[i] = sc._jsc.parallelize(one, 1).repartition(1)
        kept.append(sc._jsc.union(flood))
        assert kept[-1].count() == UNSAFE_FLOOD
        while not (len(unheld) == 1 + UNSAFE_FLOOD and all(sid in scheduler.shuffles for sid in unheld)) and time.monotonic() < deadline:
            time.sleep(0.02)
    assert len(unheld) == 1 + UNSAFE_FLOOD, unheld
    assert wait_cleaned(scheduler, shuffles["A"], 60), "Spark did not clean shuffle A up"
    scheduler.publish()
    print(json.dumps({"ui": sc.uiWebUrl, "shuffles": shuffles, "unsafe": unheld}), flush=True)
    sys.stdin.read()  # the test closes stdin when it is done
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
