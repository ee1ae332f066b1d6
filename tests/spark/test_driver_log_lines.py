"""Under ``spark-submit app.py`` SLAQ's Python log lines are driver log lines: they reach the driver JVM's log4j (a
WARN and an INFO, with log4j's time and level, on Spark's default log4j2 config, whose console is stderr), and the
application's stdout holds only its own prints (spark-submit copies the Python process's stderr into stdout, so a
line Python printed itself would land there)."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from sparkshim.starthook import PTH_NAME
from tests.fixtures import ends

APP = """
import slaq
from pyspark.sql import SparkSession
print("APP: start", flush=True)
spark = SparkSession.builder.getOrCreate()
with slaq.job("quiet"):  # never reports a loss: one INFO line (at its 3rd silent epoch, or when it ends)
    spark.sparkContext.parallelize(range(100), 2).count()
try:
    with slaq.job("boom"):  # ends with an exception: one WARN line
        raise RuntimeError("on purpose")
except RuntimeError:
    print("APP: caught", flush=True)
spark.stop()
print("APP: done", flush=True)
"""
LOG4J_LINE = r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d {level} \S+: "  # Spark's default layout: %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m


def submit(tmp_path: Path, app_text: str) -> subprocess.CompletedProcess[str]:
    """``spark-submit app.py`` of ``app_text`` with SLAQ on, on Spark's default log4j2 config (root at INFO)."""
    if not (Path(sysconfig.get_paths()["purelib"]) / PTH_NAME).exists():
        pytest.fail("the start-up hook is not installed; scripts/setup.sh installs it (python -m sparkshim.autoload install)")
    app = tmp_path / "app.py"
    app.write_text(app_text)
    spark_submit = Path(sys.executable).parent / "spark-submit"
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONF_DIR"}  # Spark's default log4j2 config
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_CONF_DIR=str(tmp_path))
    proc = subprocess.run([str(spark_submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                           "--conf", "spark.scheduler.mode=FAIR", "--conf", "spark.slaq.enabled=true",
                           "--conf", "spark.slaq.epoh=1s",  # a typo: one WARN naming spark.slaq.epoch
                           str(app)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, ends(proc.stderr)
    return proc


def test_slaq_lines_are_driver_log_lines_and_stdout_is_the_apps(tmp_path):
    proc = submit(tmp_path, APP)
    assert [line for line in proc.stdout.splitlines() if line.strip()] == ["APP: start", "APP: caught", "APP: done"], \
        proc.stdout[-3000:]
    err = proc.stderr.splitlines()
    typo = [x for x in err if "spark.slaq.epoh" in x]
    assert len(typo) == 1 and re.match(LOG4J_LINE.format(level="WARN"), typo[0]) and "spark.slaq.epoch" in typo[0], ends(proc.stderr)
    boom = [x for x in err if "job boom ended with RuntimeError" in x]
    assert len(boom) == 1 and re.match(LOG4J_LINE.format(level="WARN"), boom[0]), ends(proc.stderr)
    quiet = [x for x in err if re.search("job quiet (ended without any loss|reported no loss in 3 epochs)", x)]
    assert len(quiet) == 1 and re.match(LOG4J_LINE.format(level="INFO"), quiet[0]), ends(proc.stderr)


def test_a_users_own_python_logging_shows_what_it_showed_before(tmp_path):
    """SLAQ's Python loggers are lowered to what log4j shows (INFO here) so that their INFO lines reach the driver log;
    a user whose Python logging shows WARNING and above (basicConfig) got those INFO lines in their own output too
    (the demo printed its 'on' line twice and every 'reported no loss' line). Their handlers see what they saw before
    SLAQ forwarded anything: its WARN, once, and no INFO."""
    user = "import logging\nlogging.basicConfig(level=logging.WARNING, format='USER %(levelname)s %(name)s: %(message)s')\n"
    proc = submit(tmp_path, user + APP)
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("USER ")]
    assert said and all(line.startswith(("USER WARNING slaq", "USER ERROR slaq")) for line in said), said  # no INFO
    assert [sum(what in line for line in said) for what in ("spark.slaq.epoh", "job boom ended with RuntimeError")] == [1, 1], said
    quiet = [x for x in proc.stderr.splitlines() if re.search("job quiet (ended without any loss|reported no loss in 3 epochs)", x)]
    assert len(quiet) == 1 and re.match(LOG4J_LINE.format(level="INFO"), quiet[0]), ends(proc.stderr)  # still in the driver log


def test_in_process_a_level_the_user_sets_later_lets_lines_through(spark):
    """In the process that attached (the shared session: SLAQ's loggers are lowered to log4j's level), a handler of the
    user's on the root gets no INFO of SLAQ's, and a level set later on a child logger or on the top one (even the level
    log4j shows) lets that logger's INFO lines through to it, once each, as Python would."""
    from sparkshim.driver_log import attach

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    attach(spark.sparkContext)
    seen: list[str] = []
    log, child, top = (logging.getLogger(n) for n in ("slaq.probe.child", "slaq.probe", "slaq"))
    lowered = top.level
    handler = Kept()
    logging.root.addHandler(handler)
    try:
        assert log.isEnabledFor(logging.INFO)  # created for the driver log
        log.info("for the driver log alone")
        child.setLevel(logging.INFO)
        log.info("child's level")
        child.setLevel(logging.NOTSET)
        top.setLevel(logging.INFO)
        log.info("top's level")
        top.setLevel(lowered)
        log.info("for the driver log again")
        log.warning("a warning")
    finally:
        logging.root.removeHandler(handler)
        child.setLevel(logging.NOTSET)
        top.setLevel(lowered)
    assert seen == ["child's level", "top's level", "a warning"]


GONE_APP = """
import logging, os, sys, time
from pyspark.sql import SparkSession
import slaq
log = logging.getLogger("slaq.test")
log.warning("before any context")
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.scheduler.mode", "FAIR").getOrCreate())
slaq.attach(spark)
log.warning("while the JVM runs")
slaq.detach(spark)  # no thread of SLAQ's calls the JVM any more; the lines still go there
gateway = spark.sparkContext._gateway
gateway.proc.kill()
gateway.proc.wait()
started = time.monotonic()
log.warning("after the JVM is gone")
log.warning("and again")
print(f"RESULT {time.monotonic() - started:.3f}", flush=True)
os._exit(0)
"""
PYTHON_LINE = r"^\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}} WARNING slaq.test: {message}$"


def test_lines_before_attach_and_after_the_jvm_is_gone_go_to_stderr_with_time_and_level(tmp_path):
    """``python app.py``: a WARN before any context, and after the driver JVM died, is one stderr line with its time and
    level (not a py4j error, not a hang); while the JVM runs it is log4j's line."""
    app = tmp_path / "app.py"
    app.write_text(GONE_APP)
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONF_DIR"}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_CONF_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, str(app)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, ends(proc.stderr)
    assert [x for x in proc.stdout.splitlines() if x.strip()][:-1] == [] and proc.stdout.startswith("RESULT "), proc.stdout
    assert float(proc.stdout.split()[1]) < 5.0, proc.stdout  # the dead gateway is noticed at once, not waited for
    said = [x for x in proc.stderr.splitlines() if "slaq.test" in x or re.search(r"WARN test: ", x)]
    assert len(said) == 4, ends(proc.stderr)
    assert re.match(PYTHON_LINE.format(message="before any context"), said[0]), said
    assert re.match(LOG4J_LINE.format(level="WARN") + "while the JVM runs$", said[1]), said
    assert re.match(PYTHON_LINE.format(message="after the JVM is gone"), said[2]), said
    assert re.match(PYTHON_LINE.format(message="and again"), said[3]), said
