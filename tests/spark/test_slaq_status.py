"""The JVM's store behind the SLAQ UI tab (SlaqStatus), driven through py4j with real messages: finished
jobs, a bounded window, idle epochs, strict decoding, the summary's figures (in the shared session's driver JVM);
the loss chart and inert names as users read them, the tab's page over HTTP and the driver log, of a driver with
Spark's UI (tests/spark/slaq_tab_child.py)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from slaq import messages
from sparkshim.bridge import new_instance
from tests.fixtures import stop_child
from tests.spark.ui_support import get, log4j2

CHILD = Path(__file__).with_name("slaq_tab_child.py")


def job(name, iterations=3, cores=1.0, state="running", why="predicted gain per core", loss=0.5, first=1.0, floor=0.0, to_target=-1.0,
        to_ninety=-1.0, target=""):
    return messages.JobStatus(name, state, iterations, loss, (loss - floor) / (first - floor), 0.05, cores, cores * 0.9, why, 2.0, 3.0,
                              to_target, "", -1, -1, False, 0.25, to_ninety, target, first, floor)


def epoch(n, *jobs, finished=()):
    return messages.EpochStatus(n, n * 0.5, "slaq", 2.0, list(jobs), list(finished))


class Tab:
    """The SLAQ tab of a driver with Spark's UI: epochs published to it as the loop publishes them, and what users read."""

    def __init__(self, proc: subprocess.Popen, ui: str, log: Path):
        self.proc, self.ui, self.log = proc, ui, log

    def publish(self, status: messages.EpochStatus) -> None:
        self.proc.stdin.write(messages.encode(status) + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "published", self.log.read_text()[-3000:]

    def page(self) -> str:
        return get(self.ui + "/slaq/")

    def log_lines(self) -> list[str]:
        """The driver log's SLAQ epoch lines so far."""
        return [line for line in self.log.read_text().splitlines() if "io.slaqriffle.slaq.SlaqStatus: SLAQ epoch " in line]


@pytest.fixture(scope="module")
def tab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("slaq-tab")
    (tmp / "log4j2.properties").write_text(log4j2("io.slaqriffle.slaq.SlaqStatus"))
    env = {**os.environ, "SPARK_CONF_DIR": str(tmp), "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    log = tmp / "driver.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, str(CHILD)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env, text=True)
    try:
        line = proc.stdout.readline()
        assert line, f"the driver exited early:\n{log.read_text()[-4000:]}"
        yield Tab(proc, json.loads(line)["ui"], log)
    finally:
        stop_child(proc)


@pytest.fixture
def store(gateway):
    status = new_instance(gateway, "slaq.SlaqStatus")

    def publish(e):
        status.publish(messages.encode(e))

    def report():
        return messages.decode(status.reportJson())

    return publish, report


def test_jobs_that_leave_are_listed_as_finished_until_their_name_runs_again(store):
    publish, report = store
    publish(epoch(1, job("a"), job("b", 5)))
    publish(epoch(2, job("a")))
    r = report()
    assert [e.epoch for e in r.history] == [1, 2]
    (b,) = r.finished  # without final figures from the loop: its last epoch's, no cores once it left
    assert (b.job, b.state, b.iterations, b.cores, b.used_cores, b.why, b.core_seconds) == ("b", "finished", 5, 0.0, 0.0, "ended", 3.0)
    publish(epoch(3, job("a"), job("b", 1)))
    assert report().finished == ()


def test_the_loops_final_figures_replace_the_last_epochs_row(store):
    publish, report = store
    publish(epoch(1, job("a"), job("b", 5)))
    final = messages.JobStatus("b", "finished", 9, 0.1, 0.0, 0.0, 0.0, 0.0, "target reached", 4.0, 6.5, 3.5, "CrossValidator_x", 1, -1, True, -1.0,
                               3.9, "loss <= 0.1", 1.0, 0.1)
    publish(epoch(2, job("a"), finished=[final]))
    assert report().finished == (final,)
    publish(epoch(3, finished=[job("c", 2, 0.0, "finished", "ended")]))  # a job that came and went between two epochs
    assert [j.job for j in report().finished] == ["b", "a", "c"]


def test_window_is_bounded_and_idle_epochs_are_kept_once(store):
    publish, report = store
    for n in range(1, 606):
        publish(epoch(n, job("a", n)))
    r = report()
    assert len(r.history) == 600 and r.history[0].epoch == 6 and r.history[-1].epoch == 605
    for n in range(606, 616):
        publish(epoch(n))
    r = report()
    assert r.history[-1].epoch == 606 and len(r.history) == 600  # one idle epoch marks the end; the busy ones stay
    assert [j.job for j in r.finished] == ["a"]


def test_a_message_that_drifts_from_the_schema_is_refused(gateway):
    status = new_instance(gateway, "slaq.SlaqStatus")
    with pytest.raises(Exception, match="bad EpochStatus message: Missing creator property 'jobs'"):  # pyspark re-raises it as its own
        status.publish('{"type": "epoch_status", "epoch": 1, "t": 0.5, "policy": "slaq", "capacity": 2.0}')
    assert messages.decode(status.reportJson()).history == ()


def test_the_summary_reports_each_jobs_figures_as_its_latest_row_has_them(store):
    """The application-end summary once computed its own time to 90% from the epochs' normalized losses and
    disagreed with the tab; now it carries the rows' figures, never its own."""
    publish, report = store
    publish(epoch(1, job("met", target="loss <= 0.3"), job("missed", target="loss <= 0.01"), job("plain")))
    publish(epoch(2, job("met", to_target=1.5, target="loss <= 0.3"), job("missed", target="loss <= 0.01"), job("plain", loss=0.01)))
    publish(epoch(3, finished=[job("met", state="finished", to_target=1.5, to_ninety=2.5, target="loss <= 0.3"),
                               job("missed", state="finished", to_ninety=3.0, target="loss <= 0.01"),
                               job("plain", state="finished", to_ninety=0.5)]))
    r = report()
    rows = {j.job: j for j in r.finished}
    summary = {j.job: j for j in r.summary.jobs}
    assert set(summary) == set(rows) == {"met", "missed", "plain"}
    for name, j in summary.items():
        assert (j.target, j.seconds_to_target, j.seconds_to_ninety) == (rows[name].target, rows[name].seconds_to_target, rows[name].seconds_to_ninety)
    assert summary["missed"].seconds_to_target == -1.0 and summary["met"].seconds_to_target == 1.5
    assert (r.summary.reached_ninety, r.summary.mean_seconds_to_ninety) == (3, pytest.approx(2.0))


def test_the_summary_says_a_job_reported_no_loss_not_that_it_missed_its_time_to_90(gateway):
    status = new_instance(gateway, "slaq.SlaqStatus")
    status.publish(messages.encode(epoch(1, job("fit", 4), job("kmeans", 0, state="waiting", why="no loss yet"), job("flat", 3))))
    status.publish(messages.encode(epoch(2, finished=[job("fit", 4, state="finished", why="ended", to_ninety=2.5),
                                                      job("kmeans", 0, state="finished", why="ended"),
                                                      job("flat", 3, state="finished", why="ended")])))
    text = status.summaryText()
    assert "\n  fit: no target, time to 90% 2.5 s, " in text
    assert "\n  kmeans: no target, no loss reported, " in text  # it has no reduction to reach 90% of
    assert "\n  flat: no target, time to 90% not reached, " in text  # losses that never fell short of it
    report = messages.decode(status.reportJson())
    assert {j.job: j.iterations for j in report.summary.jobs} == {"fit": 4, "kmeans": 0, "flat": 3}


def test_the_page_says_what_the_loss_is_and_how_jobs_ended(tab):
    ends = [job(f"fit#{n}", 2, state="finished", why=why) for n, why in enumerate(("ended", "pruned", "failed"))]
    tab.publish(epoch(1, job("running"), finished=ends))
    page = tab.page()
    assert "<dt>Loss</dt><dd>the latest loss as reported" in page
    for why in ("ended", "pruned", "failed"):
        assert f"<td>{why}</td>" in page and f"<li><em>{why}</em>: " in page  # the row's why, and what it means


def chart_values(html: str, job_name: str) -> list[float]:
    """The normalized losses job ``job_name``'s line in the loss chart is drawn at (the chart's frame: 10 px top,
    220 px plot height, 0 to 1.1)."""
    chart = html[html.index('id="slaq-loss-chart"'):]
    points = re.search(rf'class="slaq-series" data-job="{re.escape(job_name)}"[^>]* points="([^"]+)"', chart).group(1)
    return [1.1 * (1 - (float(p.split(",")[1]) - 10) / 220) for p in points.split()]


def test_the_loss_chart_draws_a_jobs_whole_line_against_its_latest_floor(tab):
    """Each epoch's row has its normalized loss against the floor known then (a floor fitted through two losses
    put the second at 0.5, the third back at 0.91); drawn as they came the line rose while the loss fell."""
    floors = [0.0, 0.6627, 0.3780, 0.60]  # the floor each epoch's fit gave
    losses = [0.6931, 0.6779, 0.6650, 0.6540]
    for n, (loss, floor) in enumerate(zip(losses, floors), 1):
        tab.publish(epoch(n, job("floor", n, loss=loss, first=0.6931, floor=floor)))
    drawn = chart_values(tab.page(), "floor")
    expected = [(v - 0.60) / (0.6931 - 0.60) for v in losses]
    assert drawn == pytest.approx(expected, abs=1e-3) and drawn == sorted(drawn, reverse=True)


def points(html: str) -> list[float]:
    """Every coordinate of every polyline and polygon the page draws."""
    return [float(v) for p in re.findall(r' points="([^"]*)"', html) for xy in p.split() for v in xy.split(",")]


def test_losses_swinging_between_the_largest_doubles_draw_finite_points(tab):
    """(loss - floor) / (first - floor) with losses of ±1e308 was inf / inf: NaN in the chart's points (issue #47, 11)."""
    for n, loss in enumerate([1e308, -1e308, 1e308, -1e308, 1.0], 1):
        row = messages.JobStatus("swing", "running", n, loss, 0.5, 0.0, 1.0, 1.0, "predicted gain per core", 1.0, 1.0, -1.0, "", -1, -1,
                                 False, -1.0, -1.0, "", 1e308, -1e308)
        tab.publish(epoch(n, row, job("steady", n)))
    page = tab.page()
    drawn = points(page)
    assert 'data-job="swing"' in page and drawn and all(math.isfinite(v) for v in drawn)


CONTROLS = "\x1b\x0b\x0c\x85\u2028\x00\x07\x7f"  # ESC, VT, FF, NEL, LINE SEPARATOR, NUL, BEL, DEL (issue #47, 10)


def test_control_characters_in_a_name_are_inert_in_the_log_line_and_the_page(tab):
    name = f"forged{CONTROLS[0]}[31m{CONTROLS[1:]}INFO fake"
    tab.publish(epoch(1, job(name), job("new", 0, state="waiting", why="exploring a new job")))
    (line,) = [x for x in tab.log_lines() if "forged" in x]
    page = tab.page()
    for text in (line, page):
        assert not set(CONTROLS) & set(text), repr(text)
    assert "forged\\u001B[31m\\u000B\\u000C\\u0085\\u2028\\u0000\\u0007\\u007FINFO fake" in line
    assert "new [waiting] it=0 loss=- norm=- " in line  # no loss yet, so none to normalize (issue #48, 3)


def test_a_huge_name_and_many_wide_epochs_stay_within_the_models_bounds(gateway):
    """A 1 MB job name (the History Server replays whatever the log says) is kept to 1,024 UTF-8 bytes, an epoch lists at
    most 1,000 jobs, and wide epochs are kept fewer, so the model stays within its budget (issue #47, 2-4)."""
    status = new_instance(gateway, "slaq.SlaqStatus")
    huge = "\u00e9" * 500_000 + "x"
    status.publish(messages.encode(epoch(1, job(huge))))
    (kept,) = messages.decode(status.reportJson()).history[0].jobs
    assert huge.startswith(kept.job) and len(kept.job.encode()) == 1024
    wide = "w" * 1000
    published = 8
    for n in range(2, 2 + published):
        rows = [job(f"{wide}-{j:04d}", target=wide) for j in range(1200)]
        status.publish(messages.encode(epoch(n, *rows)))
    history = messages.decode(status.reportJson()).history
    assert all(len(e.jobs) <= 1000 for e in history)
    assert [j.job for j in history[-1].jobs] == [f"{wide}-{j:04d}" for j in range(1000)]  # the first in the loop's order
    assert 1 <= len(history) < published  # about 4 MB of text each: the window keeps as many as fit 16 MiB
