"""A bad ``spark.slaq.*``/``spark.riffle.*`` value under spark-submit stops the application at start
with one line naming the key: it is neither swallowed (running plain Spark) nor raised at the first job.
Neither a number that is not finite (once an OverflowError's traceback) nor a token file that is a FIFO
(once a driver blocked before its SparkSession existed) is an exception."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

APP = 'from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate()\nprint("APP RAN")\n'


@pytest.mark.parametrize("confs, key", [
    ({"spark.slaq.enabled": "true", "spark.scheduler.mode": "FAIR", "spark.slaq.epoch": "banana"}, "spark.slaq.epoch"),
    ({"spark.riffle.enabled": "true", "spark.riffle.nway": "1e400"}, "spark.riffle.nway"),
    ({"spark.riffle.enabled": "true", "spark.riffle.authTokenFile": "{fifo}"}, "spark.riffle.authTokenFile"),
])
def test_bad_conf_stops_the_app_with_one_line(tmp_path, confs, key):
    app = tmp_path / "app.py"
    app.write_text(APP)
    os.mkfifo(tmp_path / "fifo")
    args = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[1]", "--conf", "spark.ui.enabled=false"]
    for k, v in confs.items():
        args += ["--conf", f"{k}={v.format(fifo=tmp_path / 'fifo')}"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run(args + [str(app)], capture_output=True, text=True, timeout=120, env=env)
    output = proc.stdout + proc.stderr  # spark-submit passes the Python driver's stderr on as its stdout
    assert proc.returncode != 0 and "APP RAN" not in output
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and key in errors[0], output[-3000:]
    assert "Traceback" not in output and not any(line.endswith(errors[0][len("error: "):]) for line in output.splitlines()
                                                  if not line.startswith("error: ")), "the error is printed once"
