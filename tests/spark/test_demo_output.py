"""The main demo's output is short: progress lines and the comparison, no epoch tables (``--tables`` asks for them),
and a single run says that it can fall outside README's spread of 5 repeats."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures import ends

DEMO = Path(__file__).parents[2] / "lab" / "demos" / "sweep.py"


def test_the_demo_prints_progress_and_the_comparison_only():
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, str(DEMO), "--jobs", "2", "--iterations", "6", "--policies", "order", "--rows", "2000",
                           "--arrival-mean", "0.5", "--epoch", "0.5", "--master", "local-cluster[1,1,1024]"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, ends(proc.stderr)
    assert not [x for x in proc.stderr.splitlines() if x.startswith("SLAQ epoch ")], ends(proc.stderr)  # no tables
    ours = [x for x in proc.stderr.splitlines() if x.startswith(("[", "  order:"))]
    assert ours and all(len(x) < 200 for x in ours), ends(proc.stderr)
    out = proc.stdout.strip().splitlines()
    assert out[-1].startswith("One run of each configuration: README's figures are medians of 5") and len(out) <= 6, proc.stdout
