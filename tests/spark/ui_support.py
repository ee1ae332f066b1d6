"""What the UI tests share: the driver log set up the way a user sets it up (log4j2.properties in
SPARK_CONF_DIR, chosen loggers at INFO), Debian's headless Chromium and reading a page or its JSON."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def log4j2(*info_loggers: str) -> str:
    """A log4j2.properties: WARN to stderr, and each of ``info_loggers`` at INFO."""
    lines = ["rootLogger.level = warn", "rootLogger.appenderRef.stderr.ref = console", "appender.console.type = Console",
             "appender.console.name = console", "appender.console.target = SYSTEM_ERR", "appender.console.layout.type = PatternLayout",
             "appender.console.layout.pattern = %d{HH:mm:ss} %p %c: %m%n"]
    for i, name in enumerate(info_loggers):
        lines += [f"logger.l{i}.name = {name}", f"logger.l{i}.level = info"]
    return "\n".join(lines) + "\n"


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def get_json(url: str) -> Any:
    return json.loads(get(url))
