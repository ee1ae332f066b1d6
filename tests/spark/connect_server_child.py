"""Child process of test_connect.py: a Spark driver with SLAQ attached that serves Spark Connect.

It starts a SparkSession on ``local-cluster[2,1,1024]`` with SLAQ on (no web UI: nothing reads it), starts Spark's own
``SparkConnectService`` on that context (loopback, on PORT or a free port), prints one JSON line
(``{"port": ..., "slaq": ...}``) and then serves until stdin closes. Lines on stdin are commands:
``detach`` / ``attach`` switch SLAQ off and on again (the test's SLAQ-off reference runs on the same
server and data), ``jobs`` prints the names and captured losses of the SLAQ jobs finished so far as
one JSON line. Run: ``python connect_server_child.py LOCAL_DIR [PORT]``.
"""

from __future__ import annotations

import json
import os
import socket
import sys

from pyspark.sql import SparkSession

import slaq


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(local_dir: str, port: int) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("slaq-connect-server")
             .config("spark.local.dir", local_dir)
             .config("spark.driver.memory", "1g")
             .config("spark.ui.enabled", "false")
             .config("spark.scheduler.mode", "FAIR")
             .config("spark.slaq.enabled", "true")
             .config("spark.slaq.epoch", "0.5s")
             .config("spark.connect.grpc.binding.address", "127.0.0.1")
             .config("spark.connect.grpc.binding.port", str(port))
             .getOrCreate())
    runtime = slaq.attach(spark)
    sc = spark.sparkContext
    service = sc._jvm.org.apache.spark.sql.connect.service.SparkConnectService
    service.start(sc._jsc.sc())
    print(json.dumps({"port": port, "slaq": runtime.enabled}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "detach":
            slaq.detach(spark)
        elif command == "attach":
            runtime = slaq.attach(spark)
        elif command == "jobs":
            runtime.sync()
            jobs = [{"name": j.name, "losses": list(j.history.losses), "core_seconds": float(sum(j.history.core_seconds))}
                    for j in runtime.jobs.finished()]
            print(json.dumps({"jobs": jobs, "running": runtime.running_jobs()}), flush=True)
            continue
        print(json.dumps({"done": command}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else free_port())
