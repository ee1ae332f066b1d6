"""SLAQ from Spark Connect on a real local-cluster: each spark.ml fit a Connect client submits (two at
once, or each candidate of a CrossValidator) is its own SLAQ job with its iterations captured and
its tasks in its own pool, and the fitted models equal those of the same fits with SLAQ off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CONNECT_FIT = "LogisticRegression@"
pytestmark = pytest.mark.timeout(900)


class ConnectServer:
    """A Spark driver with SLAQ attached that serves Spark Connect on ``port`` (connect_server_child.py)."""

    def __init__(self, proc: subprocess.Popen[str], info: dict[str, Any]):
        self.proc = proc
        self.port = int(info["port"])

    def command(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def connect_jobs(self) -> list[dict[str, Any]]:
        return [j for j in self.command("jobs")["jobs"] if j["name"].startswith(CONNECT_FIT)]

    def wait_for_jobs(self, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        """The finished Connect fit jobs once there are ``count`` (they close when Spark Connect reports the operation ended)."""
        deadline = time.monotonic() + timeout
        while True:
            jobs = self.connect_jobs()
            if len(jobs) >= count or time.monotonic() > deadline:
                return jobs
            time.sleep(0.2)

    def client(self, scenario: str) -> Any:
        """Runs connect_client_child.py against this server; its JSON output."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        out = subprocess.run([sys.executable, str(HERE / "connect_client_child.py"), str(self.port), scenario],
                             capture_output=True, text=True, timeout=300, env=env)
        assert out.returncode == 0, out.stderr[-4000:]
        return json.loads(out.stdout.strip().splitlines()[-1])


def start_connect_server(local_dir: Path, log: Path) -> ConnectServer:
    """The one place the Spark Connect server with SLAQ is started: a Python driver that attaches SLAQ
    the normal way and starts Spark's SparkConnectService on its context."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(HERE / "connect_server_child.py"), str(local_dir)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log.open("w"), text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(30)
        pytest.fail(f"the Connect server did not start:\n{log.read_text()[-4000:]}")
    return ConnectServer(proc, json.loads(line))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    tmp = tmp_path_factory.mktemp("connect")
    s = start_connect_server(tmp / "local", tmp / "server.log")
    try:
        yield s
    finally:
        assert s.proc.stdin is not None
        s.proc.stdin.close()
        try:
            s.proc.wait(60)
        except subprocess.TimeoutExpired:
            s.proc.kill()


def _by_reg(fits: list[dict[str, Any]]) -> dict[float, dict[str, Any]]:
    return {f["reg"]: f for f in fits}


def test_concurrent_connect_fits_are_two_slaq_jobs_with_the_models_of_slaq_off(server):
    before = len(server.connect_jobs())
    on = _by_reg(server.client("concurrent"))
    jobs = server.wait_for_jobs(before + 2)[before:]
    assert len(jobs) == 2 and len({j["name"] for j in jobs}) == 2
    # each job's captured losses are one fit's objective history after its initial point
    captured = sorted(tuple(j["losses"]) for j in jobs)
    expected = sorted(tuple(f["objective"][1:]) for f in on.values())
    for c, e in zip(captured, expected):
        assert len(c) == len(e) > 3
        np.testing.assert_allclose(c, e, rtol=1e-5)
    # the fits' tasks ran in their jobs' pools: each pool used core time between its losses
    assert all(j["core_seconds"] > 0 for j in jobs)

    server.command("detach")
    try:
        off = _by_reg(server.client("concurrent"))
        assert len(server.connect_jobs()) == before + 2  # with SLAQ off the fits are plain Spark work
    finally:
        server.command("attach")
    for reg in (0.1, 0.01):
        np.testing.assert_allclose(on[reg]["coefficients"], off[reg]["coefficients"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(on[reg]["objective"], off[reg]["objective"], rtol=1e-9)


def test_cross_validator_from_a_connect_client_is_one_slaq_job_per_fit(server):
    before = len(server.connect_jobs())
    result = server.client("cv")
    assert len(result["avg_metrics"]) == 2
    # 2 param maps x 2 folds, then the best map refit on all the data
    jobs = server.wait_for_jobs(before + 5)[before:]
    assert len(jobs) == 5 and len({j["name"] for j in jobs}) == 5
    assert all(len(j["losses"]) > 3 for j in jobs)
