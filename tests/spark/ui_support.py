"""What the UI tests share: the driver log set up the way a user sets it up (log4j2.properties in
SPARK_CONF_DIR, chosen loggers at INFO), Debian's headless Chromium (the DOM it renders, screenshots),
reading a page or its JSON, and what makes a chart's labels legible without telling colours apart."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import ends

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
SCREENSHOTS = "SR_SCREENSHOTS"  # a directory: every screenshot the UI tests take is copied there too, to look at
MIN_CONTRAST = 4.5  # WCAG 2 AA for normal text
CHART_BACKGROUND = "#fafafa"  # the SLAQ charts' plot area


BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(name: str) -> str:
    """How a tab shows a job name as text: bidirectional controls as visible escapes (``seam.Html.text``)."""
    return BIDI_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04X}", name)


def log4j2(*info_loggers: str) -> str:
    """A log4j2.properties: WARN to stderr, and each of ``info_loggers`` at INFO."""
    lines = ["rootLogger.level = warn", "rootLogger.appenderRef.stderr.ref = console", "appender.console.type = Console",
             "appender.console.name = console", "appender.console.target = SYSTEM_ERR", "appender.console.layout.type = PatternLayout",
             "appender.console.layout.pattern = %d{HH:mm:ss} %p %c: %m%n"]
    for i, name in enumerate(info_loggers):
        lines += [f"logger.l{i}.name = {name}", f"logger.l{i}.level = info"]
    return "\n".join(lines) + "\n"


def get(url: str, timeout: float = 10) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def get_json(url: str) -> Any:
    return json.loads(get(url))


# ---------------------------------------------------------------- headless Chromium
def chromium(profile: Path, *args: str) -> str:
    """Runs headless Chromium with its own ``profile`` directory; its stdout (fails the test on a non-zero exit)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium for these tests)")
    run = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, ends(run.stderr)
    return run.stdout


def dom(url: str, profile: Path) -> str:
    """The page's DOM as Chromium rendered it."""
    return chromium(profile, "--dump-dom", url)


def screenshot(url: str, shot: Path, profile: Path, height: int = 1600) -> Path:
    """A 1280 px wide PNG of the page at ``shot``, and a copy in $SR_SCREENSHOTS when that is set."""
    chromium(profile, f"--window-size=1280,{height}", f"--screenshot={shot}", url)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000, shot
    if os.environ.get(SCREENSHOTS):
        Path(os.environ[SCREENSHOTS]).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(os.environ[SCREENSHOTS]) / shot.name)
    return shot


# ---------------------------------------------------------------- legibility
def _rgb(colour: str) -> tuple[float, float, float]:
    """``#rgb`` or ``#rrggbb`` as channels in [0, 1]."""
    h = colour.strip().lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    assert re.fullmatch(r"[0-9a-fA-F]{6}", h), colour
    return int(h[0:2], 16) / 255, int(h[2:4], 16) / 255, int(h[4:6], 16) / 255


def blend(colour: str, background: str, opacity: float) -> str:
    """``colour`` drawn at ``opacity`` over ``background``, as ``#rrggbb``."""
    mixed = (opacity * c + (1 - opacity) * b for c, b in zip(_rgb(colour), _rgb(background), strict=True))
    return "#" + "".join(f"{round(v * 255):02x}" for v in mixed)


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two colours (1 to 21)."""
    def luminance(colour: str) -> float:
        r, g, b_ = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in _rgb(colour))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b_

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


class ChartLabels(HTMLParser):
    """Each SLAQ chart's series (their fill and opacity) and the job numbers drawn on them (their text, fill and halo)."""

    def __init__(self, page: str):
        super().__init__()
        self.series: dict[str, dict[str, dict[str, str]]] = {}  # chart id -> job -> the series' attributes
        self.labels: dict[str, list[dict[str, str]]] = {}  # chart id -> its labels' attributes, "text" their text
        self._chart: str | None = None
        self._label: dict[str, str] | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "svg" and a.get("id", "").startswith("slaq-"):
            self._chart = a["id"]
            self.series[self._chart], self.labels[self._chart] = {}, []
        elif self._chart and a.get("class") == "slaq-series":
            self.series[self._chart][a["data-job"]] = a
        elif self._chart and tag == "text" and a.get("class") == "slaq-label":
            self._label = {**a, "text": ""}
            self.labels[self._chart].append(self._label)

    def handle_endtag(self, tag):
        if tag == "svg":
            self._chart = None
        elif tag == "text":
            self._label = None

    def handle_data(self, data):
        if self._label is not None:
            self._label["text"] += data


def illegible_labels(page: str) -> list[str]:
    """The SLAQ charts' job numbers that do not read without telling colours apart: each needs a text fill
    with WCAG AA contrast against what it is drawn on (the plot's background, or its job's band blended over
    it) and against its halo, a halo at least 2 px wide, and a number. Fails when a chart has no label."""
    charts = ChartLabels(page)
    bad = []
    for chart, labels in charts.labels.items():
        assert labels, f"{chart} has no job numbers"
        for label in labels:
            band = charts.series[chart].get(label.get("data-job", ""), {})
            under = blend(band["fill"], CHART_BACKGROUND, float(band.get("fill-opacity") or 1)) if band.get("fill", "none") != "none" \
                else CHART_BACKGROUND
            fill, halo = label.get("fill", "#000"), label.get("stroke", "none")
            width = float(label.get("stroke-width") or 0)
            if not label["text"].strip().isdigit() or halo == "none" or width < 2 \
                    or min(contrast(fill, under), contrast(fill, halo)) < MIN_CONTRAST:
                bad.append(f"{chart}: {label}: on {under}")
    return bad


def _text(markup: str) -> str:
    """The text of an HTML fragment, entities decoded and white space collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


def riffle_summary(page: str) -> str:
    """The Riffle tab's summary line as text, without its links (they differ between the live UI and the History Server)."""
    found = re.search(r'<p id="riffle-summary">(.*?)</p>', page, re.S)
    assert found, page[:3000]
    return _text(re.sub(r"<a [^>]*>.*?</a>", "", found.group(1), flags=re.S))


def assert_riffle_page_reads(page: str, status: Any) -> None:
    """The Riffle tab of ``status`` (its ``riffle_status``) reads without telling colours apart: the summary counts the
    shuffles seen, every listed shuffle has a row whose state is a word (one Spark cleaned up says so), and each bar of
    the chart carries its shuffle's number."""
    assert re.match(r"\d+ shuffles seen: ", riffle_summary(page)), riffle_summary(page)
    for r in status.shuffles:
        row = re.search(rf'<tr class="riffle-shuffle" data-shuffle="{r.shuffle}"[^>]*>(.*?)</tr>', page, re.S)
        assert row, f"no row for shuffle {r.shuffle}"
        state = _text(row.group(1).split("</td>")[5])  # shuffle, stage, maps, reducers, policy, state
        assert state == (f"{r.state} cleaned" if r.cleaned else r.state), state
    bars = re.findall(r'<rect class="riffle-bar" data-shuffle="(\d+)".*?</rect><text[^>]*>(\d+)</text>', page, re.S)
    assert bars and all(shuffle == number for shuffle, number in bars), bars
    assert [int(b) for b, _ in bars] == [r.shuffle for r in status.shuffles][-len(bars):]
