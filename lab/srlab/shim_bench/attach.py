"""Attach time from an installed jar vs the old first attach that compiled the shim from its sources.

Each sample is a fresh driver process (a fresh JVM: classes load once per JVM) that starts a local
SparkContext, untimed, and then times attaching the shim's JVM side for both products
(``shim_for(sc)``, ``.slaq()``, ``.riffle()``):

- ``packaged``: the jar that ships in the package (what a wheel install does);
- ``compile``: a copy of the ``sparkshim`` package without its jar, imported first, so its
  ``sparkshim.build`` compiles the sources into the copy (javac against pyspark's jars) and the bridge
  then loads that jar: the path every first attach took before the jar was built with the wheel.

The two kinds alternate within each repeat, so both see the same machine load; medians are reported.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sparkshim
from sparkshim.build import PACKAGED_JAR, SPARK_VERSION_ATTR, jar_manifest, java_sources

KINDS = ("packaged", "compile")
MARK = "ATTACH-SAMPLE "
CHILD = """
import json, sys, time
from pyspark import SparkConf, SparkContext
conf = (SparkConf().setMaster("local[1]").setAppName("attach-bench").set("spark.ui.enabled", "false")
        .set("spark.scheduler.mode", "FAIR"))
sc = SparkContext(conf=conf)
t0 = time.perf_counter()
import sparkshim.build
from sparkshim.bridge import shim_for
from slaq.product import PRODUCT as SLAQ
from riffle.product import PRODUCT as RIFFLE
if sys.argv[1] == "compile":
    sparkshim.build.build()
t1 = time.perf_counter()
shim = shim_for(sc)
shim.component(SLAQ.shim_component)
shim.component(RIFFLE.shim_component)
t2 = time.perf_counter()
print("ATTACH-SAMPLE " + json.dumps({"compile_s": t1 - t0, "load_s": t2 - t1, "total_s": t2 - t0,
                                     "jar": str(sparkshim.build.PACKAGED_JAR)}), flush=True)
sc.stop()
"""


def package_copy_without_jar(into: Path) -> Path:
    """A copy of the ``sparkshim`` package (sources, schema, start-up hook) with no built jar, under ``into``."""
    target = into / "sparkshim"
    shutil.copytree(Path(sparkshim.__file__).parent, target, ignore=shutil.ignore_patterns("jars", "__pycache__"))
    return target


def sample(kind: str, pythonpath: str, timeout: float = 600) -> dict[str, Any]:
    """One attach in a fresh driver process: seconds spent compiling (``compile`` only), loading, and both."""
    env = {**os.environ, "PYTHONPATH": pythonpath, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    proc = subprocess.run([sys.executable, "-c", CHILD, kind], capture_output=True, text=True, timeout=timeout, env=env)
    line = next((x for x in proc.stdout.splitlines() if x.startswith(MARK)), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"attach sample ({kind}) failed with exit code {proc.returncode}:\n{proc.stderr[-3000:]}")
    return json.loads(line[len(MARK):])


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    return {f"median_{k}": round(statistics.median(s[k] for s in samples), 3) for k in ("compile_s", "load_s", "total_s")} | {
        "samples_total_s": [round(s["total_s"], 3) for s in samples]}


def bench_attach(repeat: int) -> dict[str, Any]:
    """``repeat`` samples of each kind, alternating; the ratio is the old first attach's median over the packaged one's."""
    own_path = os.environ.get("PYTHONPATH", "")
    samples: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="attach-bench-") as tmp:
        for i in range(repeat):
            for kind in KINDS if i % 2 == 0 else KINDS[::-1]:
                if kind == "packaged":
                    path = os.pathsep.join(p for p in (str(Path(sparkshim.__file__).parents[1]), own_path) if p)
                    samples[kind].append(sample(kind, path))
                else:
                    copy_root = Path(tmp) / f"run-{i}"
                    package_copy_without_jar(copy_root)
                    path = os.pathsep.join(p for p in (str(copy_root), own_path) if p)
                    got = sample(kind, path)
                    if not got["jar"].startswith(str(copy_root)):
                        raise RuntimeError(f"the compile sample loaded {got['jar']}, not a jar compiled into {copy_root}")
                    samples[kind].append(got)
    packaged, compiled = summarize(samples["packaged"]), summarize(samples["compile"])
    return {
        "repeat": repeat,
        "spark_version": jar_manifest(PACKAGED_JAR).get(SPARK_VERSION_ATTR, ""),
        "java_sources": len(java_sources()),
        "jar_bytes": PACKAGED_JAR.stat().st_size,
        "packaged": packaged,
        "compile_then_attach": compiled,
        "ratio_total": round(compiled["median_total_s"] / packaged["median_total_s"], 1),
        "seconds": round(time.perf_counter() - started, 1),
    }
