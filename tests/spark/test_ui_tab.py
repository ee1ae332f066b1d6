"""The SLAQ tab of a real running app's Spark UI, loaded in a real headless Chromium, its REST JSON,
and the driver log's line per epoch. The app (tests/spark/ui_app.py) is its own process: its own
driver JVM with the UI on (the shared test session has it off), bound to 127.0.0.1 only."""

from __future__ import annotations

import html
import ipaddress
import json
import os
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import pytest

from slaq import messages
from slaq.live.status import WHYS
from tests.fixtures import QUICK_DEFAULTS, stop_child
from tests.spark.ui_app import CV_FOLDS, CV_PARAMS, JOBS, LONG_NAME, SHOWN_ITERATIONS
from tests.spark.ui_support import CHROMIUM, ChartLabels, chromium, dom, get, get_json, illegible_labels, log4j2, screenshot, shown

APP = Path(__file__).with_name("ui_app.py")
# The driver log the way a user sets it up: log4j2.properties in SPARK_CONF_DIR, SLAQ's logger at INFO.
LOG4J2 = log4j2("io.slaqriffle.slaq.SlaqStatus")
NAMES = [name for name, _, _ in JOBS]
SHORT = "short"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The running app: its UI URL, its status report once the CrossValidator and `short` finished and every job has
    iterated, and its driver log."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium for these tests)")
    tmp = tmp_path_factory.mktemp("ui-app")
    (tmp / "conf").mkdir()
    (tmp / "conf" / "log4j2.properties").write_text(LOG4J2)
    (tmp / "conf" / "spark-defaults.conf").write_text(QUICK_DEFAULTS)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "127.0.0.1", "SPARK_CONF_DIR": str(tmp / "conf"),
           "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    log = open(tmp / "driver.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen([sys.executable, str(APP), str(tmp / "local")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                            env=env, text=True)
    try:
        line = proc.stdout.readline()
        assert line, f"the app exited before its UI was up:\n{(tmp / 'driver.log').read_text()[-3000:]}"
        ui = json.loads(line)["ui"]
        deadline = time.monotonic() + 240
        while True:
            report = messages.decode(json.dumps(get_json(ui + "/slaq/json/")))
            unseen = set(NAMES) - {j.job for e in report.history for j in e.jobs if j.iterations >= SHOWN_ITERATIONS}
            tuned = any(j.refit for j in report.finished)
            short = any(j.job == SHORT for j in report.finished)
            if len(report.history) >= 4 and not unseen and short and tuned:
                break
            assert time.monotonic() < deadline, (f"after 240 s: {len(report.history)} epochs; no row with {SHOWN_ITERATIONS}+ "
                                                 f"iterations of {sorted(unseen)}; {SHORT} finished: {short}; refit finished: {tuned}")
            assert proc.poll() is None, (tmp / "driver.log").read_text()[-3000:]
            time.sleep(0.25)
        yield {"ui": ui, "report": report, "tmp": tmp, "proc": proc}
    finally:
        stop_child(proc)
        log.close()


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on ``port``, from the kernel's tables (IPv4-mapped IPv6 as IPv4)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                raw = b"".join(bytes.fromhex(address[i:i + 8])[::-1] for i in range(0, len(address), 8))  # host-order words
                ip = ipaddress.ip_address(raw)
                found.add(str(ip.ipv4_mapped or ip) if isinstance(ip, ipaddress.IPv6Address) else str(ip))
    return found


def test_ui_binds_loopback_only(app):
    url = urlparse(app["ui"])
    assert url.hostname == "127.0.0.1"
    assert listening_addresses(url.port) == {"127.0.0.1"}  # no wildcard (0.0.0.0, ::) socket


def test_rest_json_is_the_schema_status_report(app):
    report = app["report"]
    epochs = [e.epoch for e in report.history]
    assert epochs == sorted(epochs) and len(set(epochs)) == len(epochs)
    assert [e.t for e in report.history] == sorted(e.t for e in report.history)
    for e in report.history:
        assert e.policy == "order" and e.capacity == 2.0
        assert sum(j.cores for j in e.jobs) <= e.capacity + 1e-9
        assert sum(j.used_cores for j in e.jobs) <= e.capacity + 1e-9  # measured over the window its core-seconds were counted in
        for j in e.jobs:
            assert j.state in ("waiting", "running") and (j.state == "running") == (j.iterations > 0)
            assert j.used_cores >= 0 and j.predicted_gain >= 0 and j.why in WHYS
    per_job: dict[str, list[int]] = {}
    for e in report.history:
        for j in e.jobs:
            per_job.setdefault(j.job, []).append(j.iterations)
    assert all(seq == sorted(seq) for seq in per_job.values()), per_job
    assert set(NAMES) <= set(per_job)  # exact names, including the one with <, &, '
    short = next(j for j in report.finished if j.job == SHORT)
    losses = json.loads((app["tmp"] / "short-losses.json").read_text())
    assert short.state == "finished" and short.iterations == len(losses) > 1  # its whole history, not as of its last epoch
    assert short.loss == pytest.approx(losses[-1])  # the final loss, not the last epoch's
    assert (short.cores, short.used_cores) == (0.0, 0.0)
    for j in report.finished:  # (whether a tuner's fits captured losses is the capture tests' business)
        assert j.wall_seconds > 0 and j.core_seconds > 0 and j.why in ("ended", "target reached"), j
    assert 0 < short.seconds_to_ninety <= short.wall_seconds + 0.5  # 90% of its loss reduction (clocks mapped JVM -> Python)
    assert short.seconds_to_target == -1.0 and short.target == ""  # no target: no time to one
    tuned = [j for j in report.finished if j.group]
    assert len({j.group for j in tuned}) == 1 and sum(j.refit for j in tuned) == 1, tuned  # one CrossValidator, one refit
    candidates = sorted((j.candidate, j.fold) for j in tuned if not j.refit)
    assert candidates == [(c, f) for c in range(len(CV_PARAMS)) for f in range(CV_FOLDS)], tuned
    # the JVM's running total of cores used is real: the long jobs used some
    assert any(j.used_cores > 0 for e in report.history for j in e.jobs)
    recent = messages.decode(json.dumps(get_json(app["ui"] + "/slaq/json/?epochs=2")))
    assert len(recent.history) == 2 and recent.history[0].epoch >= report.history[-1].epoch - 1


class _Dom(HTMLParser):
    """The parts of the rendered page the tests look at."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self.svgs: dict[str, dict[str, list[str]]] = {}
        self.tabs: list[str] = []
        self.groups: list[str] = []
        self.keys: list[str] = []
        self._svg: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._nav_link = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("id", "").startswith("slaq-"):
            self._svg = a["id"]
            self.svgs[self._svg] = {}
        elif self._svg and a.get("class") in ("slaq-series", "slaq-mean", "slaq-used"):
            self.svgs[self._svg].setdefault(a["class"], []).append(a.get("data-job", ""))
        elif tag == "tr" and a.get("class") == "slaq-job":
            self._row = []
        elif tag == "tr" and a.get("class") == "slaq-group":
            self.groups.append(a["data-group"])
        elif tag == "span" and a.get("class") == "slaq-key":
            self.keys.append(a["data-job"])
        elif tag == "td" and self._row is not None:
            self._cell = []
        elif tag == "a" and "nav-link" in (a.get("class") or ""):
            self._nav_link = True

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg = None
        elif tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        elif tag == "a":
            self._nav_link = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._nav_link and data.strip():
            self.tabs.append(data.strip())


def test_tab_renders_jobs_and_charts_in_headless_chromium(app):
    tmp = app["tmp"]
    url = app["ui"] + "/slaq/"
    rendered = dom(url, tmp / "chromium-profile")
    page = _Dom()
    page.feed(rendered)
    assert "SLAQ" in page.tabs and "Jobs" in page.tabs, page.tabs  # our tab in Spark's own navigation bar
    rows = {r[1]: r for r in page.rows}
    assert {shown(n) for n in NAMES} <= set(rows), page.rows  # every job, names escaped and shown as text, bidi controls inert
    assert rows[SHORT][3] == "finished" and rows[SHORT][4] in WHYS
    assert all(rows[shown(n)][3] == "running" and int(rows[shown(n)][5]) >= SHOWN_ITERATIONS for n in NAMES if n != SHORT)
    assert "\u202e" not in re.sub(r'data-job="[^"]*"', "", rendered)  # only the machine-readable attributes keep it raw
    assert rendered.count("<bdi>") >= 2 * len(NAMES)  # each name isolated in its row and in the legend
    # #, job, tuning, state, why, iterations, loss, normalized loss, predicted gain, cores allocated, used, wall time, time to target,
    # time to 90%, core-seconds
    assert all(len(r) == 15 and r[4] in WHYS for r in page.rows), page.rows
    assert [w for w in WHYS if f"<em>{w}</em>" not in rendered] == []  # the legend explains every reason a row can show
    assert rows[SHORT][12] == "\u2013" and rows[SHORT][13].endswith(" s")  # no target; its time to 90% once it finished
    tuned = [r for r in page.rows if r[2] != "\u2013"]
    assert sum(r[2].startswith("refit") for r in tuned) == 1 and len(tuned) == len(CV_PARAMS) * CV_FOLDS + 1, tuned
    assert len(page.groups) == 1  # the CrossValidator's heading, its fits under it
    loss, alloc = page.svgs["slaq-loss-chart"], page.svgs["slaq-alloc-chart"]
    assert set(NAMES) <= set(loss["slaq-series"]) and loss["slaq-mean"] == [""]
    assert {shown(n) for n in alloc["slaq-series"]} <= set(rows) and len(alloc["slaq-series"]) >= 2 and alloc["slaq-used"] == [""]
    # a legend key with its name for every series
    assert set(loss["slaq-series"]) | set(alloc["slaq-series"]) <= set(page.keys) and {shown(n) for n in page.keys} <= set(rows)
    labels = ChartLabels(rendered).labels
    assert len(labels["slaq-alloc-chart"]) == len(alloc["slaq-series"]) and len(labels["slaq-loss-chart"]) == len(loss["slaq-series"])
    assert illegible_labels(rendered) == []  # every job's number reads on its band or line end, whatever its colour
    screenshot(url, tmp / "slaq-tab-live.png", tmp / "chromium-profile")


FIT_PROBE = """<script>window.addEventListener("load", () => {
  const table = document.getElementById("slaq-jobs").getBoundingClientRect();
  document.body.setAttribute("data-fit", JSON.stringify({viewport: window.innerWidth, page: document.scrollingElement.scrollWidth,
                                                          table: Math.ceil(table.right)}));
});</script>"""


def test_the_jobs_table_fits_a_1400_pixel_window(app):
    """At 1400 px the page scrolls no sideways and the jobs table ends inside the window (long names wrap). The page
    is the tab's own HTML with a probe script added, loaded from a file whose base is the UI (its styles and scripts)."""
    tmp = app["tmp"]
    page = get(app["ui"] + "/slaq/")
    page = page.replace("<head>", f'<head><base href="{app["ui"]}/slaq/">', 1).replace("</body>", FIT_PROBE + "</body>", 1)
    probe = tmp / "slaq-fit.html"
    probe.write_text(page)
    rendered = chromium(tmp / "chromium-profile", "--window-size=1400,900", "--dump-dom", probe.as_uri())
    fit = json.loads(html.unescape(re.search(r'data-fit="([^"]*)"', rendered).group(1)))
    assert fit["viewport"] == 1400 and fit["page"] <= fit["viewport"] and fit["table"] <= fit["viewport"], fit


def test_driver_log_has_one_info_line_per_epoch(app):
    epochs = app["report"].history
    history = [e.epoch for e in epochs]
    text = (app["tmp"] / "driver.log").read_text()
    lines = [x for x in text.splitlines() if " INFO io.slaqriffle.slaq.SlaqStatus: SLAQ epoch " in x]
    numbers = [int(x.split("SLAQ epoch ")[1].split()[0]) for x in lines]
    assert numbers == sorted(set(numbers)), numbers  # one line per epoch, in order
    assert numbers[0] == history[0] and set(history) <= set(numbers)  # the same epochs the tab shows (idle ones before the jobs are not kept)
    # no epoch of a busy period is missing: after one with jobs comes the next (while no job is registered, as between the
    # CrossValidator's folds, only the first idle epoch is kept and logged)
    assert all(b.epoch == a.epoch + 1 for a, b in zip(epochs, epochs[1:]) if a.jobs), history
    last = lines[numbers.index(history[-1])]
    assert "policy order" in last and f"{LONG_NAME} [running] it=" in last and "cores=" in last


def test_names_are_capped_and_their_bidi_controls_made_inert(gateway):
    from sparkshim.bridge import call_static

    def html(method: str, name: str) -> str:
        return call_static(gateway, "seam.Html", method, ["java.lang.String"], name)

    assert html("text", "x" * 200) == "x" * 119 + "\u2026" and html("text", "y" * 120) == "y" * 120
    assert html("text", "a\u202eb<\u2067c") == "a\\u202Eb&lt;\\u2067c"
    assert html("name", "\u05d0\u05d1 <i>") == "<bdi>\u05d0\u05d1 &lt;i&gt;</bdi>"
