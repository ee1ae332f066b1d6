"""The documented commands, run exactly as written (tests/doc_scenarios.py), by a user who installed only the
built wheel: a fresh venv, pip pyspark's launchers on PATH, the working directory holding their ``app.py`` and a
copy of ``examples/`` and nothing of the clone. Each scenario is one shell; what it left running in the
background (a merger, a History Server) is ended with it."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest

from srsupport.driver_log import on_lines, our_warnings
from srsupport.wheel import REPO
from tests.doc_scenarios import SCENARIOS

# the user's application that README's and docs/ui.md's commands submit: the README's loop, on a tiny problem
APP = """
from pyspark.sql import SparkSession
import slaq

spark = SparkSession.builder.appName("docs-app").getOrCreate()
sc = spark.sparkContext
data = sc.parallelize(range(20000), 4).cache()
with slaq.job("docs-job", target_reduction=0.95) as job:
    for step in range(1, 40):
        loss = 1.0 / step + data.map(lambda x: 0.0).sum()
        slaq.report_loss(loss)
        if job.should_stop():
            break
print("APP " + sc.applicationId)
spark.stop()
"""


@pytest.fixture(scope="module")
def user(installed_wheel, tmp_path_factory):
    """The user's shell: its environment and working directory."""
    home = tmp_path_factory.mktemp("user")
    (home / "app.py").write_text(APP)
    shutil.copytree(REPO / "examples", home / "examples")
    env = installed_wheel.user_env()
    env.pop("SPARK_HOME", None)  # a pip user has none: the docs' own line sets it where a command needs it
    env.update(SPARK_LOG_DIR=str(home / "spark-logs"), SPARK_PID_DIR=str(home / "spark-pids"))  # where daemons write theirs
    return env, home


def run_scenario(user, name: str, timeout: float = 600, leave_running: bool = False) -> tuple[str, str]:
    """Runs scenario ``name`` in one ``bash -e``; returns its stdout and stderr. Background processes it
    started are ended with it, unless ``leave_running`` (a daemon that a later scenario stops)."""
    env, home = user
    script = "set -e\n" + "\n".join(command for _, command in SCENARIOS[name]) + "\n"
    out, err = home / f"{name}.out", home / f"{name}.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(["bash", "-c", script], cwd=home, env=env, stdout=stdout, stderr=stderr, start_new_session=True)
        try:
            code = proc.wait(timeout)
        finally:
            try:
                if not leave_running or proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    assert code == 0, f"{name} exited {code}:\n{out.read_text()[-3000:]}\n{err.read_text()[-6000:]}"
    return out.read_text(), err.read_text()


def merged(log: str) -> int:
    """Merges the background merger logged as done (its log shares the scenario's stderr)."""
    return sum(1 for line in log.splitlines() if "merged " in line and " outputs of app " in line)


@pytest.mark.parametrize("scenario", ["slaq_app", "slaq_app_template"])
def test_a_slaq_app_submitted_as_documented(user, scenario):
    out, err = run_scenario(user, scenario)
    assert "APP " in out
    said = on_lines(err)
    assert len(said) == 1 and "SLAQ: on" in said[0] and "SLAQ tab at http://" in said[0], err[-3000:]
    assert our_warnings(err) == [], err[-3000:]


def test_install_spark_sql_merges(user):
    out, err = run_scenario(user, "spark_sql")
    rows = [line.split("\t") for line in out.splitlines() if "\t" in line]
    assert rows == [[str(k), "100000"] for k in range(10)], out
    said = on_lines(err)
    assert len(said) == 1 and "Riffle: on for" in said[0], err[-3000:]
    assert our_warnings(err) == [] and merged(err) > 0, err[-3000:]


def slaq_summary(log: str) -> dict[str, bool]:
    """The jobs the driver's application-end SLAQ summary lists, each with whether it reached 90% of its loss
    reduction (it needs two losses, so True means SLAQ saw the job's iterations)."""
    rows = log.split("SLAQ summary: ", 1)[1].splitlines()[1:] if "SLAQ summary: " in log else []
    jobs = (re.match(r"  (.+?): (?:no target|time to target .*?), time to 90% (.+?), ", row) for row in rows)
    return {m[1]: m[2] != "not reached" for m in jobs if m}


def test_examples_as_their_docstrings_say(user):
    out, err = run_scenario(user, "sql_example")
    assert len([line for line in out.splitlines() if line.startswith("region-")]) == 8, out
    assert [line for line in on_lines(err) if "Riffle: on for" in line] and merged(err) > 0, err[-3000:]
    out, err = run_scenario(user, "train_example")
    iterations = [int(m[1]) for m in re.finditer(r": (\d+) iterations, loss", out)]
    assert len(iterations) == 3 and min(iterations) >= 4, out
    assert slaq_summary(err) == {f"logreg-step-{step}": True for step in ("0.1", "0.5", "2.0")}, err[-3000:]
    out, err = run_scenario(user, "tune_example")
    assert any(line.startswith("best regParam") for line in out.splitlines()), out
    # no code change: each fit is a SLAQ job (3 candidates x 2 folds + the refit, and the LinearSVC), its iterations captured
    fits = slaq_summary(err)
    assert sorted(name.split("[")[0] for name in fits) == ["LinearSVC"] + ["LogisticRegression"] * 7 and all(fits.values()), err[-3000:]


def test_history_server_shows_the_slaq_tab(user):
    out, err = run_scenario(user, "history_server", leave_running=True)
    try:
        app = next(line.split()[1] for line in out.splitlines() if line.startswith("APP "))
        deadline, report, last = time.monotonic() + 180, None, None
        while report is None and time.monotonic() < deadline:
            # Not found until the History Server's scan (every 10 s) lists the app. The first request then
            # replays the log and attaches the app's pages one by one before it answers; a request that gives
            # up and comes back while they are being attached is answered as HTML by a page attached before the JSON.
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:18080/history/{app}/slaq/json/", timeout=90) as page:
                    report = json.load(page)
            except (OSError, ValueError) as exc:
                last = exc
                time.sleep(1)
        assert report is not None, f"no SLAQ tab for {app} in the History Server: {last!r:.300}"
        assert "docs-job" in json.dumps(report), report
    finally:
        run_scenario(user, "history_server_stop")


def test_a_wheel_user_records_their_run_and_replays_it(user):
    """docs/benchmarks.md's 'Your own workload' with only the wheel: the conf records the run, ``slaq simulate``
    replays it, and ``--plot`` (which needs the clone's lab) says so in one line instead of an argparse error."""
    env, home = user
    shell = ("set -e\nspark-submit --conf spark.scheduler.mode=FAIR --conf spark.slaq.enabled=true "
             "--conf spark.slaq.recordTrace=traces/ app.py\n"
             "slaq simulate --check traces/*.json.gz > check.json\n")
    proc = subprocess.run(["bash", "-c", shell], cwd=home, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert [p.name.startswith(("local-", "app-")) for p in (home / "traces").iterdir()] == [True], proc.stderr[-3000:]
    verdicts = [line for line in proc.stderr.splitlines() if line.startswith("check: ")]
    assert len(verdicts) == 1 and verdicts[0].startswith("check: 1 trace, 1 configuration, all within 15%"), proc.stderr[-3000:]
    assert json.loads((home / "check.json").read_text())
    plot = subprocess.run(["slaq", "simulate", "--jobs", "4", "--plot", "fig.png"], cwd=home, env=env, capture_output=True,
                          text=True, timeout=120)
    assert plot.returncode == 2 and "--plot needs matplotlib" in plot.stderr and "unrecognized" not in plot.stderr, plot.stderr
    assert not (home / "fig.png").exists()
