"""Ops install: build the wheel from a clean copy of the sources, install it in a fresh venv, run a real merge through it.

The wheel build also compiles the shim jar (so it needs the JDK and pyspark this environment has);
tests/spark/test_wheel_attach.py runs a Spark application from the same kind of install.

The fresh venv gets the wheel itself (``--no-deps``); its third-party dependencies (grpcio, protobuf,
prometheus_client) are borrowed from the test's environment through a ``.pth`` line, which exposes
none of that environment's start-up hooks or its editable install, so ``riffle`` can only come from
the wheel (asserted). A merger-only environment is made with the commands docs/deploy.md gives (they install the
daemon's dependencies from the package index).
"""

import json
import shlex
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from riffle.merger.client import MergerClient
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE, read_partition
from srsupport.daemons import free_port
from srsupport.wheel import CLEAN_ENV, REPO, run
from tests.fixtures import make_outputs

pytestmark = pytest.mark.slow  # builds a wheel and a virtual environment

@pytest.fixture(scope="module")
def installed(installed_wheel):
    archive = zipfile.ZipFile(installed_wheel.wheel)
    names = archive.namelist()
    templates = [f"sparkshim/spark-conf/{p.name}" for p in (REPO / "spark-conf").glob("*.properties")]
    for shipped in ("riffle/v1/merger_pb2.py", "riffle/v1/merger_pb2_grpc.py", "riffle/v1/merger.proto", "riffle/protocol.py",
                    "sparkshim/jars/slaq-riffle-shim.jar", "slaq_riffle_autoload.pth", *templates):
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


def help_pages(python: Path, cwd: Path) -> dict[str, list[dict]]:
    """Every verb of every console script of the installed package asked for --help (srsupport/cli_help.py), by script."""
    out = run(python, "-P", REPO / "lab" / "srsupport" / "cli_help.py", "slaq-riffle", cwd=cwd)
    pages: dict[str, list[dict]] = {}
    for page in map(json.loads, out.splitlines()):
        pages.setdefault(page["argv"][0], []).append(page)
    return pages


def test_every_verb_of_the_installed_commands_has_help_and_the_templates_are_there(installed):
    venv, tmp = installed
    pages = help_pages(venv / "bin" / "python", tmp)
    assert sorted(pages) == ["riffle", "riffle-merger", "slaq", "slaq-riffle"]
    for page in (p for script in pages.values() for p in script):
        assert page["code"] == 0 and page["out"].startswith("usage: " + " ".join(page["argv"][:-1])), page
    lab = next(p for p in pages["slaq"] if p["argv"] == ["slaq", "bench", "--help"])
    assert "part of the project's lab" in lab["out"] and "scripts/setup.sh" in lab["out"]  # the lab is not in the wheel
    path = Path(run(venv / "bin" / "slaq-riffle", "conf", "--path", "slaq", cwd=tmp).strip())
    assert path.is_relative_to(venv) and path.read_text() == (REPO / "spark-conf" / "slaq.properties").read_text()


def documented_merger_only_install(venv: Path, wheel: Path) -> list[list[str]]:
    """docs/deploy.md's commands for a node that only runs the daemon, for ``venv`` and ``wheel``."""
    pip = "/opt/slaq-riffle/.venv/bin/pip"
    lines = [line for line in (REPO / "docs" / "deploy.md").read_text().splitlines() if line.startswith(pip + " install")]
    assert len(lines) == 3, lines  # the full install, then the merger-only pair
    return [[sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
             *[str(wheel) if arg == "dist/slaq_riffle-*.whl" else arg for arg in shlex.split(line[len(pip):])]] for line in lines[1:]]


def test_merger_only_install_as_documented_reports_no_error_and_slaq_says_what_it_needs(installed):
    _, tmp = installed
    venv = tmp / "merger-only"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    for command in documented_merger_only_install(venv, next((tmp / "dist").glob("slaq_riffle-*.whl"))):
        out = subprocess.run(command, capture_output=True, text=True, timeout=300, env=CLEAN_ENV)
        assert out.returncode == 0 and "ERROR" not in out.stdout + out.stderr, out.stdout + out.stderr
    absent = subprocess.run([venv / "bin" / "python", "-c", "import numpy"], capture_output=True, env=CLEAN_ENV)
    assert absent.returncode != 0  # a merger-only environment indeed
    pages = help_pages(venv / "bin" / "python", tmp)
    [slaq] = pages.pop("slaq")
    assert slaq["code"] == 2 and slaq["out"] == "" and slaq["err"].count("\n") == 1, slaq
    assert "full install" in slaq["err"] and "riffle-merger and riffle" in slaq["err"], slaq
    for page in (p for script in pages.values() for p in script):  # the daemon, `riffle status` and the rest answer
        assert page["code"] == 0 and page["out"].startswith("usage: "), page
    script = subprocess.run([venv / "bin" / "slaq", "simulate"], capture_output=True, text=True, env=CLEAN_ENV)
    assert script.returncode == 2 and script.stderr == slaq["err"], script.stderr  # the installed script, as the walk saw it
