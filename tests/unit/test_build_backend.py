"""The build backend (build_backend.py over setuptools'): a wheel's isolated build gets pyspark, whose jars the shim
compiles against, with pyproject's own requirement; editable installs and sdists do not download it.

The hooks run as pip runs them: in a fresh interpreter whose working directory is the source tree (a copy of what
they read, so setuptools' metadata is not left in the checkout). The isolated build itself (``pip wheel --no-deps .``,
``python -m build``) downloads pyspark; the wheel tests build without isolation in the test environment instead
(tests/daemon/test_merger_wheel.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
READ_BY_THE_HOOKS = ("pyproject.toml", "setup.py", "build_backend.py", "README.md", "MANIFEST.in", "sparkshim/spark_line.py")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def requires(tmp_path: Path) -> dict[str, list[str]]:
    for name in READ_BY_THE_HOOKS:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, tmp_path / name)
    code = ("import json, sys; sys.path.insert(0, '.'); import build_backend as b; print(json.dumps({k: getattr(b, f'get_requires_for_build_{k}')() "
            "for k in ('wheel', 'editable', 'sdist')}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_a_wheel_build_requires_the_pyspark_the_package_depends_on_and_nothing_else_does(tmp_path):
    assert PYPROJECT["build-system"]["build-backend"] == "build_backend" and PYPROJECT["build-system"]["backend-path"] == ["."]
    [declared] = [d for d in PYPROJECT["project"]["dependencies"] if d.startswith("pyspark")]
    found = requires(tmp_path)
    assert found["wheel"][-1:] == [declared]
    assert not [r for r in found["editable"] + found["sdist"] if r.startswith("pyspark")], found
