"""``spark.slaq.recordTrace``: an application with only confs set writes its own workload as a trace when its
SparkContext stops, and ``slaq simulate --check`` replays it against that run (a child process: the trace is
written at the context's stop, which the shared test session never reaches)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from slaq.cli import main
from slaq.sim.trace import load

CHILD = Path(__file__).with_name("record_trace_child.py")


def run_app(target: str, cwd: Path, *confs: str) -> tuple[dict, str]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    proc = subprocess.run([sys.executable, str(CHILD), target, *confs], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_an_app_records_its_workload_and_the_check_replays_it(tmp_path, capsys):
    out = tmp_path / "traces"
    out.mkdir()
    ran, log = run_app(str(out), tmp_path, "spark.master=local-cluster[2,1,1024]")
    path = out / f"{ran['app_id']}.json.gz"
    assert sorted(p.name for p in out.iterdir()) == [path.name]  # a directory target: one file named by the application
    assert f"slaq simulate --check {path}" in log
    trace = load(path)
    assert [j.name for j in trace.jobs] == ["job-0", "job-1", "job-2"] and trace.cores == 2 and trace.epoch == 0.5
    # each loss after its Spark work: one stage, the result stage in the job's pool (not the map stage that ran before the job)
    assert all(len(j.losses) == 6 and all([s.tasks for s in p.stages] == [2] for p in j.phases) for j in trace.jobs), trace.jobs
    assert not trace.outside  # the count before the first job is left out
    # two executors, each caching one of the input's partitions: Spark held each task for its executor, and the trace says so
    assert trace.executors == 2 and trace.locality_wait == 3.0
    assert all(sum(s.local) == 2 for j in trace.jobs for p in j.phases for s in p.stages), trace.jobs
    assert list(trace.measured) == ["order"] and trace.setting["app_id"] == ran["app_id"]
    capsys.readouterr()
    assert main(["simulate", "--check", str(path)]) == 0
    verdict = capsys.readouterr().err.splitlines()[0]
    assert verdict.startswith("check: 1 trace, 1 configuration, all within 15%"), verdict
    assert main(["simulate", "--project", str(path), "--project-cores", "4"]) == 0


def test_what_the_status_store_forgot_is_one_warn_and_a_file_target_is_that_file(tmp_path):
    path = tmp_path / "own.json"
    _, log = run_app(str(path), tmp_path, "spark.ui.retainedJobs=5", "spark.ui.retainedStages=5")
    warned = [line for line in log.splitlines() if f"SLAQ: the trace {path} leaves out:" in line]
    assert len(warned) == 1 and "Spark jobs and" in warned[0] and "spark.ui.retainedJobs" in warned[0], log[-3000:]
    assert [j.name for j in load(path).jobs] == ["job-0", "job-1", "job-2"]  # plain JSON: the name does not end in .gz
