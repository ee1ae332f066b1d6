"""Ops install: build the wheel from a clean copy of the sources, install it in a fresh venv, run a real merge through it.

The wheel build also compiles the shim jar (so it needs the JDK and pyspark this environment has);
tests/spark/test_wheel_attach.py runs a Spark application from the same kind of install.

The fresh venv gets the wheel itself (``--no-deps``); its third-party dependencies (grpcio, protobuf,
prometheus_client) are borrowed from the test's environment through a ``.pth`` line, which exposes
none of that environment's start-up hooks or its editable install, so ``riffle`` can only come from
the wheel (asserted).
"""

import json
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from riffle.merger.client import MergerClient
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE, read_partition
from srsupport.daemons import free_port
from srsupport.wheel import CLEAN_ENV, run
from tests.fixtures import make_outputs

pytestmark = pytest.mark.slow  # builds a wheel and a virtual environment

@pytest.fixture(scope="module")
def installed(installed_wheel):
    archive = zipfile.ZipFile(installed_wheel.wheel)
    names = archive.namelist()
    for shipped in ("riffle/v1/merger_pb2.py", "riffle/v1/merger_pb2_grpc.py", "riffle/v1/merger.proto", "riffle/protocol.py",
                    "sparkshim/jars/slaq-riffle-shim.jar", "slaq_riffle_autoload.pth"):
        assert shipped in names, shipped
    assert [n for n in names if n.endswith((".jar", ".class"))] == ["sparkshim/jars/slaq-riffle-shim.jar"]
    lab = [n for n in names if n.split("/")[0] in ("srlab", "sparkcluster", "lab", "examples", "tests") or "/bench/" in n or "reproduce" in n]
    assert not lab, lab  # the product ships no benchmark, reproduction or harness code
    for name in (n for n in names if n.endswith(".py")):
        imports = [line for line in archive.read(name).decode().splitlines()
                   if line.lstrip().startswith(("import ", "from ")) and any(w in line for w in ("matplotlib", "srlab", "bench", "reproduce"))]
        assert not imports, (name, imports)
    return installed_wheel.venv, installed_wheel.tmp


def test_installed_wheel_serves_a_real_merge(installed, root, dirs):
    venv, tmp = installed
    where = run(venv / "bin" / "python", "-c", "import sys, riffle.merger.client, riffle.protocol; "
                "assert not {'grpc_tools.protoc', 'riffle.proto_build'} & set(sys.modules), 'an import ran protoc'; "
                "print(riffle.protocol.__file__)", cwd=tmp)
    assert where.strip().startswith(str(venv)), where
    blocks = make_outputs(dirs, 3, [0, 1, 2], 20)
    port = free_port()
    proc = subprocess.Popen([venv / "bin" / "riffle-merger", "serve", "--listen", f"127.0.0.1:{port}", "--local-dir", root,
                             "--no-fsync"], cwd=tmp, stderr=subprocess.PIPE, text=True, env=CLEAN_ENV)
    try:
        with MergerClient(f"127.0.0.1:{port}") as client:
            deadline = time.monotonic() + 30
            while not client.healthy() and time.monotonic() < deadline:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
            resp = client.merge("wheel", 3, [0, 1, 2], dirs, 20, SYNTHETIC_MAP_ID_BASE + 1, app_id="app")
            for p in range(20):
                assert read_partition(Path(resp.data_path), Path(resp.index_path), 20, p) == b"".join(blocks[m][p] for m in (0, 1, 2))
        rows = json.loads(run(venv / "bin" / "riffle", "status", f"127.0.0.1:{port}", "--json", cwd=tmp))
        assert rows[0]["health"] == "SERVING" and rows[0]["completed"] == 1
        for command in ("riffle", "riffle-merger", "slaq", "slaq-riffle"):
            assert run(venv / "bin" / command, "--version", cwd=tmp).split()[0] == command
        lab = subprocess.run([venv / "bin" / "riffle", "bench", "merge"], capture_output=True, text=True, cwd=tmp, env=CLEAN_ENV)
        assert lab.returncode == 2 and "lab" in lab.stderr, lab.stderr  # the verb says where it lives
    finally:
        proc.terminate()
        proc.wait(30)
