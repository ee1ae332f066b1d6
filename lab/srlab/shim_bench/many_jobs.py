"""What thousands of open SLAQ jobs cost one pyspark driver (issue #47): the driver JVM's heap, the epoch's
length, the SLAQ tab's pages and how fast the jobs close, with real ``slaq.job`` blocks and the real epoch loop.

One local driver (``local[2]``, the UI on 127.0.0.1, a heap of ``driver_memory``) opens ``jobs`` jobs from one
thread, each reporting ``losses`` losses; then the loop runs ``epochs`` epochs (each epoch's length is the time
between two statuses the loop published), the heap in use is read after a full GC (``jcmd``) before and after
them (its growth per epoch: what 600 kept epochs would cost), ``/slaq/json/?epochs=1`` and ``/slaq/`` are
fetched, and the jobs are closed, oldest first (``closes`` of them, 0: all; jobs closed per second). Pool WARNs (the loop too slow for
``spark.slaq.failOpenEpochs``) are counted from the driver's log.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import threading
import time
import urllib.error
from pathlib import Path
from typing import Any

from slaq.live.observer import LoopObserver
from slaq.messages import EpochStatus
from srlab.pages import fetch
from srlab.shim_bench.history_server import spark_java_tool

LOG4J = """rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss}} %p %c: %m%n
"""


class Epochs(LoopObserver):
    """When each status was published (the loop's thread), so a caller can wait for the next ones."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._cond = threading.Condition()

    def on_status(self, status: EpochStatus) -> None:
        with self._cond:
            self.times.append(time.monotonic())
            self._cond.notify_all()

    def wait(self, n: int, timeout: float) -> list[float]:
        """The publication times of ``n`` more epochs than seen so far."""
        with self._cond:
            goal = len(self.times) + n
            if not self._cond.wait_for(lambda: len(self.times) >= goal, timeout):
                raise TimeoutError(f"{n} epochs not published within {timeout} s")
            return self.times[goal - n - 1: goal]


def heap_used_mib(pid: int) -> float:
    """The heap JVM ``pid`` uses after a full GC, in MiB (``jcmd``)."""
    jcmd = spark_java_tool("jcmd")
    subprocess.run([jcmd, str(pid), "GC.run"], capture_output=True, check=True, timeout=120)
    info = subprocess.run([jcmd, str(pid), "GC.heap_info"], capture_output=True, text=True, check=True, timeout=120).stdout
    m = re.search(r"used (\d+)K", info)
    if m is None:
        raise ValueError(f"no heap figure in jcmd's answer: {info[:300]}")
    return round(int(m.group(1)) / 1024, 1)


def page(url: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        body = fetch(url, timeout=600)
    except (urllib.error.URLError, OSError) as exc:
        return {"ok": False, "error": str(exc)[:200], "seconds": round(time.perf_counter() - t0, 2)}
    return {"ok": True, "bytes": len(body.encode()), "seconds": round(time.perf_counter() - t0, 2)}


def bench_many_jobs(jobs: int = 10_000, epochs: int = 20, losses: int = 1, epoch: float = 0.5, driver_memory: str = "1g",
                    name_bytes: int = 16, closes: int = 0) -> dict[str, Any]:
    from pyspark import SparkConf, SparkContext

    import slaq

    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        log_file = Path(tmp) / "driver.log"
        props = Path(tmp) / "log4j2.properties"
        props.write_text(LOG4J.format(path=log_file))
        conf = (SparkConf().setMaster("local[2]").setAppName("bench-many-jobs").set("spark.ui.enabled", "true").set("spark.ui.port", "0")
                .set("spark.driver.bindAddress", "127.0.0.1").set("spark.driver.host", "127.0.0.1")
                .set("spark.ui.showConsoleProgress", "false").set("spark.scheduler.mode", "FAIR").set("spark.driver.memory", driver_memory)
                .set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={props.as_uri()}")
                .set("spark.slaq.enabled", "true").set("spark.slaq.epoch", f"{epoch}s"))
        sc = SparkContext(conf=conf)
        try:
            runtime = slaq.attach(sc)
            assert runtime.loop is not None
            watch = Epochs()
            runtime.loop.observers.append(watch)
            jvm = sc._jvm
            assert jvm is not None
            pid = int(jvm.java.lang.ProcessHandle.current().pid())
            pad = "x" * max(name_bytes - 10, 0)
            t0 = time.perf_counter()
            opened = []
            for i in range(jobs):
                j = slaq.job(f"j{i:06d}{pad}")
                j.__enter__()
                for k in range(losses):
                    j.report(1.0 / (k + 1))
                opened.append(j)
            open_seconds = time.perf_counter() - t0
            watch.wait(2, 600)  # every job in the loop's histories and statuses
            heap_before = heap_used_mib(pid)
            times = watch.wait(epochs, 600 + 10 * epochs)
            heap_after = heap_used_mib(pid)
            lengths = [b - a for a, b in zip(times, times[1:])]
            base = str(sc.uiWebUrl)
            pages = {p: page(base + p) for p in ("/slaq/json/?epochs=1", "/slaq/json/", "/slaq/")}
            closing = opened[: closes or jobs]  # the first opened first: the registry's worst case
            t0 = time.perf_counter()
            for j in closing:
                j.__exit__(None, None, None)
            close_seconds = time.perf_counter() - t0
        finally:
            sc.stop()
        warns = sum(1 for line in log_file.read_text(errors="replace").splitlines() if " WARN io.slaqriffle.slaq.PoolMode" in line)
        errors = [line[:200] for line in log_file.read_text(errors="replace").splitlines() if "OutOfMemoryError" in line][:3]
    return {
        "jobs": jobs, "losses_each": losses, "epoch_s": epoch, "driver_memory": driver_memory, "name_bytes": name_bytes,
        "open_per_s": round(jobs / open_seconds, 1),
        "epoch_seconds": {"median": round(sorted(lengths)[len(lengths) // 2], 3), "max": round(max(lengths), 3)},
        "heap_mib": {"before": heap_before, "after": heap_after, "per_epoch": round((heap_after - heap_before) / epochs, 3),
                     "at_600_epochs_est": round(heap_before + 600 * max(heap_after - heap_before, 0) / epochs, 1)},
        "pages": pages, "closed": len(closing), "close_per_s": round(len(closing) / close_seconds, 1), "pool_warns": warns, "oom": errors,
    }
