"""SLAQ from Spark Connect on a real local-cluster: each spark.ml fit a Connect client submits (two at
once, or each candidate of a CrossValidator) is its own SLAQ job, named as a classic fit's job is, with
its iterations captured and its tasks in its own pool, and the fitted models equal those of the same
fits with SLAQ off. The same
with a Connect server started as users start it (``SparkConnectServer`` under spark-submit with only the
plugin's ``--jars`` and confs): two concurrent fits are two SLAQ jobs in its ``/slaq/json/``, and a SQL
aggregation from the client is merged by a real merger daemon and returns the right rows."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from riffle.merger.node_status import probe
from slaq.names import fit_job_name
from sparkshim.build import PACKAGED_JAR
from srsupport.daemons import DaemonProcess, free_port
from tests.fixtures import stop_child
from tests.spark.ui_support import get_json

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CONNECT_FIT = re.compile(r"^LogisticRegression\[[^\]]*\]@[0-9a-f-]{36}$")  # a Connect fit's job: its operation's id for the sequence


def connect_name(params: dict[str, Any]) -> str:
    """A Connect LogisticRegression fit's job name but its operation id: the classic path's name (slaq.names)."""
    return fit_job_name("LogisticRegression", params, 0).removesuffix("#0") + "@"
pytestmark = pytest.mark.timeout(900)


class ConnectServer:
    """A Spark driver with SLAQ attached that serves Spark Connect on ``port`` (connect_server_child.py)."""

    def __init__(self, proc: subprocess.Popen[str], port: int, client: ConnectClient):
        self.proc = proc
        self.port = port
        self.client = client  # the module's Connect client of this server

    def command(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def connect_jobs(self) -> list[dict[str, Any]]:
        return [j for j in self.command("jobs")["jobs"] if CONNECT_FIT.match(j["name"])]

    def wait_for_jobs(self, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        """The finished Connect fit jobs once there are ``count`` (they close when Spark Connect reports the operation ended)."""
        deadline = time.monotonic() + timeout
        while True:
            jobs = self.connect_jobs()
            if len(jobs) >= count or time.monotonic() > deadline:
                return jobs
            time.sleep(0.2)


def child_env() -> dict[str, str]:
    return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


class ConnectClient:
    """connect_client_child.py against the server on ``port``: one process runs the module's scenarios against that
    server, one at a time (started with the server: its imports happen while the server starts; its session is made at
    its first scenario)."""

    def __init__(self, port: int, log: Path):
        self.log = log
        self.proc = subprocess.Popen([sys.executable, str(HERE / "connect_client_child.py"), str(port)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log.open("w"), text=True, env=child_env())
        self.results: queue.Queue[str | None] = queue.Queue()  # its RESULT lines; None once its stdout closed
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("RESULT "):
                self.results.put(line[len("RESULT "):])
        self.results.put(None)

    def run(self, scenario: str, timeout: float = 300.0) -> Any:
        """The scenario's JSON result."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(scenario + "\n")
        self.proc.stdin.flush()
        try:
            line = self.results.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()  # its late result must not be read as the next scenario's
            pytest.fail(f"no result of {scenario} within {timeout:.0f} s:\n{self.log.read_text()[-4000:]}")
        if line is None:
            pytest.fail(f"the Connect client exited ({self.proc.wait(30)}) in {scenario}:\n{self.log.read_text()[-4000:]}")
        out = json.loads(line)
        assert "error" not in out, out["error"][-4000:]
        return out["result"]

    def close(self) -> None:
        stop_child(self.proc)


def launch_connect_server(local_dir: Path, port: int, log: Path) -> subprocess.Popen[str]:
    """The one place the Spark Connect server with SLAQ is started: a Python driver that attaches SLAQ
    the normal way and starts Spark's SparkConnectService on its context."""
    return subprocess.Popen([sys.executable, str(HERE / "connect_server_child.py"), str(local_dir), str(port)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log.open("w"), text=True, env=child_env())


def connect_server_ready(proc: subprocess.Popen[str], log: Path, client: ConnectClient) -> ConnectServer:
    """``proc`` once it serves (its first line)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(30)
        pytest.fail(f"the Connect server did not start:\n{log.read_text()[-4000:]}")
    return ConnectServer(proc, int(json.loads(line)["port"]), client)


def stop_connect_server(proc: subprocess.Popen[str]) -> None:
    stop_child(proc)


def _by_reg(fits: list[dict[str, Any]]) -> dict[float, dict[str, Any]]:
    return {f["reg"]: f for f in fits}


def test_concurrent_connect_fits_are_two_slaq_jobs_with_the_models_of_slaq_off(server):
    before = len(server.connect_jobs())
    on = _by_reg(server.client.run("concurrent"))
    jobs = server.wait_for_jobs(before + 2)[before:]
    assert len(jobs) == 2 and len({j["name"] for j in jobs}) == 2
    # named as the classic path names a fit's job, from the params the client set (columns left out)
    params = {"maxIter": 10, "tol": 1e-06, "fitIntercept": True, "family": "auto"}
    assert sorted(j["name"].rsplit("@", 1)[0] + "@" for j in jobs) == sorted(connect_name({**params, "regParam": r}) for r in on)
    assert connect_name({**params, "regParam": 0.1}) == "LogisticRegression[family=auto,fitIntercept=true,maxIter=10,regParam=0.1,tol=1e-06]@"
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
        off = _by_reg(server.client.run("concurrent"))
        assert len(server.connect_jobs()) == before + 2  # with SLAQ off the fits are plain Spark work
    finally:
        server.command("attach")
    for reg in (0.1, 0.01):
        np.testing.assert_allclose(on[reg]["coefficients"], off[reg]["coefficients"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(on[reg]["objective"], off[reg]["objective"], rtol=1e-9)


def test_cross_validator_from_a_connect_client_is_one_slaq_job_per_fit(server):
    before = len(server.connect_jobs())
    result = server.client.run("cv")
    assert len(result["avg_metrics"]) == 2
    # 2 param maps x 2 folds, then the best map refit on all the data
    jobs = server.wait_for_jobs(before + 5)[before:]
    assert len(jobs) == 5 and len({j["name"] for j in jobs}) == 5
    assert all(len(j["losses"]) > 3 for j in jobs)
    # each named after its candidate's params: 2 folds of each map, and the refit of one (not grouped: docs/mllib.md)
    names = [j["name"].rsplit("@", 1)[0] + "@" for j in jobs]
    assert sorted(names.count(connect_name({"maxIter": 8, "regParam": r})) for r in (0.01, 0.1)) == [2, 3], names


# -- the server as users start it: SparkConnectServer with the plugin ------------------------------------

PLUGIN = "io.slaqriffle.SlaqRifflePlugin"
SQL_EXPECTED = sorted([k, len(range(k, 20000, 53))] for k in range(53))


def wait_for(what: str, check: Any, proc: subprocess.Popen[bytes], log: Path, timeout: float = 180.0) -> Any:
    """``check()``'s first truthy value, polling while the server lives (its log in the failure)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the Connect server exited ({proc.returncode}) before {what}:\n{log.read_text()[-4000:]}")
        try:
            found = check()
        except OSError:
            found = None
        if found:
            return found
        time.sleep(0.25)
    pytest.fail(f"no {what} within {timeout:.0f} s:\n{log.read_text()[-4000:]}")


def launch_plugin_server(tmp: Path) -> dict[str, Any]:
    """``spark-submit --class SparkConnectServer spark-internal`` (what start-connect-server.sh runs) with
    only ``--jars <shim>``, ``spark.plugins`` and the systems' confs; a real merger daemon on its local dir."""
    local = tmp / "local"
    local.mkdir()
    merger = DaemonProcess([local], "--no-fsync")
    port, ui = free_port(), free_port()
    confs = [f"spark.plugins={PLUGIN}", "spark.slaq.enabled=true", "spark.slaq.epoch=0.5s", "spark.scheduler.mode=FAIR",
             "spark.riffle.enabled=true", f"spark.riffle.mergers={merger.address}", "spark.riffle.nway=3", "spark.riffle.cost.enabled=false",
             f"spark.local.dir={local}", f"spark.ui.port={ui}", "spark.connect.grpc.binding.address=127.0.0.1",
             f"spark.connect.grpc.binding.port={port}", "spark.sql.shuffle.partitions=6", "spark.sql.adaptive.enabled=false"]
    cmd = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local-cluster[2,1,1024]", "--driver-memory", "1g",
           "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--jars", str(PACKAGED_JAR),
           *[a for c in confs for a in ("--conf", c)], "spark-internal"]
    env = {**child_env(), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    log = tmp / "server.log"
    try:
        proc = subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env)
    except BaseException:
        merger.stop()
        raise
    return {"port": port, "ui": f"http://127.0.0.1:{ui}", "merger": merger, "proc": proc, "log": log}


def plugin_server_ready(started: dict[str, Any]) -> None:
    def accepting() -> bool:
        with socket.create_connection(("127.0.0.1", started["port"]), timeout=1):
            return True

    wait_for("Connect port", accepting, started["proc"], started["log"])


def stop_plugin_server(started: dict[str, Any]) -> None:
    proc = started["proc"]
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    started["merger"].stop()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ConnectServer, dict[str, Any]]]:
    """Both Connect servers (the Python driver with SLAQ, the plugin's SparkConnectServer) and a client of each, all
    started at once: their start-ups overlap, and each server is up before any test uses either."""
    tmp = tmp_path_factory.mktemp("connect")
    plugin_tmp = tmp_path_factory.mktemp("connect-plugin")
    with ExitStack() as stack:
        port = free_port()
        proc = launch_connect_server(tmp / "local", port, tmp / "server.log")
        stack.callback(stop_connect_server, proc)
        client = ConnectClient(port, tmp / "client.log")
        stack.callback(client.close)
        plugin = launch_plugin_server(plugin_tmp)
        stack.callback(stop_plugin_server, plugin)
        plugin["client"] = ConnectClient(plugin["port"], plugin_tmp / "client.log")
        stack.callback(plugin["client"].close)
        server = connect_server_ready(proc, tmp / "server.log", client)
        plugin_server_ready(plugin)
        yield server, plugin


@pytest.fixture(scope="module")
def server(servers: tuple[ConnectServer, dict[str, Any]]) -> ConnectServer:
    return servers[0]


@pytest.fixture(scope="module")
def plugin_server(servers: tuple[ConnectServer, dict[str, Any]]) -> dict[str, Any]:
    return servers[1]


def test_connect_server_with_the_plugin_merges_a_client_aggregation(plugin_server):
    assert plugin_server["client"].run("sql") == SQL_EXPECTED
    merger = plugin_server["merger"]
    assert int(probe(merger.address, None, None, 5.0)["completed"]) > 0
    totals = wait_for("merged groups in /riffle/json/", lambda: get_json(plugin_server["ui"] + "/riffle/json/")["totals"]["groups_merged"],
                      plugin_server["proc"], plugin_server["log"], timeout=30)
    assert totals > 0


def test_connect_server_with_the_plugin_makes_two_concurrent_fits_two_slaq_jobs(plugin_server):
    fits = plugin_server["client"].run("concurrent")
    expected = sorted(len(f["objective"]) - 1 for f in fits)

    def finished() -> list[dict[str, Any]]:
        jobs = [j for j in get_json(plugin_server["ui"] + "/slaq/json/")["finished"] if CONNECT_FIT.match(j["job"])]
        return jobs if len(jobs) >= 2 else []

    jobs = wait_for("two finished Connect fit jobs in /slaq/json/", finished, plugin_server["proc"], plugin_server["log"], timeout=60)
    assert len(jobs) == 2 and len({j["job"] for j in jobs}) == 2
    # A finished row is the job's status in the last epoch it ran: a loss ingested in the epoch that
    # closes it is in its history (the Python-driver test above compares the whole history) but not in that row.
    for got, want in zip(sorted(j["iterations"] for j in jobs), expected):
        assert want - 1 <= got <= want and got > 3
