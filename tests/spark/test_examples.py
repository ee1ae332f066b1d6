"""The user examples in examples/, each run the way its docstring says: spark-submit with only confs.

A small wrapper runs the example unchanged and afterwards prints what the SLAQ jobs recorded (names
and number of losses, read when each ``slaq.job`` block closed) so the test can see SLAQ's work.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from riffle.merger.node_status import probe
from srsupport.daemons import DaemonProcess

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WRAPPER = """
import json, runpy, sys
import slaq.api
seen = []
exit_job = slaq.api.Job.__exit__
def recording_exit(self, *exc):
    seen.append((self.name, len(self.losses)))
    return exit_job(self, *exc)
slaq.api.Job.__exit__ = recording_exit
runpy.run_path(sys.argv[1], run_name="__main__")
print("SLAQ-JOBS " + json.dumps(seen))
"""


def submit(tmp_path: Path, example: str, *confs: str) -> tuple[list[str], list[list]]:
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(WRAPPER)
    args = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local-cluster[2,1,1024]",
            "--conf", "spark.ui.enabled=false", *[a for c in confs for a in ("--conf", c)], str(wrapper), str(EXAMPLES / example)]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    jobs = json.loads(next(x for x in lines if x.startswith("SLAQ-JOBS "))[len("SLAQ-JOBS "):])
    return [x for x in lines if not x.startswith("SLAQ-JOBS ")], jobs


SLAQ_ON = ("spark.scheduler.mode=FAIR", "spark.slaq.enabled=true", "spark.slaq.epoch=0.5s")


def test_training_loop_reports_losses_to_slaq(tmp_path):
    out, jobs = submit(tmp_path, "train_with_report_loss.py", *SLAQ_ON)
    assert sorted(name for name, _ in jobs) == ["logreg-step-0.1", "logreg-step-0.5", "logreg-step-2.0"]
    assert all(n >= 4 for _, n in jobs), jobs
    assert len([x for x in out if "iterations, loss" in x]) == 3, out


def test_crossvalidator_fits_become_slaq_jobs_with_no_code_change(tmp_path):
    out, jobs = submit(tmp_path, "tune_with_crossvalidator.py", *SLAQ_ON)
    fits = [(name, n) for name, n in jobs if name.startswith(("LogisticRegression", "LinearSVC"))]
    assert len([f for f in fits if f[0].startswith("LogisticRegression")]) == 3 * 2 + 1  # 3 candidates x 2 folds + the refit
    assert len([f for f in fits if f[0].startswith("LinearSVC")]) == 1
    assert all(n > 0 for _, n in fits), fits  # every fit's L-BFGS iterations were captured
    plain, _ = submit(tmp_path, "tune_with_crossvalidator.py")
    # SLAQ changes the schedule, not the results: equal up to floating-point reassociation (Spark's driver
    # merges task results in the order tasks finish, with SLAQ or without), so the printed numbers are compared
    assert printed_numbers(out) == pytest.approx(printed_numbers(plain), rel=1e-3, abs=1e-3)
    best = [next(line for line in lines if line.startswith("best regParam")).split()[2] for lines in (out, plain)]
    assert best[0] == best[1]  # the same model chosen: the grid's AUCs are far apart


def printed_numbers(lines: list[str]) -> list[float]:
    return [float(x) for line in lines for x in re.findall(r"-?\d+\.\d+", line)]


def test_sql_job_reads_merged_files_and_returns_the_same_rows(tmp_path):
    local = tmp_path / "local"
    local.mkdir()
    merger = DaemonProcess([local], "--no-fsync")
    try:
        merged, _ = submit(tmp_path, "sql_shuffle_with_riffle.py", f"spark.local.dir={local}", "spark.riffle.enabled=true",
                           f"spark.riffle.mergers={merger.address}", "spark.riffle.cost.enabled=false")
        completed = probe(merger.address, None, None, 5.0)["completed"]
    finally:
        merger.stop()
    vanilla, _ = submit(tmp_path, "sql_shuffle_with_riffle.py", f"spark.local.dir={local}")
    assert merged == vanilla and len(merged) == 8
    assert completed > 0
