"""The plugin path vs the in-process path on the same workloads, side by side in one run.

Both arms are ``spark-submit`` applications with the same confs (the plugin's among them) on
local-cluster Spark with one loopback merger, running :mod:`srlab.shim_bench.plugin_app` (the
``riffle bench spark`` shuffle, then ``slaq bench enforce``'s measurement) from one Python process:

- ``in_process``: ``spark-submit plugin_app.py``, a pyspark driver; the plugin does nothing and the
  start-up hook attaches SLAQ and Riffle in the application's own process.
- ``plugin``: ``spark-submit --class PluginBenchDriver``, a Java driver (compiled here, against
  pyspark's jars) that builds the SparkContext, so the plugin starts the brain as a child process;
  the driver then hands its context to the same Python application over a py4j gateway, as Spark's
  PythonRunner does for a Python application (that process leaves SLAQ and Riffle to the brain).

What differs is only where SLAQ's and Riffle's Python side runs and how it reaches the JVM. The
enforcement measurement deposits its shares itself every epoch (it is the allocator, in both arms, and
times each deposit); SLAQ's epoch loop runs alongside in the brain, with no jobs of its own.
The arms alternate within each repeat; medians and plugin/in-process ratios are reported.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from riffle.merger.node_status import probe
from sparkshim.build import PACKAGED_JAR, pyspark_jars
from srlab.shim_bench import plugin_app
from srsupport.daemons import DaemonProcess

ARMS = ("in_process", "plugin")
PLUGIN = "io.slaqriffle.SlaqRifflePlugin"

DRIVER_JAVA = """
import java.util.ArrayList;
import java.util.List;
import java.net.InetAddress;
import java.security.SecureRandom;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import py4j.ClientServer;

/** A JVM-only driver: builds the context (the plugin starts the brain), then runs a Python program over a py4j gateway. */
public class PluginBenchDriver {
  public static class Entry {
    private final SparkContext sc;
    Entry(SparkContext sc) { this.sc = sc; }
    public SparkContext context() { return sc; }
    public ClassLoader shimClassLoader() { return PluginBenchDriver.class.getClassLoader(); }
  }

  public static void main(String[] args) throws Exception {
    SparkSession spark = SparkSession.builder().getOrCreate();
    byte[] bytes = new byte[32];
    new SecureRandom().nextBytes(bytes);
    StringBuilder secret = new StringBuilder();
    for (byte b : bytes) {
      secret.append(String.format("%02x", b));
    }
    Thread.currentThread().setContextClassLoader(PluginBenchDriver.class.getClassLoader());
    InetAddress loopback = InetAddress.getLoopbackAddress();
    ClientServer gateway = new ClientServer.ClientServerBuilder(new Entry(spark.sparkContext())).authToken(secret.toString())
        .javaPort(0).javaAddress(loopback).pythonAddress(loopback).build();
    ProcessBuilder pb = new ProcessBuilder(args).inheritIO();
    pb.environment().put("PYSPARK_GATEWAY_PORT", Integer.toString(gateway.getJavaServer().getListeningPort()));
    pb.environment().put("PYSPARK_GATEWAY_SECRET", secret.toString());
    pb.environment().put("PYSPARK_PIN_THREAD", "true");
    int code = pb.start().waitFor();
    gateway.shutdown();
    spark.stop();
    System.exit(code);
  }
}
"""


def driver_jar(work: Path) -> Path:
    """``PluginBenchDriver`` compiled against pyspark's jars (py4j among them), as a jar under ``work``."""
    src, classes = work / "src", work / "classes"
    src.mkdir()
    classes.mkdir()
    (src / "PluginBenchDriver.java").write_text(DRIVER_JAVA)
    subprocess.run(["javac", "--release", "17", "-nowarn", "-cp", str(pyspark_jars() / "*"), "-d", str(classes),
                    str(src / "PluginBenchDriver.java")], check=True, capture_output=True, text=True)
    jar = work / "plugin-bench-driver.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def spark_confs(merger: DaemonProcess, root: Path, reducers: int, nway: int, epoch: float) -> list[str]:
    """One conf set for both arms: `riffle bench spark`'s Spark confs, Riffle and SLAQ on, the plugin named."""
    confs = {"spark.ui.enabled": "false", "spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(reducers),
             "spark.shuffle.sort.bypassMergeThreshold": "1", "spark.local.dir": str(root),
             "spark.shuffle.readHostLocalDisk": "false", "spark.scheduler.mode": "FAIR",
             "spark.plugins": PLUGIN, "spark.riffle.enabled": "true", "spark.riffle.mergers": merger.address,
             "spark.riffle.nway": str(nway), "spark.riffle.holdTimeout": "120s",
             "spark.slaq.enabled": "true", "spark.slaq.epoch": f"{epoch}s"}
    return ["--jars", str(PACKAGED_JAR), *[a for k, v in confs.items() for a in ("--conf", f"{k}={v}")]]


def submit(arm: str, confs: list[str], jar: Path, app_args: list[str], master: str, timeout: float,
           log: Path | None = None) -> dict[str, Any]:
    """One application of ``arm``; its ``PLUGIN-SAMPLE`` and whether the plugin started a brain (its driver log to ``log``)."""
    spark_submit = str(Path(sys.executable).parent / "spark-submit")
    app = [sys.executable, "-m", plugin_app.__name__, "--driver", "jvm"]
    if arm == "plugin":
        args = [spark_submit, "--master", master, *confs, "--class", "PluginBenchDriver", str(jar), *app, *app_args]
    else:
        args = [spark_submit, "--master", master, *confs, str(Path(plugin_app.__file__)), "--driver", "pyspark", *app_args]
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    if log is not None:
        log.write_text(proc.stderr)
    line = next((x for x in proc.stdout.splitlines() if x.startswith(plugin_app.MARK)), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"{arm} application failed with exit code {proc.returncode}:\n{proc.stderr[-4000:]}")
    sample = json.loads(line[len(plugin_app.MARK):])
    sample["brain_started"] = "started the brain" in proc.stderr
    return sample


def median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over every shuffle job and every enforcement run of an arm's applications."""
    shuffles = [s for a in samples for s in a["shuffles"]]
    out: dict[str, Any] = {
        "applications": len(samples),
        "brain_processes": sum(a["brain_started"] for a in samples),
        "shuffle_job_seconds": median([s["job_seconds"] for s in shuffles]),
        "reduce_stage_seconds": median([s["reduce_stage"]["seconds"] for s in shuffles]),
        "blocks_fetched": median([s["reduce_stage"]["blocks_fetched"] for s in shuffles]),
        "merges_completed_per_application": median([a["merges_completed"] for a in samples]),
        "shuffle_job_seconds_samples": [s["job_seconds"] for s in shuffles],
    }
    for mode in ("strict", "work-conserving"):
        runs = [r for a in samples for r in a["enforce"] if r["mode"] == mode]
        out[f"enforce_{mode}"] = {"max_error_pp": median([r["max_error_pp"] for r in runs]),
                                  "utilization": median([r["utilization"] for r in runs]),
                                  "deposit_ms": median([r["deposit_ms_median"] for r in runs]),
                                  "max_error_pp_samples": [r["max_error_pp"] for r in runs]}
    return out


def ratio(plugin: float | None, in_process: float | None) -> float | None:
    return round(plugin / in_process, 3) if plugin is not None and in_process else None


def bench_plugin(repeat: int, jobs: int = 3, maps: int = 100, reducers: int = 100, nway: int = 10, shares: str = "0.5,0.3,0.2",
                 seconds: float = 10.0, epoch: float = 1.0, master: str = "local-cluster[2,1,1024]",
                 timeout: float = 900.0, logs: Path | None = None) -> dict[str, Any]:
    """``repeat`` applications of each arm, alternating (the first arm rotates), with one merger for all."""
    app_args = ["--jobs", str(jobs), "--maps", str(maps), "--reducers", str(reducers), "--shares", shares,
                "--seconds", str(seconds), "--epoch", str(epoch)]
    samples: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="plugin-bench-") as tmp:
        work = Path(tmp)
        jar = driver_jar(work)
        root = work / "local"
        root.mkdir()
        with DaemonProcess([root], "--no-fsync") as merger:
            confs = spark_confs(merger, root, reducers, nway, epoch)
            for i in range(repeat):
                for arm in ARMS if i % 2 == 0 else ARMS[::-1]:
                    before = int(probe(merger.address, None, None, 5.0)["completed"])
                    log = logs / f"{arm}-{i}.log" if logs else None
                    sample = submit(arm, confs, jar, app_args, master, timeout, log)
                    sample["merges_completed"] = int(probe(merger.address, None, None, 5.0)["completed"]) - before
                    samples[arm].append(sample)
    summary = {arm: summarize(samples[arm]) for arm in ARMS}
    p, q = summary["plugin"], summary["in_process"]
    return {
        "repeat": repeat, "master": master, "cores": samples["plugin"][0]["cores"],
        "riffle": {"maps": maps, "reducers": reducers, "nway": nway, "jobs_per_application": jobs},
        "slaq_enforce": {"shares": [float(s) for s in shares.split(",")], "seconds": seconds, "epoch_s": epoch},
        "in_process": q, "plugin": p,
        "ratio_plugin_over_in_process": {
            "shuffle_job_seconds": ratio(p["shuffle_job_seconds"], q["shuffle_job_seconds"]),
            "reduce_stage_seconds": ratio(p["reduce_stage_seconds"], q["reduce_stage_seconds"]),
            "blocks_fetched": ratio(p["blocks_fetched"], q["blocks_fetched"]),
            "enforce_strict_max_error_pp": ratio(p["enforce_strict"]["max_error_pp"], q["enforce_strict"]["max_error_pp"]),
            "enforce_work_conserving_max_error_pp": ratio(p["enforce_work-conserving"]["max_error_pp"],
                                                         q["enforce_work-conserving"]["max_error_pp"]),
            "enforce_deposit_ms": ratio(p["enforce_strict"]["deposit_ms"], q["enforce_strict"]["deposit_ms"]),
        },
        "seconds": round(time.perf_counter() - started, 1),
    }
