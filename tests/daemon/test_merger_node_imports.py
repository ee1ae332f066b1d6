"""A merger node installs the daemon without Spark, the science stack or the driver-side packages: the daemon's
modules must import, and its command answer ``--help`` and ``--version``, where those are missing.

Each check runs in a fresh interpreter started with ``-S`` (no ``.pth`` start-up hooks, which import
``sparkshim``) that finds this checkout and the environment's third-party packages, with a finder in
front of every other that refuses the packages a merger node lacks and records every attempt.
"""

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from riffle.version import package_version

REPO = Path(__file__).resolve().parents[2]
ABSENT_ON_MERGER_NODES = ("pyspark", "numpy", "scipy", "matplotlib", "slaq", "sparkshim")
# the floor's version module (in the wheel, importing nothing but importlib.metadata) is the daemon's --version, its
# reader of configured files (the standard library only) reads the daemon's token and TLS files, and its conf parser (the
# standard library only) reads the storage flags as the driver reads spark.riffle.cost.*; the package itself puts its
# driver-log handler on the products' loggers, and the conf parser writes its bounds as a reader would (both the standard
# library only; on a merger node the handler never forwards)
FLOOR_ON_MERGER_NODES = ("sparkshim", "sparkshim.driver_log", "sparkshim.version", "sparkshim.safe_read", "sparkshim.conf",
                         "sparkshim.wording")
DAEMON_PACKAGES = ("riffle.merger", "riffle.shuffle", "riffle.v1")
DAEMON_MODULES = ("riffle.protocol", "riffle.units", "riffle.version", "riffle.storage_cost")

PRELUDE = f"""
import atexit, importlib.abc, json, sys
sys.path[:0] = [{str(REPO)!r}]
sys.path.append({sysconfig.get_paths()["purelib"]!r})
ABSENT = {ABSENT_ON_MERGER_NODES!r}
ALLOWED = {FLOOR_ON_MERGER_NODES!r}
tried = []

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ABSENT and name not in ALLOWED:
            tried.append(name)
            raise ImportError(f"{{name}} is not installed on a merger node")
        return None

sys.meta_path.insert(0, Absent())
atexit.register(lambda: print("TRIED " + json.dumps(tried), file=sys.stderr))
"""


def run_without_absent_packages(code: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-S", "-c", PRELUDE + code], capture_output=True, text=True, timeout=120, cwd=REPO)
    tried = [line for line in out.stderr.splitlines() if line.startswith("TRIED ")]
    assert tried and json.loads(tried[-1][len("TRIED "):]) == [], out.stderr
    return out


def test_daemon_modules_import_without_spark_science_or_driver_packages():
    out = run_without_absent_packages(f"""
import importlib, pkgutil
names = list({DAEMON_MODULES!r})
for package in {DAEMON_PACKAGES!r}:
    names += [m.name for m in pkgutil.walk_packages(importlib.import_module(package).__path__, package + ".")]
for name in names:
    importlib.import_module(name)
print(json.dumps(names))
""")
    assert out.returncode == 0, out.stderr
    imported = json.loads(out.stdout)
    assert {"riffle.merger.cli", "riffle.merger.server", "riffle.merger.engine", "riffle.protocol"} <= set(imported)


@pytest.mark.parametrize("args", [["--help"], ["serve", "--help"], ["--version"]])
def test_daemon_command_answers_without_spark_science_or_driver_packages(args):
    out = run_without_absent_packages(f"""
import runpy
import riffle.merger.server
sys.argv = ["riffle-merger", *{args!r}]
runpy.run_module("riffle.merger.cli", run_name="__main__", alter_sys=True)
""")
    assert out.returncode == 0, out.stderr
    if args == ["--version"]:
        assert out.stdout == f"riffle-merger {package_version()}\n"
    else:
        assert out.stdout.startswith("usage: riffle-merger")


def test_version_of_a_distribution_not_installed_is_unknown():
    assert package_version("no-such-distribution-of-riffle") == "unknown"
    assert package_version() != "unknown"  # the tests run against an installed (editable) checkout
