"""Both tabs in Spark's History Server: the Riffle tab's app (tests/spark/riffle_ui_app.py: a SLAQ job run
to its end, a merged shuffle Spark then cleaned up, a fallen-back one and an unsafe one) with the event log
on, then a real History Server process set up as docs/ui.md says (the shim jar in SPARK_DAEMON_CLASSPATH)
replaying that log. Its /history/<app>/slaq/json/ and /riffle/json/ show the jobs and shuffles the live tabs
showed, and both pages read in headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from riffle import messages as riffle_messages
from riffle.driver.tab_rows import MAX_FINISHED
from slaq import messages as slaq_messages
from srlab.shim_bench.history_server import event_log_files, history_server
from srlab.shim_bench.ui import long_log
from srsupport.daemons import DaemonProcess
from tests.fixtures import QUICK_DEFAULTS, QUICK_JVM
from tests.spark.riffle_ui_app import SLAQ_JOB
from tests.spark.ui_support import assert_riffle_page_reads, dom, get, get_json, illegible_labels, log4j2, riffle_summary, screenshot

APP = Path(__file__).with_name("riffle_ui_app.py")
TAB_EVENT = '"Event":"io.slaqriffle.seam.TabEvent"'
LONG_EPOCHS, LONG_JOBS = 20_000, 15  # about 150 MB of SLAQ events: 2.8 hours at a 0.5 s epoch
FORGED_CHANGES, FORGED_ROWS = 12, 100  # 1,200 settled shuffles in a forged log: the Riffle model lists the latest MAX_FINISHED
FORGED = [TAB_EVENT.join(["{", ',"tab":"slaq","message":{"type":"epoch_status","epoch":"x"}}\n'])] * 2


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """The live tabs' JSON of a finished app, and the History Server's URL of the same app."""
    tmp = tmp_path_factory.mktemp("history")
    events = tmp / "events"
    for d in ("conf", "local", "events"):
        (tmp / d).mkdir()
    (tmp / "conf" / "log4j2.properties").write_text(log4j2())
    (tmp / "conf" / "spark-defaults.conf").write_text(
        f"spark.eventLog.enabled true\nspark.eventLog.dir {events.as_uri()}\nspark.eventLog.compress false\n"
        + QUICK_DEFAULTS)
    up = DaemonProcess([tmp / "local"])
    with socket.socket() as s:  # nothing listens there: a merger that is down
        s.bind(("127.0.0.1", 0))
        down = f"127.0.0.1:{s.getsockname()[1]}"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "127.0.0.1", "SPARK_CONF_DIR": str(tmp / "conf"),
           "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    try:
        with open(tmp / "driver.log", "w") as log:
            proc = subprocess.Popen([sys.executable, str(APP), str(tmp / "local"), up.address, down], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=log, env=env, text=True)
            line = proc.stdout.readline()
            assert line, f"the app exited early:\n{(tmp / 'driver.log').read_text()[-4000:]}"
            started = json.loads(line)
            ui = started["ui"]
            live = {"slaq": slaq_messages.decode(get(ui + "/slaq/json/")), "riffle": riffle_messages.decode(get(ui + "/riffle/json/")),
                    "riffle_page": get(ui + "/riffle/"), "slaq_page": get(ui + "/slaq/"),
                    "app": get_json(ui + "/api/v1/applications")[0]["id"], "shuffles": started["shuffles"]}
            proc.stdin.close()
            assert proc.wait(120) == 0, (tmp / "driver.log").read_text()[-4000:]
        with history_server(events, live["app"], tmp / "history.log", {**env, "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM}) as url:
            yield {**live, "url": url, "events": events, "tmp": tmp}
    finally:
        up.stop()


def test_event_log_carries_both_tabs(replayed):
    text = "".join(log.read_text() for log in event_log_files(replayed["events"]))
    assert text.count(TAB_EVENT) >= 2 and '"tab":"slaq"' in text and '"tab":"riffle"' in text


def test_history_slaq_json_equals_the_live_one(replayed):
    history = slaq_messages.decode(get(replayed["url"] + "/slaq/json/"))
    live = replayed["slaq"]
    assert SLAQ_JOB in {j.job for j in live.finished}
    assert history.history == live.history and history.finished == live.finished and history.summary == live.summary


def test_history_riffle_json_equals_the_live_one(replayed):
    history = riffle_messages.decode(get(replayed["url"] + "/riffle/json/"))
    live = replayed["riffle"]
    assert [r.shuffle for r in history.shuffles] == [r.shuffle for r in live.shuffles]
    assert {r.shuffle for r in live.shuffles} == set(replayed["shuffles"].values()) and live.totals.groups_merged > 0
    assert history.shuffles == live.shuffles and history.totals == live.totals
    assert history.unmerged == live.unmerged and live.unmerged[0].shuffles == live.totals.unmerged["unsafe"] > 1  # the summary, not rows
    assert {m.address for m in history.mergers} == {m.address for m in live.mergers}
    cleaned = next(r for r in history.shuffles if r.shuffle == replayed["shuffles"]["A"])  # Spark cleaned it up: its row stays
    assert cleaned.cleaned and cleaned.state == "settled" and cleaned.groups_merged > 0


def test_history_pages_render_in_sparks_frame(replayed):
    assert 'id="slaq-jobs"' in replayed["slaq_page"] and "/static/bootstrap.min.css" in replayed["slaq_page"]  # the live page
    slaq = get(replayed["url"] + "/slaq/")
    assert 'id="slaq-jobs"' in slaq and "/static/bootstrap.min.css" in slaq and 'data-job="short &lt;j&gt;"' in slaq
    riffle = get(replayed["url"] + "/riffle/")
    assert riffle.count('class="riffle-shuffle"') == len(replayed["riffle"].shuffles) and 'id="riffle-mergers"' in riffle
    assert riffle_summary(riffle) == riffle_summary(replayed["riffle_page"])  # the same counts, live and replayed


def test_history_tabs_read_in_headless_chromium(replayed):
    tmp = replayed["tmp"]
    slaq = dom(replayed["url"] + "/slaq/", tmp / "profile")
    assert "short &lt;j&gt;" in slaq and illegible_labels(slaq) == []
    riffle = dom(replayed["url"] + "/riffle/", tmp / "profile")
    assert_riffle_page_reads(riffle, riffle_messages.decode(get(replayed["url"] + "/riffle/json/")))
    screenshot(replayed["url"] + "/slaq/", tmp / "slaq-tab-history.png", tmp / "profile")
    screenshot(replayed["url"] + "/riffle/", tmp / "riffle-tab-history.png", tmp / "profile", height=1400)


def test_a_long_applications_log_is_replayed_in_bounded_memory(replayed, tmp_path):
    """A History Server with a 256 MiB heap replays 20,000 SLAQ epochs of 15 jobs (and two forged events):
    its tab shows the latest epochs and every epoch's core-seconds, and it still serves the other application."""
    logs = tmp_path / "events"
    shutil.copytree(replayed["events"], logs)
    long_id = long_log(replayed["events"], logs, replayed["app"], LONG_EPOCHS, LONG_JOBS, FORGED)
    env = {"SPARK_DAEMON_MEMORY": "256m", "SPARK_LOCAL_IP": "127.0.0.1"}
    with history_server(logs, long_id, tmp_path / "history.log", env) as url:
        status = slaq_messages.decode(get(url + "/slaq/json/", timeout=300))
        assert len(status.history) == 600 and status.history[-1].epoch == LONG_EPOCHS - 1
        core_seconds = {j.job: j.core_seconds for j in status.summary.jobs}
        for j in range(LONG_JOBS):  # every epoch applied, none sampled: cores x 0.5 s for each of the 19,999 intervals
            assert core_seconds[f"job-{j:03d}"] == pytest.approx((0.25 + (j % 4) * 0.25) * 0.5 * (LONG_EPOCHS - 1))
        assert 'id="slaq-jobs"' in get(url + "/slaq/")
        other = url.replace(long_id, replayed["app"])
        assert slaq_messages.decode(get(other + "/slaq/json/")).finished == replayed["slaq"].finished
    log = (tmp_path / "history.log").read_text()
    assert log.count("2 of the slaq tab's events could not be read and were skipped") == 1 and "OutOfMemoryError" not in log


def test_a_wide_applications_log_is_replayed_in_bounded_memory(replayed, tmp_path):
    """A History Server with a 128 MiB heap replays 100 SLAQ epochs of 1,000 jobs (issue #47, 3: 600 x 1,000 ran a 512 MiB
    server out of memory while it saved the tab's model, and the tab was lost): it keeps the latest epochs that fit
    the model's budget, each with its 1,000 jobs, and serves the tab."""
    logs = tmp_path / "events"
    logs.mkdir()
    wide_id = long_log(replayed["events"], logs, replayed["app"], 100, 1000)
    with history_server(logs, wide_id, tmp_path / "history.log", {"SPARK_DAEMON_MEMORY": "128m", "SPARK_LOCAL_IP": "127.0.0.1"}) as url:
        (last,) = slaq_messages.decode(get(url + "/slaq/json/?epochs=1", timeout=300)).history
        assert last.epoch == 99 and len(last.jobs) == 1000
        assert 'id="slaq-jobs"' in get(url + "/slaq/", timeout=300)
    assert "OutOfMemoryError" not in (tmp_path / "history.log").read_text()


def forged_riffle_changes(events: Path, changes: int, rows: int, first: int) -> list[str]:
    """``changes`` logged Riffle changes, each adding ``rows`` settled shuffles (ids from ``first`` on), made from the
    app's own last change in ``events`` (its encoding) and its last settled row."""
    logged = [json.loads(line) for log in event_log_files(events) for line in log.read_text().splitlines()
              if TAB_EVENT in line and '"tab":"riffle"' in line]
    template = next(e for e in reversed(logged) if any(r["state"] == "settled" for r in e["message"]["shuffles"]))
    row = next(r for r in reversed(template["message"]["shuffles"]) if r["state"] == "settled")
    forged = []
    for c in range(changes):
        shuffles = [{**row, "shuffle": first + c * rows + k} for k in range(rows)]
        forged.append(json.dumps({**template, "message": {**template["message"], "reset": False, "removed": [], "shuffles": shuffles}}) + "\n")
    return forged


def test_a_forged_log_of_many_settled_shuffles_is_replayed_to_the_live_bound(replayed, tmp_path):
    """A forged log of 60,000 settled shuffles once made the History Server keep them all and serve a 22 MB Riffle page:
    replayed, the model is bounded as the live one is, to every merging shuffle and the latest MAX_FINISHED finished."""
    logs = tmp_path / "events"
    logs.mkdir()
    first = 1_000_000
    forged = forged_riffle_changes(replayed["events"], FORGED_CHANGES, FORGED_ROWS, first)
    forged_id = long_log(replayed["events"], logs, replayed["app"], 0, 0, forged)
    with history_server(logs, forged_id, tmp_path / "history.log", {"SPARK_DAEMON_JAVA_OPTS": QUICK_JVM}) as url:
        status = riffle_messages.decode(get(url + "/riffle/json/"))
        page = get(url + "/riffle/")
    last = first + FORGED_CHANGES * FORGED_ROWS
    assert MAX_FINISHED == riffle_messages.MAX_FINISHED_SHUFFLES < FORGED_CHANGES * FORGED_ROWS
    assert [r.shuffle for r in status.shuffles if r.state != "merging"] == list(range(last - MAX_FINISHED, last))  # the newest
    assert page.count('class="riffle-shuffle"') == len(status.shuffles)
