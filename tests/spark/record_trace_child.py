"""Child process of test_record_trace.py: an application that only sets confs (``spark.slaq.recordTrace`` among
them) and runs three ``slaq.job``\\ s on threads over a repartitioned, cached input, each reporting a falling loss after a
little Spark work and a pause on the driver; it stops its SparkContext, which writes the trace. Run: ``python record_trace_child.py TARGET [KEY=VALUE...]``."""

from __future__ import annotations

import json
import sys
import threading
import time

from pyspark.sql import SparkSession

import slaq


def train(data, name: str, arrival: float, iterations: int) -> None:
    time.sleep(arrival)
    with slaq.job(name) as job:
        loss = 1.0
        for _ in range(iterations):
            data.map(lambda kv: kv[1] * kv[1]).sum()  # its shuffle's map stage ran before, outside every job: skipped here
            time.sleep(0.3)  # the driver's share of an iteration: what the replay reproduces exactly
            loss *= 0.5
            job.report(loss)


def main(target: str, *confs: str) -> None:
    builder = SparkSession.builder.master("local[2]")
    for conf in confs:  # KEY=VALUE (spark.master=... too)
        builder = builder.config(*conf.split("=", 1))
    spark = (builder.appName("record-trace-child")
             .config("spark.ui.enabled", "false").config("spark.scheduler.mode", "FAIR")
             .config("spark.slaq.enabled", "true").config("spark.slaq.epoch", "500ms")
             .config("spark.slaq.recordTrace", target).getOrCreate())
    sc = spark.sparkContext
    data = sc.parallelize(range(400), 2).map(lambda x: (x % 4, x)).partitionBy(2).cache()  # a user's repartitioned, cached input
    data.count()  # before any job: not in the trace
    threads = [threading.Thread(target=train, args=(data, f"job-{k}", 0.4 * k, 6)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    app_id = sc.applicationId
    spark.stop()
    print(json.dumps({"app_id": app_id}))


if __name__ == "__main__":
    main(*sys.argv[1:])
