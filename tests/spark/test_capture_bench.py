"""`slaq bench capture` on tiny data: the same GBT and Gaussian-mixture fit with SLAQ on and detached in one real
local-cluster session. With SLAQ on each fit is one job holding every iteration its model counts; detached, no fit
becomes a job (else the two sides would measure the same thing). Run as a subprocess: the bench starts its own
session, which must not be the suite's shared one."""

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
    assert sorted(out["estimators"]) == ["gbt", "gmm"]
    for name, e in out["estimators"].items():
        [iterations] = e["model_iterations"]
        assert iterations == (20 if name == "gbt" else 15), e  # every tree; every EM step (tol 0)
        assert e["captured_per_fit"] == [[iterations]], e
        assert e["jobs_while_detached"] == 0, e
        for side in ("captured", "plain"):
            assert len(e[side]["runs_s"]) == 1 and 0 < e[side]["min_s"] <= e[side]["median_s"] <= e[side]["max_s"], e
        assert abs(e["ratio"] - e["captured"]["median_s"] / e["plain"]["median_s"]) < 0.01, e
    assert proc.stderr.count(" vs plain ") == 2, ends(proc.stderr)  # the headline, one line per estimator


def test_capture_bench_refuses_an_unknown_estimator():
    proc = subprocess.run([sys.executable, "-m", "slaq.cli", "bench", "capture", "--estimators", "gbt,kmeans"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "estimators must be from gbt, gmm; got kmeans" in proc.stderr, ends(proc.stderr)
