"""The built wheel in a fresh virtual environment, as a user installs it: what the wheel tests share.

The wheel is built from a clean copy of the checkout's sources (what git tracks or would track), so
nothing generated in the checkout (stubs, the jar) can leak into it. The fresh venv gets the wheel
itself (``--no-deps``); its third-party dependencies are borrowed through ``.pth`` lines: pyspark from
where this process imports it (an older Spark line's own directory when scripts/test.sh runs that line),
the rest from this environment's site-packages. That runs none of this environment's start-up hooks and
exposes none of its editable installs, so the products can only come from the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# what the installed commands run with: a PYTHONPATH (a checkout run from its tree) would shadow the wheel
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
JDK_TOOLS_KEPT = {"java"}


def run(*args: object, **kw: object) -> str:
    """``args``' standard output; fails with both outputs when it exits non-zero."""
    kw.setdefault("env", CLEAN_ENV)
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]
    assert out.returncode == 0, f"{args}: {out.stdout}\n{out.stderr}"
    return str(out.stdout)


def build_wheel(tmp: Path) -> Path:
    """The wheel built from a clean copy of the checkout's sources into ``tmp/dist``."""
    src = tmp / "src"
    files = run("git", "-C", REPO, "ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    assert not (src / "riffle" / "v1" / "merger_pb2.py").exists()  # the stubs must come from the build step
    assert not list(src.rglob("*.jar")), "a jar in the sources: it must come from the build step"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", tmp / "dist", src)
    return next((tmp / "dist").glob("slaq_riffle-*.whl"))


def pyspark_home() -> Path:
    """The pyspark this process runs on (its package directory: Spark's jars and launchers)."""
    import pyspark

    return Path(pyspark.__file__).parent


def fresh_venv(tmp: Path, wheel: Path) -> Path:
    """A new virtual environment under ``tmp`` with ``wheel`` installed alone (``--no-deps``)."""
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    site = Path(run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    borrowed = dict.fromkeys([str(pyspark_home().parent), sysconfig.get_paths()["purelib"]])  # pyspark's first: it wins
    (site / "borrowed_deps.pth").write_text("".join(f"{path}\n" for path in borrowed))
    run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--no-deps", "--no-index", "--quiet", wheel)
    return venv


def path_without_javac(bin_dir: Path) -> str:
    """A PATH of one directory with every command of this host's PATH except the JDK's, other than ``java``."""
    bin_dir.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = Path(entry.path).resolve()
            jdk_tool = target.parent.name == "bin" and (target.parents[1] / "release").exists()  # <java home>/bin/<tool>
            if (jdk_tool and entry.name not in JDK_TOOLS_KEPT) or (bin_dir / entry.name).exists() or not os.access(entry.path, os.X_OK):
                continue
            (bin_dir / entry.name).symlink_to(target)
    return str(bin_dir)


@dataclass(frozen=True)
class InstalledWheel:
    wheel: Path
    venv: Path
    tmp: Path  # a directory of this install's own

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def user_env(self, *, javac: bool = True) -> dict[str, str]:
        """A user's shell with this venv activated and pip pyspark's launchers on PATH (``spark-submit``,
        ``spark-sql``, ``spark-class``), no PYTHONPATH and, unless ``javac``, no JDK tool but ``java``."""
        home = pyspark_home()
        path = os.environ.get("PATH", "") if javac else path_without_javac(Path(tempfile.mkdtemp(dir=self.tmp)) / "bin")
        env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYTHONPATH", "SPARK_HOME", "VIRTUAL_ENV")}
        env.update(PATH=os.pathsep.join([str(self.bin), str(home / "bin"), path]), SPARK_HOME=str(home),
                   VIRTUAL_ENV=str(self.venv), SPARK_LOCAL_IP="127.0.0.1",
                   PYSPARK_PYTHON=str(self.bin / "python"), PYSPARK_DRIVER_PYTHON=str(self.bin / "python"))
        return env


def the_wheel(tmp: Path) -> Path:
    """The wheel to install: built under ``tmp``, or, with ``SLAQ_RIFFLE_WHEEL_DIR`` set (scripts/test.sh sets it and
    empties it first), the one wheel built there by the run's first session, so every Spark line installs the same file."""
    shared = os.environ.get("SLAQ_RIFFLE_WHEEL_DIR")
    if not shared:
        return build_wheel(tmp)
    found = sorted(Path(shared).glob("slaq_riffle-*.whl"))
    if found:
        return found[0]
    Path(shared).mkdir(parents=True, exist_ok=True)
    built = build_wheel(tmp)
    shutil.copy2(built, Path(shared) / built.name)
    return Path(shared) / built.name


def install(tmp: Path) -> InstalledWheel:
    """Builds (or takes, see :func:`the_wheel`) the wheel and installs it into a fresh venv under ``tmp``."""
    wheel = the_wheel(tmp)
    return InstalledWheel(wheel, fresh_venv(tmp, wheel), tmp)
