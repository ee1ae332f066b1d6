"""A driver that uses only Riffle loads none of SLAQ's classes (its UI tab, log4j hooks, pools): the
shim's entry names no product class, so SLAQ's code stays out of a Riffle-only JVM. Checked on a real
driver JVM in a child process (the shared session has SLAQ enabled)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("riffle_only_child.py")
SLAQ = "io.slaqriffle.slaq."


@pytest.fixture(scope="module")
def loaded():
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    proc = subprocess.run([sys.executable, str(CHILD)], env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"child failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def test_riffle_alone_loads_no_slaq_class(loaded):
    assert loaded["unavailable"] is None and loaded["drained_map_output"], loaded
    assert {"io.slaqriffle.riffle.RiffleTracker", "io.slaqriffle.riffle.RiffleListener", "io.slaqriffle.riffle.GateRootPool",
            "io.slaqriffle.seam.Shim", "io.slaqriffle.seam.Features"} <= set(loaded["riffle_only"])
    assert [c for c in loaded["riffle_only"] if c.startswith(SLAQ)] == []


def test_the_probe_sees_slaq_once_it_is_attached(loaded):
    slaq = {c for c in loaded["after_slaq"] if c.startswith(SLAQ)}
    assert {"io.slaqriffle.slaq.SlaqPools", "io.slaqriffle.slaq.JobsPool", "io.slaqriffle.slaq.LossAppender"} <= slaq
    assert {c for c in loaded["classes"] if c.startswith(SLAQ)} >= slaq
