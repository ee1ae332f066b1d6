"""``python -m sparkshim.brain`` outside a driver, the brain's check of the driver's shim jar, and its heartbeat."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from sparkshim.brain import EXIT_NOT_ATTACHED, jar_mismatch, start_heartbeat
from sparkshim.build import PACKAGED_JAR, SOURCES_ATTR, jar_manifest


def run_brain(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY_")}
    return subprocess.run([sys.executable, "-m", "sparkshim.brain", *args], capture_output=True, text=True, env=env, timeout=60)


def test_help_says_what_starts_it():
    proc = run_brain("--help")
    assert proc.returncode == 0
    assert "io.slaqriffle.SlaqRifflePlugin" in proc.stdout


def test_without_a_gateway_it_says_so_and_exits():
    proc = run_brain()
    assert proc.returncode == EXIT_NOT_ATTACHED
    assert "PYSPARK_GATEWAY_PORT" in proc.stderr and "SlaqRifflePlugin" in proc.stderr


def test_a_jar_from_other_sources_is_refused_and_the_same_one_accepted():
    assert jar_mismatch("", "anywhere") is None  # nothing to compare
    if PACKAGED_JAR.exists():
        ours = jar_manifest(PACKAGED_JAR)[SOURCES_ATTR]
        assert jar_mismatch(ours, "file:/x.jar") is None
        why = jar_mismatch("0" * 12, "file:/x.jar")
        assert why is not None and "file:/x.jar" in why and "--print-path" in why


class Handle:
    """Counts heartbeats; after ``fail_after`` of them it raises as py4j does once the gateway is closed."""

    def __init__(self, fail_after: int):
        self.beats = 0
        self.fail_after = fail_after
        self.gone = threading.Event()

    def alive(self) -> None:
        if self.beats >= self.fail_after:
            self.gone.set()
            raise ConnectionError("gateway closed")
        self.beats += 1


def test_the_heartbeat_beats_until_the_gateway_is_gone_or_it_is_stopped():
    closing = Handle(fail_after=3)
    start_heartbeat(closing, every=0.01)
    assert closing.gone.wait(10) and closing.beats == 3  # the first beat at once, then one per interval
    quiet = Handle(fail_after=10**6)
    stop = start_heartbeat(quiet, every=0.01)
    deadline = time.monotonic() + 10
    while quiet.beats < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    stop.set()
    beats = quiet.beats
    time.sleep(0.1)  # ten intervals
    assert beats >= 2 and quiet.beats <= beats + 1  # at most the beat that was under way
