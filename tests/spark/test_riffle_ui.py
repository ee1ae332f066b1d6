"""The Riffle tab of a real running app (tests/spark/riffle_ui_app.py: local-cluster Spark, one real
merger daemon up and one merger address down; a merged shuffle Spark then cleaned up, a fallen-back one,
both with one output left in a group that never filled, and 21 unsafe ones never held), Spark's PrometheusServlet
scrape of the SLAQ and Riffle metric sources, and the
one summary block per system in the driver log at application end."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import urllib.parse
from collections import Counter
from html import unescape
from pathlib import Path

import pytest

from riffle import messages as riffle_messages
from slaq import messages as slaq_messages
from srsupport.daemons import DaemonProcess
from tests.fixtures import QUICK_DEFAULTS, stop_child
from tests.spark.riffle_ui_app import NAMESPACE, SLAQ_JOB, UNSAFE_FLOOD
from tests.spark.ui_support import assert_riffle_page_reads, dom, get, log4j2, riffle_summary, screenshot

APP = Path(__file__).with_name("riffle_ui_app.py")
LOG4J2 = log4j2("io.slaqriffle.slaq.SlaqStatus", "io.slaqriffle.SlaqRiffle")  # Riffle's summary: on its "on" line's logger
MARK = "<b>&'x'"  # in the app's directory name, so in every stage name (PySpark's call site is the file's path)
ESCAPED = "&lt;b&gt;&amp;&#39;x&#39;"
SERIES = re.compile(r'^metrics_(\w+?)_Value\{type="gauges"\} (\S+)$', re.M)


def closed_port_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The running app once its shuffles settled and A was cleaned: its UI URL, its Riffle and SLAQ JSON, its driver log."""
    tmp = tmp_path_factory.mktemp("riffle-ui-app")
    (tmp / "conf").mkdir()
    (tmp / "conf" / "log4j2.properties").write_text(LOG4J2)
    (tmp / "conf" / "spark-defaults.conf").write_text(QUICK_DEFAULTS)
    (tmp / "local").mkdir()
    (tmp / f"app {MARK}").mkdir()
    app_copy = tmp / f"app {MARK}" / APP.name
    app_copy.write_text(APP.read_text())
    up = DaemonProcess([tmp / "local"])
    down = closed_port_address()  # nothing listens there: a merger that is down
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "127.0.0.1", "SPARK_CONF_DIR": str(tmp / "conf"),
           "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    log = open(tmp / "driver.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen([sys.executable, str(app_copy), str(tmp / "local"), up.address, down], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=log, env=env, text=True)
    try:
        line = proc.stdout.readline()
        assert line, f"the app exited early:\n{(tmp / 'driver.log').read_text()[-4000:]}"
        started = json.loads(line)
        ui = started["ui"]
        riffle = riffle_messages.decode(get(ui + "/riffle/json/"))
        slaq = slaq_messages.decode(get(ui + "/slaq/json/"))
        yield {"ui": ui, "shuffles": started["shuffles"], "unsafe": started["unsafe"], "riffle": riffle, "slaq": slaq, "up": up.address,
               "down": down, "proc": proc, "log": tmp / "driver.log"}
    finally:
        stop_child(proc)
        log.close()
        up.stop()


def rows(app) -> dict[str, object]:
    """The app's shuffle A (both mergers listed; cleaned by Spark since) and B (only the down one) as the tab's JSON
    shows them."""
    return {key: next(r for r in app["riffle"].shuffles if r.shuffle == sid) for key, sid in app["shuffles"].items()}


def test_json_shows_merged_and_fallen_back_groups_with_their_cause(app):
    status = app["riffle"]
    a, b = rows(app)["A"], rows(app)["B"]
    assert MARK in a.name and a.name.startswith("reduceByKey at ")
    assert a.state == b.state == "settled" and a.policy == "nway 2" and (a.maps, a.reducers) == (7, 4)
    assert a.groups_merged > 0 and a.groups_fell_back == {} and a.bytes_merged > 0 and a.blocks_merged < a.blocks_unmerged
    assert b.groups_merged == 0 and set(b.groups_fell_back) == {"merger_down"} and b.groups_fell_back["merger_down"] > 0
    assert b.blocks_merged == b.blocks_unmerged and b.bytes_merged == 0
    assert a.gate_wait_seconds >= 0 and b.gate_wait_seconds >= 0
    mergers = {m.address: m for m in status.mergers}
    assert mergers[app["up"]].health == "up" and mergers[app["up"]].merges_done >= a.groups_merged
    assert mergers[app["down"]].health == "down" and mergers[app["down"]].merges_done == 0
    t = status.totals
    assert (t.shuffles, t.settled, t.merged, t.groups_merged, t.groups_fell_back) == (
        2 + 1 + UNSAFE_FLOOD, 2, 1, a.groups_merged, b.groups_fell_back)
    assert (t.bytes_merged, t.blocks_unmerged - t.blocks_merged) == (a.bytes_merged, a.blocks_unmerged - a.blocks_merged)


def test_a_shuffle_spark_cleaned_keeps_its_row_and_outcome(app):
    listed = {r.shuffle for r in app["riffle"].shuffles}
    assert set(app["shuffles"].values()) <= listed, (app["shuffles"], app["riffle"])
    a, b = rows(app)["A"], rows(app)["B"]
    assert a.cleaned and not b.cleaned  # B's RDD is still referenced
    assert a.state == "settled" and a.groups_merged > 0 and a.reason == "all merges finished"
    html = get(app["ui"] + "/riffle/")
    row = re.search(rf'<tr class="riffle-shuffle" data-shuffle="{a.shuffle}"[^>]*>(.*?)</tr>', html)
    assert row and 'data-cleaned="true"' in row.group(0) and "cleaned" in re.sub(r"<[^>]+>", " ", row.group(1)), html


def test_counts_add_up_and_the_unsafe_shuffles_are_one_summary_not_rows(app):
    """Tiny unsafe shuffles (as spark.ml's treeAggregate makes) once filled the list one row each and pushed the merged
    shuffles off it: now they are one summary line with their count, the latest ids and why, and the list keeps A and B."""
    status, unsafe = app["riffle"], app["unsafe"]
    assert len(unsafe) == 1 + UNSAFE_FLOOD
    t = status.totals
    states = Counter(r.state for r in status.shuffles)
    assert set(states) <= {"merging", "settled"} and (states["merging"], states["settled"]) == (t.merging, t.settled)
    assert t.shuffles == t.merging + t.settled + sum(t.unmerged.values()) and len(status.shuffles) == t.merging + t.settled
    assert not set(unsafe) & {r.shuffle for r in status.shuffles}
    (summary,) = status.unmerged
    assert (summary.cause, summary.shuffles, list(summary.latest)) == ("unsafe", len(unsafe), unsafe[-riffle_messages.MAX_UNMERGED_LATEST:])
    assert "serializer" in summary.reason and summary.stage >= 0 and summary.name
    assert t.unmerged == {"unsafe": len(unsafe)} and t.merged == sum(1 for r in status.shuffles if r.state == "settled" and r.groups_merged > 0)
    html = get(app["ui"] + "/riffle/")
    (row,) = re.findall(r'<tr class="riffle-unmerged"[^>]*>.*?</tr>', html)
    assert f'data-cause="unsafe" data-shuffles="{len(unsafe)}"' in row and ", ".join(map(str, unsafe[-5:])) in row, row
    assert html.count('class="riffle-shuffle"') == len(status.shuffles) and 'data-state="unmerged"' not in html
    summary_line = riffle_summary(html)
    assert summary_line.startswith(f"{t.shuffles} shuffles seen: {t.merging} merging · {t.settled} settled ({t.merged} with groups merged) · "
                                   f"{len(unsafe)} unmerged (unsafe {len(unsafe)}) · {t.groups_merged} groups merged"), summary_line


def test_a_partly_merged_shuffle_says_why_its_outputs_stayed_unmerged(app):
    """A's 7 outputs on 2 executors, merged 2 by 2: one executor is left an odd one that fills no group. Its row read
    "all merges finished" and nothing counted that output; now the row counts it and says why."""
    a, b = rows(app)["A"], rows(app)["B"]
    assert (a.outputs, a.groups_merged, a.outputs_unmerged, a.reason) == (7, 3, {"unfilled": 1}, "all merges finished")
    assert a.unmerged_why == "1 of 7 outputs unmerged: 1 in a group that never filled (alone on its executor at the map stage's end)"
    assert (b.outputs, b.outputs_unmerged) == (7, {"unfilled": 1, "merger_down": 6}), b
    assert b.unmerged_why.startswith("7 of 7 outputs unmerged: 1 in a group that never filled") and "6 in groups that fell back (merger down)" in b.unmerged_why
    html = get(app["ui"] + "/riffle/")
    row = re.search(rf'<tr class="riffle-shuffle" data-shuffle="{a.shuffle}"[^>]*>(.*?)</tr>', html)
    assert row and f'<span class="riffle-outputs-unmerged">{a.unmerged_why}</span>' in unescape(row.group(1)), row


def test_page_renders_the_model_escaped_in_sparks_page(app):
    html = get(app["ui"] + "/riffle/")
    assert 'id="riffle-shuffles"' in html and 'id="riffle-mergers"' in html and 'id="riffle-saved-chart"' in html
    assert "<title>" in html and "Riffle" in html and "/static/bootstrap.min.css" in html  # inside Spark's own page and styles
    assert MARK not in html and html.count(ESCAPED) >= 2  # stage names (user input) are escaped
    assert 'title="groups left unmerged, by cause">Groups fell back' in html and html.count('class="riffle-bar"') == len(app["riffle"].shuffles)
    assert f'<span data-cause="merger_down">merger down {rows(app)["B"].groups_fell_back["merger_down"]}</span>' in html


def test_tab_in_sparks_navigation_renders_in_headless_chromium(app, tmp_path):
    url = app["ui"] + "/riffle/"
    rendered = dom(url, tmp_path / "profile")
    assert re.search(r'<a class="nav-link[^"]*" href="[^"]*/riffle/">Riffle</a>', rendered), rendered[:3000]
    assert "Groups fell back" in rendered and MARK not in rendered
    assert_riffle_page_reads(rendered, app["riffle"])
    screenshot(url, tmp_path / "riffle-tab-live.png", tmp_path / "profile", height=1400)


def test_prometheus_scrape_has_slaq_and_riffle_series_matching_the_json(app):
    """At the URL docs/ui.md gives, served at once: a redirect (Spark's answer without the trailing slash) is empty to curl."""
    path = re.search(r"`GET http://<driver>:4040(/\S+)` then includes", (Path(__file__).parents[2] / "docs" / "ui.md").read_text())
    assert path, "docs/ui.md no longer names the scrape URL"
    ui = urllib.parse.urlsplit(app["ui"])
    connection = http.client.HTTPConnection(ui.hostname, ui.port, timeout=10)
    connection.request("GET", path.group(1))
    answer = connection.getresponse()
    scrape = answer.read().decode()
    connection.close()
    assert answer.status == 200 and scrape, (answer.status, answer.getheader("Location"))
    series = {name: float(value) for name, value in SERIES.findall(scrape)}
    riffle = {k.removeprefix(f"{NAMESPACE}_driver_riffle_"): v for k, v in series.items() if k.startswith(f"{NAMESPACE}_driver_riffle_")}
    t = app["riffle"].totals
    assert riffle["merges_merged"] == t.groups_merged and riffle["merges_fellBack_merger_down"] == t.groups_fell_back["merger_down"]
    assert riffle["merges_fellBack_refused"] == 0 and riffle["shuffles"] == t.shuffles
    assert riffle["bytes_merged"] == t.bytes_merged and riffle["blocks_saved"] == t.blocks_unmerged - t.blocks_merged > 0
    assert riffle["gate_waitSeconds"] == pytest.approx(t.gate_wait_seconds)
    driver = {k: v for k, v in riffle.items() if k.startswith("driver_")}  # the driver JVM's own state: nothing held at the end
    assert set(driver) == {"driver_shufflesHeld", "driver_shufflesTracked", "driver_stagesTracked", "driver_eventsPending"}
    assert driver["driver_shufflesHeld"] == driver["driver_shufflesTracked"] == 0
    slaq = {k.removeprefix(f"{NAMESPACE}_driver_slaq_"): v for k, v in series.items() if k.startswith(f"{NAMESPACE}_driver_slaq_")}
    report = app["slaq"]
    last = report.history[-1]
    assert slaq["jobs_finished"] == len(report.finished) >= 1 and SLAQ_JOB in {j.job for j in report.finished}
    assert slaq["jobs_running"] == sum(j.state == "running" for j in last.jobs)
    assert slaq["cores_allocated"] == pytest.approx(sum(j.cores for j in last.jobs))
    assert slaq["cores_used"] == pytest.approx(sum(j.used_cores for j in last.jobs))
    assert {"epoch_seconds", "normalizedLoss_mean", "jobs_waiting"} <= set(slaq)
    summary = {j.job: j for j in report.summary.jobs}
    assert summary[SLAQ_JOB].core_seconds > 0 and sum(j.share for j in summary.values()) == pytest.approx(1.0)


def test_one_summary_block_per_system_at_stop(app):
    assert "SLAQ summary:" not in app["log"].read_text()  # not before the application ends
    app["proc"].stdin.close()
    assert app["proc"].wait(90) == 0
    log = app["log"].read_text()
    assert log.count("SLAQ summary:") == 1 and log.count("Riffle summary:") == 1, log[-4000:]
    riffle = log[log.index("Riffle summary:"):].split("\n")[:3]
    t = app["riffle"].totals
    assert f"{t.groups_merged} groups merged" in riffle[0] and f"merger down {t.groups_fell_back['merger_down']}" in riffle[0]
    assert f"({t.blocks_unmerged - t.blocks_merged} saved)" in riffle[1]
    slaq = log[log.index("SLAQ summary:"):].split("\n")[:2]
    job = next(j for j in app["slaq"].summary.jobs if j.job == SLAQ_JOB)  # the tab's figures, as its JSON had them
    assert "no targets; mean time to 90% of the loss reduction" in slaq[0]
    ninety = "not reached" if job.seconds_to_ninety < 0 else f"{job.seconds_to_ninety:.1f} s"  # -1: the JSON's "none"
    assert slaq[1].strip().startswith(f"{SLAQ_JOB}: no target, time to 90% {ninety},"), slaq[1]
