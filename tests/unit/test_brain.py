"""``python -m sparkshim.brain`` outside a driver, and the brain's check of the driver's shim jar."""

from __future__ import annotations

import os
import subprocess
import sys

from sparkshim.brain import EXIT_NOT_ATTACHED, jar_mismatch
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
