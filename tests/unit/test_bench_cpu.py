"""srlab.slaq_bench.cpu reads real processes' CPU time from /proc (Linux)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from srlab.slaq_bench.cpu import child_pids, cpu_delta, process_cpu_s

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux /proc")


def test_a_busy_child_is_listed_and_its_cpu_time_grows():
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 30\nwhile time.time() < end: pass"])
    try:
        assert child.pid in child_pids(os.getpid())
        first = process_cpu_s(child.pid)
        deadline = time.monotonic() + 10
        while process_cpu_s(child.pid) < first + 0.2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_cpu_s(child.pid) >= first + 0.2
    finally:
        child.kill()
        child.wait()


def test_cpu_delta_per_part_and_none_without_readings():
    assert cpu_delta({"a": 1.0, "b": 2.0}, {"a": 1.5, "b": 4.0}) == {"a": 0.5, "b": 2.0}
    assert cpu_delta(None, {"a": 1.0}) is None
