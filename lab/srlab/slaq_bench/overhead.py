"""Epoch-loop overhead with many registered jobs: CPU seconds the loop thread spends per wall second
while every job reports a loss every ``report_every`` seconds (real shim, real Spark driver), the part
of it spent on the per-epoch status (UI tab, driver log line), and with ``ui`` the time to serve the
Spark UI's SLAQ page and its JSON."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import slaq
from slaq.live.loop import LOOP_THREAD
from slaq.messages import EpochStatus, JobStatus
from srlab.pages import time_pages
from srlab.slaq_bench.cpu import StatusCpu, thread_cpu_s
from srsupport.session import DEFAULT_MASTER, spark_session


def time_ui_pages(ui_url: str, repeat: int = 5) -> dict:
    """Median time and size of the SLAQ tab's page and JSON (``repeat`` GETs each after a warm-up)."""
    named = (("page", "/slaq/"), ("json", "/slaq/json/"))
    timed = time_pages(ui_url, [path for _, path in named], repeat)
    return {name: {"path": path, **timed[path]} for name, path in named}


WINDOW_EPOCHS = 600  # SlaqStatus.MAX_EPOCHS: the most epochs the SLAQ tab renders


def fill_window(publish: Callable[[Any], None], jobs: int, epochs: int) -> None:
    """Publishes ``epochs`` synthetic epochs of ``jobs`` running jobs (after the live ones), to time the
    SLAQ page at the largest history the JVM keeps."""
    for e in range(epochs):
        publish(EpochStatus(10_000 + e, 10_000.0 + e, "slaq", 2.0, [
            JobStatus(f"overhead-{i:03d}", "running", e + 1, 1.0 / (e + 1), 1.0 / (e + 1), 0.01, 2.0 / jobs, 1.9 / jobs,
                      "predicted gain per core", float(e), 1.9 * e / jobs, -1.0, "", -1, -1, False, -1.0, -1.0, "", 1.0, 0.0)
            for i in range(jobs)], []))


def bench_overhead(jobs: int, seconds: float, epoch: float = 2.0, report_every: float = 0.5, master: str = DEFAULT_MASTER,
                   ui: bool = False) -> dict:
    conf = {"spark.scheduler.mode": "FAIR", "spark.slaq.enabled": "true", "spark.slaq.epoch": f"{epoch}s"}
    if ui:  # the driver's UI on loopback only (spark_session: SPARK_LOCAL_IP), on a free port
        os.environ.setdefault("SPARK_LOCAL_HOSTNAME", "127.0.0.1")
        conf |= {"spark.ui.enabled": "true", "spark.ui.port": "0"}
    with spark_session("slaq-bench-overhead", master, conf) as spark:
        scheduler = slaq.attach(spark, explicit=False)  # the confs decide: the stock configuration runs with SLAQ off
        loop = scheduler.loop
        assert loop is not None
        status_cpu_s = StatusCpu()
        loop.observers.append(status_cpu_s)  # after the runtime's publisher: its time is counted
        stop = threading.Event()
        rng = np.random.default_rng(0)

        def reporter(i: int, rate: float) -> None:
            with slaq.job(f"overhead-{i:03d}") as job:
                k = 0
                while not stop.is_set():
                    job.report(1.0 / (1.0 + rate * k) + 0.01 * rng.random())
                    k += 1
                    stop.wait(report_every)

        threads = [threading.Thread(target=reporter, args=(i, 0.05 + 0.5 * rng.random()), daemon=True) for i in range(jobs)]
        for t in threads:
            t.start()
        time.sleep(2 * epoch)  # every job registered and fitted at least once
        cpu0, status0, epochs0, t0 = thread_cpu_s(LOOP_THREAD), status_cpu_s.seconds, loop.epochs, time.monotonic()
        time.sleep(seconds)
        cpu, epochs, wall = thread_cpu_s(LOOP_THREAD) - cpu0, loop.epochs - epochs0, time.monotonic() - t0
        status_cpu = status_cpu_s.seconds - status0
        registered = len(scheduler.running_jobs())
        pages = None
        if ui and scheduler.pools is not None:
            pages = {"live": time_ui_pages(spark.sparkContext.uiWebUrl)}
            loop.stop()  # no live epochs between the synthetic ones
            fill_window(scheduler.pools.publish, jobs, WINDOW_EPOCHS)  # the worst case the JVM keeps: a full window
            pages["full_window"] = {"epochs": WINDOW_EPOCHS, **time_ui_pages(spark.sparkContext.uiWebUrl)}
        stop.set()
        for t in threads:
            t.join(10)
        scheduler.stop()
    share = cpu / wall
    return {"jobs": registered, "epoch_s": epoch, "report_every_s": report_every, "seconds": round(wall, 2), "epochs": epochs,
            "loop_cpu_s": round(cpu, 3), "cpu_ms_per_epoch": round(1000 * cpu / max(epochs, 1), 2),
            "share_of_one_core": round(share, 4), "under_5pct": share < 0.05,
            "status_cpu_ms_per_epoch": round(1000 * status_cpu / max(epochs, 1), 2),
            "status_share_of_loop_cpu": round(status_cpu / cpu, 4) if cpu > 0 else None,
            **({"ui": pages} if pages is not None else {})}
