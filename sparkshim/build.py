"""Compile Java sources against the installed pyspark jars into a cached jar.

Run at install time (``python -m sparkshim.build``, called by scripts/setup.sh) and lazily by the
bridge when the jar is missing. The jar's name carries a hash of the sources, its resources and the
pyspark version, so an upgrade of either rebuilds it instead of loading a stale one. The shim is the
default; another source root (the benchmarks' lab classes) builds its own jar the same way.
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
from collections.abc import Mapping
from pathlib import Path

SOURCES = Path(__file__).parent / "java"
# Files packed next to the classes: the message schema, which the JVM reads its shared names from (Names.java)
RESOURCES: Mapping[str, Path] = {"io/slaqriffle/seam/messages.json": Path(__file__).with_name("messages.json")}


class BuildError(RuntimeError):
    """javac is missing or the sources do not compile against this pyspark."""


def pyspark_jars() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    if not jars.is_dir():
        raise BuildError(f"pyspark at {jars.parent} has no jars/ directory; install pyspark from PyPI")
    return jars


def java_sources(sources: Path = SOURCES) -> list[Path]:
    return sorted(sources.rglob("*.java"))


def fingerprint(sources: Path = SOURCES, resources: Mapping[str, Path] = RESOURCES) -> str:
    import pyspark

    h = hashlib.sha1(pyspark.__version__.encode())
    for src in java_sources(sources):
        h.update(src.relative_to(sources).as_posix().encode())
        h.update(src.read_bytes())
    for name, path in sorted(resources.items()):
        h.update(name.encode())
        h.update(path.read_bytes())
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


def jar_path(sources: Path = SOURCES, name: str = "sparkshim", resources: Mapping[str, Path] = RESOURCES) -> Path:
    return cache_dir() / f"{name}-{fingerprint(sources, resources)}.jar"


def build(force: bool = False, sources: Path = SOURCES, name: str = "sparkshim", resources: Mapping[str, Path] = RESOURCES) -> Path:
    """The jar ``name`` of the Java files under ``sources`` (plus ``resources``: path in the jar -> file)
    for the installed pyspark, compiling it first when needed. The defaults build the shim."""
    if not java_sources(sources):
        raise BuildError(f"no Java sources under {sources}")
    target = jar_path(sources, name, resources)
    if target.exists() and not force:
        return target
    javac = shutil.which("javac") or (Path(os.environ["JAVA_HOME"]) / "bin" / "javac" if "JAVA_HOME" in os.environ else None)
    if not javac or not Path(javac).exists():
        raise BuildError("javac not found: the SLAQ/Riffle shim is compiled at install time and needs a JDK 17 (not just a JRE)")
    with tempfile.TemporaryDirectory(prefix=f"{name}-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        cmd = [str(javac), "--release", "17", "-nowarn", "-cp", str(pyspark_jars() / "*"), "-d", str(classes)]
        proc = subprocess.run(cmd + [str(s) for s in java_sources(sources)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"javac failed:\n{proc.stderr or proc.stdout}")
        partial = target.with_suffix(".jar.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: sparkshim.build\n\n")
            for cls in sorted(classes.rglob("*.class")):
                jar.write(cls, cls.relative_to(classes).as_posix())
            for entry, path in sorted(resources.items()):
                jar.write(path, entry)
        os.replace(partial, target)
    for old in target.parent.glob(f"{name}-*.jar"):
        if old != target:
            old.unlink(missing_ok=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkshim.build", description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when an up-to-date jar exists")
    parser.add_argument("--print-path", action="store_true", help="only print where the jar is (building it if needed)")
    parser.add_argument("--sources", type=Path, help="another Java source root to build instead of the shim (no resources)")
    parser.add_argument("--name", default=None, help="the jar's name (default: sparkshim, or the source root's parent dir name)")
    args = parser.parse_args(argv)
    try:
        if args.sources is None:
            path = build(force=args.force, name=args.name or "sparkshim")
        else:
            path = build(force=args.force, sources=args.sources, name=args.name or args.sources.resolve().parent.name, resources={})
    except BuildError as exc:
        print(f"sparkshim: {exc}", file=sys.stderr)
        return 1
    print(path if args.print_path else f"sparkshim: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
