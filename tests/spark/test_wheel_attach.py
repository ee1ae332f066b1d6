"""A pip-installed wheel on a host with a Java runtime and no ``javac``: ``spark-submit`` with only
``--conf`` flags attaches SLAQ and Riffle (the wheel carries the shim jar and the start-up hook).

The fresh virtual environment holds the wheel alone (its third-party dependencies, pyspark among
them, are borrowed through a ``.pth`` line, which runs none of this environment's start-up hooks),
and Spark runs with a PATH whose only JDK tool is ``java``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pyspark
import pytest

from srsupport.daemons import DaemonProcess
from srsupport.driver_log import on_lines, our_warnings
from srsupport.wheel import REPO, run

APP = """
import json, time, urllib.request
from operator import add
from pyspark.ml.classification import LogisticRegression
from pyspark.ml.linalg import Vectors
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
t0 = time.monotonic()
rdd = sorted(sc.parallelize(range(4000), 12).map(lambda x: (x % 41, x)).reduceByKey(add, 6).collect())
# read only: the app never calls slaq or riffle
import riffle.runtime, slaq.runtime, sparkshim.bridge
from slaq import messages
from srsupport.riffle_watch import wait_idle
r = riffle.runtime.current()
s = slaq.runtime.runtimes.current()
wait_idle(r.scheduler, 60)
committed = sum(st.merges_committed for st in r.scheduler.settled.values())  # before Spark may clean the shuffle up
rows = [(float(i % 2), Vectors.dense([i % 7 - 3.0, (i * 13) % 5 - 2.0])) for i in range(200)]
LogisticRegression(maxIter=5).fit(spark.createDataFrame(rows, ["label", "features"]))  # a spark.ml fit: a SLAQ job by itself
deadline = time.monotonic() + 60
while True:  # the fit's job is in the tab's finished rows once an epoch has seen it end
    report = messages.decode(json.dumps(json.load(urllib.request.urlopen(sc.uiWebUrl + "/slaq/json/", timeout=30))))
    if report.finished or time.monotonic() > deadline:
        break
    time.sleep(0.2)
print("RESULT " + json.dumps({
    "rdd": rdd, "committed": committed,
    "riffle": r is not None and r.enabled, "slaq": s is not None and s.enabled and s.attached, "spark": spark.version,
    "slaq_page": type(report).__name__, "slaq_jobs": [j.job for j in report.finished],
    "jar": str(sparkshim.bridge.packaged_jar()), "modules": [riffle.__file__, slaq.__file__]}))
spark.stop()
"""

@pytest.mark.slow
def test_installed_wheel_attaches_without_javac(installed_wheel, tmp_path):
    venv = installed_wheel.venv
    site = Path(run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    assert (site / "slaq_riffle_autoload.pth").exists()  # installed by pip from the wheel, not by a script
    jar = run(venv / "bin" / "slaq-riffle", "jar").strip()
    assert jar == str(site / "sparkshim" / "jars" / "slaq-riffle-shim.jar") and zipfile.ZipFile(jar).testzip() is None

    env = installed_wheel.user_env(javac=False)
    path = env["PATH"]
    env["PYTHONPATH"] = str(REPO / "lab")  # srsupport only
    pyspark_home = Path(env["SPARK_HOME"])
    which = subprocess.run(["bash", "-c", "command -v javac"], env=env, capture_output=True, text=True)
    assert which.returncode != 0 and shutil.which("javac", path=path) is None, which.stdout
    assert shutil.which("java", path=path)

    local = tmp_path / "local"
    local.mkdir()
    app = tmp_path / "app.py"
    app.write_text(APP)
    merger = DaemonProcess([local])
    try:
        # one executor JVM of its own (Python workers run the wheel there too); the shared session's Riffle tests merge two's outputs
        proc = subprocess.run([str(pyspark_home / "bin" / "spark-submit"), "--master", "local-cluster[1,1,1024]",
                               "--conf", f"spark.local.dir={local}",
                               "--conf", "spark.slaq.enabled=true", "--conf", "spark.scheduler.mode=FAIR",
                               "--conf", "spark.riffle.enabled=true", "--conf", f"spark.riffle.mergers={merger.address}",
                               "--conf", "spark.riffle.cost.enabled=false", str(app)],
                              capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    finally:
        merger.stop()
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stderr[-4000:]
    out = json.loads(line[len("RESULT "):])
    assert out["riffle"] and out["slaq"], out
    assert out["spark"] == pyspark.__version__, out  # the line this run tests (an older one's under scripts/test.sh)
    assert out["slaq_page"] == "StatusReport", out  # the jar's UI tab answers on the driver's UI
    assert [j.split("[")[0] for j in out["slaq_jobs"]] == ["LogisticRegression"], out  # the fit, as a SLAQ job in /slaq/json/
    assert out["jar"] == jar and all(m.startswith(str(venv)) for m in out["modules"]), out
    assert dict(out["rdd"]) == {k: sum(x for x in range(4000) if x % 41 == k) for k in range(41)}
    assert out["committed"] > 0, proc.stderr[-4000:]
    assert "built against Spark" not in proc.stderr  # same Spark line: no mismatch warning
    said = on_lines(proc.stderr)  # each system says once, in the driver log, that it is on and where its tab is
    assert sorted(line.split(": on")[0].split()[-1] for line in said) == ["Riffle", "SLAQ"], proc.stderr[-4000:]
    assert all("tab at http://" in line for line in said), said
    assert our_warnings(proc.stderr) == [], proc.stderr[-4000:]  # a normal run and stop: no WARN of ours
