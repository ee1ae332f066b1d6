"""Compile the shim's Java sources against the installed pyspark jars into a cached jar.

Run at install time (``python -m sparkshim.build``, called by scripts/setup.sh) and lazily by the
bridge when the jar is missing. The jar's name carries a hash of the sources and the pyspark
version, so an upgrade of either rebuilds it instead of loading a stale one.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SOURCES = Path(__file__).parent / "java"


class BuildError(RuntimeError):
    """javac is missing or the sources do not compile against this pyspark."""


def pyspark_jars() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    if not jars.is_dir():
        raise BuildError(f"pyspark at {jars.parent} has no jars/ directory; install pyspark from PyPI")
    return jars


def java_sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def fingerprint() -> str:
    import pyspark

    h = hashlib.sha1(pyspark.__version__.encode())
    for src in java_sources():
        h.update(src.relative_to(SOURCES).as_posix().encode())
        h.update(src.read_bytes())
    return h.hexdigest()[:12]


def cache_dir() -> Path:
    here = Path(__file__).parent / "_build"
    try:
        here.mkdir(exist_ok=True)
        if os.access(here, os.W_OK):
            return here
    except OSError:
        pass
    fallback = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "slaq-riffle"
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


def jar_path() -> Path:
    return cache_dir() / f"sparkshim-{fingerprint()}.jar"


def build(force: bool = False) -> Path:
    """The shim jar for the installed pyspark, compiling it first when needed."""
    target = jar_path()
    if target.exists() and not force:
        return target
    javac = shutil.which("javac") or (Path(os.environ["JAVA_HOME"]) / "bin" / "javac" if "JAVA_HOME" in os.environ else None)
    if not javac or not Path(javac).exists():
        raise BuildError("javac not found: the SLAQ/Riffle shim is compiled at install time and needs a JDK 17 (not just a JRE)")
    with tempfile.TemporaryDirectory(prefix="sparkshim-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        cmd = [str(javac), "--release", "17", "-nowarn", "-cp", str(pyspark_jars() / "*"), "-d", str(classes)]
        proc = subprocess.run(cmd + [str(s) for s in java_sources()], capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"javac failed:\n{proc.stderr or proc.stdout}")
        partial = target.with_suffix(".jar.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: sparkshim.build\n\n")
            for cls in sorted(classes.rglob("*.class")):
                jar.write(cls, cls.relative_to(classes).as_posix())
        os.replace(partial, target)
    for old in target.parent.glob("sparkshim-*.jar"):
        if old != target:
            old.unlink(missing_ok=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkshim.build", description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when an up-to-date jar exists")
    parser.add_argument("--print-path", action="store_true", help="only print where the jar is (building it if needed)")
    args = parser.parse_args(argv)
    try:
        path = build(force=args.force)
    except BuildError as exc:
        print(f"sparkshim: {exc}", file=sys.stderr)
        return 1
    print(path if args.print_path else f"sparkshim: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
