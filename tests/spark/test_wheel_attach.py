"""A pip-installed wheel on a host with a Java runtime and no ``javac``: ``spark-submit`` with only
``--conf`` flags attaches SLAQ and Riffle (the wheel carries the shim jar and the start-up hook).

The fresh virtual environment holds the wheel alone (its third-party dependencies, pyspark among
them, are borrowed through a ``.pth`` line, which runs none of this environment's start-up hooks),
and Spark runs with a PATH whose only JDK tool is ``java``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
import zipfile
from pathlib import Path

import pytest

from srsupport.daemons import DaemonProcess
from tests.daemon.test_merger_wheel import REPO, build_wheel, fresh_venv, run

APP = """
import json, time, urllib.request
from operator import add
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
t0 = time.monotonic()
rdd = sorted(sc.parallelize(range(4000), 12).map(lambda x: (x % 41, x)).reduceByKey(add, 6).collect())
# read only: the app never calls slaq or riffle
import riffle.runtime, slaq.api, sparkshim.bridge
from slaq import messages
from srsupport.riffle_watch import wait_idle
r = riffle.runtime.current()
s = slaq.api._runtimes.current()
wait_idle(r.scheduler, 60)
report = messages.decode(json.dumps(json.load(urllib.request.urlopen(sc.uiWebUrl + "/slaq/json/", timeout=30))))
print("RESULT " + json.dumps({
    "rdd": rdd, "committed": sum(st["merges_committed"] for st in r.scheduler.stats.values()),
    "riffle": r is not None and r.enabled, "slaq": s is not None and s.enabled and s.attached,
    "slaq_page": type(report).__name__, "jar": str(sparkshim.bridge.packaged_jar()), "modules": [riffle.__file__, slaq.__file__]}))
spark.stop()
"""

JDK_TOOLS_KEPT = {"java"}


def path_without_javac(bin_dir: Path) -> str:
    """A PATH of one directory with every command of this host's PATH except the JDK's, other than ``java``."""
    bin_dir.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = Path(entry.path).resolve()
            jdk_tool = target.parent.name == "bin" and (target.parents[1] / "release").exists()  # <java home>/bin/<tool>
            if (jdk_tool and entry.name not in JDK_TOOLS_KEPT) or (bin_dir / entry.name).exists() or not os.access(entry.path, os.X_OK):
                continue
            (bin_dir / entry.name).symlink_to(target)
    return str(bin_dir)


@pytest.mark.slow
def test_installed_wheel_attaches_without_javac(tmp_path):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to copy the sources from")
    venv = fresh_venv(tmp_path, build_wheel(tmp_path))
    site = Path(run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    assert (site / "slaq_riffle_autoload.pth").exists()  # installed by pip from the wheel, not by a script
    jar = run(venv / "bin" / "slaq-riffle", "jar").strip()
    assert jar == str(site / "sparkshim" / "jars" / "slaq-riffle-shim.jar") and zipfile.ZipFile(jar).testzip() is None

    path = path_without_javac(tmp_path / "bin")
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYTHONPATH", "SPARK_HOME", "VIRTUAL_ENV")}
    pyspark_home = Path(sysconfig.get_paths()["purelib"]) / "pyspark"
    env.update(PATH=path, SPARK_HOME=str(pyspark_home), SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO / "lab"),  # srsupport only
               PYSPARK_PYTHON=str(venv / "bin" / "python"), PYSPARK_DRIVER_PYTHON=str(venv / "bin" / "python"))
    which = subprocess.run(["bash", "-c", "command -v javac"], env=env, capture_output=True, text=True)
    assert which.returncode != 0 and shutil.which("javac", path=path) is None, which.stdout
    assert shutil.which("java", path=path)

    local = tmp_path / "local"
    local.mkdir()
    app = tmp_path / "app.py"
    app.write_text(APP)
    merger = DaemonProcess([local])
    try:
        proc = subprocess.run([str(pyspark_home / "bin" / "spark-submit"), "--master", "local-cluster[2,1,1024]",
                               "--conf", f"spark.local.dir={local}",
                               "--conf", "spark.slaq.enabled=true", "--conf", "spark.scheduler.mode=FAIR",
                               "--conf", "spark.riffle.enabled=true", "--conf", f"spark.riffle.mergers={merger.address}", str(app)],
                              capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    finally:
        merger.stop()
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stderr[-4000:]
    out = json.loads(line[len("RESULT "):])
    assert out["riffle"] and out["slaq"], out
    assert out["slaq_page"] == "StatusReport", out  # the jar's UI tab answers on the driver's UI
    assert out["jar"] == jar and all(m.startswith(str(venv)) for m in out["modules"]), out
    assert dict(out["rdd"]) == {k: sum(x for x in range(4000) if x % 41 == k) for k in range(41)}
    assert out["committed"] > 0, proc.stderr[-4000:]
    assert "built against Spark" not in proc.stderr  # same Spark line: no mismatch warning
