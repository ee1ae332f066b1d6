"""`slaq bench capture` on tiny data: the same Gaussian-mixture fit with SLAQ on and detached in one real local-cluster
session. With SLAQ on each fit is one job holding every EM step its model counts; detached, no fit becomes a job (else
the two sides would measure the same thing). Run as a subprocess: the bench starts its own session, which must not be
the suite's shared one."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.fixtures import ends


def test_capture_bench_compares_captured_fits_with_fits_slaq_never_saw():
    cmd = [sys.executable, "-m", "slaq.cli", "bench", "capture", "--rows", "1000", "--repeats", "1", "--master", "local-cluster[1,2,1024]"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, ends(proc.stderr)
    out = json.loads(proc.stdout)
    assert out["model_iterations"] == [15], out  # every EM step (tol 0)
    assert out["captured_per_fit"] == [[15]] and out["jobs_while_detached"] == 0, out
    for side in ("captured", "plain"):
        assert len(out[side]["runs_s"]) == 1 and 0 < out[side]["min_s"] <= out[side]["median_s"] <= out[side]["max_s"], out
    assert abs(out["ratio"] - out["captured"]["median_s"] / out["plain"]["median_s"]) < 0.01, out
    assert proc.stderr.count(" vs plain ") == 1, ends(proc.stderr)  # the headline
