"""Compile the shim's Java sources against pyspark's jars into the jar that ships inside the package.

Run when the wheel is built (setup.py's ``build_py``) and, in a source checkout, by scripts/setup.sh
(``python -m sparkshim.build``); never on import or attach, so a driver needs a Java runtime, not a
JDK. The jar's manifest records the Spark version it was compiled against (the newest supported line;
the jar links on every supported line) and a fingerprint of its sources, which :mod:`sparkshim.bridge`
compares at load (a checkout whose sources changed since the build). The lab's own classes build the
same way into a jar of their own (:class:`JarSpec`).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

FLOOR_SOURCES = Path(__file__).parent / "java"  # the seam, the plugin and the brain; each product's JVM code is its own
JAR_NAME = "slaq-riffle-shim.jar"
PACKAGED_JAR = Path(__file__).parent / "jars" / JAR_NAME  # the one place the jar lives, in a wheel and in a checkout
# Files packed next to the classes: each product's message schema, which its names class reads (seam/Names.java),
# and the History Server plugins' service file (docs/ui.md, "In Spark's History Server")
HISTORY_PLUGINS = "META-INF/services/org.apache.spark.status.AppHistoryServerPlugin"
SCHEMA_NAME = "messages.json"
ROOT = Path(__file__).resolve().parents[1]  # the directory holding this package and the products' packages


def product_packages(root: Path = ROOT) -> list[Path]:
    """The product packages beside this one (each registers itself in its ``product.py``) that carry JVM code, in
    ``<product>/java/io/slaqriffle/<product>/`` (named like the Python package): found by looking, so the floor names none."""
    return sorted(d for d in root.iterdir() if (d / "product.py").is_file() and (d / "java" / "io" / "slaqriffle" / d.name).is_dir())



def schema_resources(root: Path = ROOT) -> dict[str, Path]:
    """Each product's ``<product>/messages.json``, packed next to its Java package ``io/slaqriffle/<product>/``."""
    return {f"io/slaqriffle/{d.name}/{SCHEMA_NAME}": d / SCHEMA_NAME for d in product_packages(root) if (d / SCHEMA_NAME).is_file()}


SPARK_VERSION_ATTR = "Spark-Version"
SOURCES_ATTR = "Slaq-Riffle-Sources"


@dataclass(frozen=True)
class JarSpec:
    """What goes into one jar: the Java files under each of ``sources``, plus ``resources`` (path in the jar -> file)."""

    sources: tuple[Path, ...]
    target: Path
    resources: Mapping[str, Path] = field(default_factory=dict)


@functools.cache
def shim() -> JarSpec:
    """The product jar's spec: the floor's sources and every product's (looked up when first built, never at attach)."""
    return JarSpec((FLOOR_SOURCES, *(d / "java" for d in product_packages())), PACKAGED_JAR,
                   {**schema_resources(), HISTORY_PLUGINS: FLOOR_SOURCES / HISTORY_PLUGINS})


class BuildError(RuntimeError):
    """javac is missing or the sources do not compile against this pyspark."""


def pyspark_jars() -> Path:
    """The directory of Spark's jars: pyspark's own (a pip install), else ``$SPARK_HOME/jars``.

    Under spark-submit ``pyspark`` may be imported from ``python/lib/pyspark.zip``, which has no jars.
    """
    candidates = []
    try:
        import pyspark

        candidates.append(Path(pyspark.__file__).parent / "jars")
    except ImportError:
        pass
    if os.environ.get("SPARK_HOME"):
        candidates.append(Path(os.environ["SPARK_HOME"]) / "jars")
    for jars in candidates:
        if jars.is_dir() and any(jars.glob("spark-core_*.jar")):
            return jars
    raise BuildError(f"no Spark jars found (looked in {', '.join(map(str, candidates)) or 'nothing: pyspark is not importable'}); "
                     "build in an environment with pyspark installed from PyPI, or set SPARK_HOME")


def spark_version_of(jars: Path) -> str:
    """The Spark version of a jars/ directory, from spark-core's manifest (or its file name)."""
    core = sorted(jars.glob("spark-core_*.jar"))
    if not core:
        raise BuildError(f"{jars} has no spark-core jar")
    with zipfile.ZipFile(core[0]) as z:
        version = manifest_attributes(z.read("META-INF/MANIFEST.MF").decode()).get("Implementation-Version")
    if version:
        return version
    match = re.search(r"spark-core_[\d.]+-(.+)\.jar$", core[0].name)
    if not match:
        raise BuildError(f"cannot tell the Spark version of {core[0]}")
    return match.group(1)


def java_sources(spec: JarSpec | None = None) -> list[tuple[Path, Path]]:
    """Each Java file of ``spec`` (default: :func:`shim`) with the source root it is under, in the order of their paths
    below their roots."""
    spec = spec or shim()
    return sorted(((root, src) for root in spec.sources for src in root.rglob("*.java")), key=lambda rs: rs[1].relative_to(rs[0]))


def sources_fingerprint(spec: JarSpec | None = None) -> str:
    """A hash of the Java sources and resources (paths and contents): a jar older than them is detected, not loaded."""
    spec = spec or shim()
    h = hashlib.sha1()
    for root, src in java_sources(spec):
        h.update(src.relative_to(root).as_posix().encode())
        h.update(src.read_bytes())
    for name, path in sorted(spec.resources.items()):
        h.update(name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def manifest_attributes(text: str) -> dict[str, str]:
    """The main section of a jar manifest (continuation lines start with one space)."""
    attrs: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if not line:
            break
        if line.startswith(" ") and last:
            attrs[last] += line[1:]
        elif ":" in line:
            last, value = line.split(":", 1)
            attrs[last] = value.strip()
    return attrs


def jar_manifest(jar: Path) -> dict[str, str]:
    with zipfile.ZipFile(jar) as z:
        return manifest_attributes(z.read("META-INF/MANIFEST.MF").decode())


def find_javac() -> Path:
    found = shutil.which("javac")
    if not found and os.environ.get("JAVA_HOME"):
        candidate = Path(os.environ["JAVA_HOME"]) / "bin" / "javac"
        found = str(candidate) if candidate.exists() else None
    if not found:
        raise BuildError("javac not found: building the SLAQ/Riffle shim needs a JDK 17 (not just a Java runtime); "
                         "running an application with the built jar needs only the runtime")
    return Path(found)


def outside_line_hint(version: str) -> str:
    """Why javac may fail: Spark ``version`` is outside the supported lines (empty when it is inside or unknown).

    Imported here, not at module level: setup.py loads this file on its own, and the ``sparkshim`` it
    would import may be another installed copy."""
    try:
        from sparkshim.spark_line import in_line, supported_spark
    except ImportError:
        return ""
    supported = supported_spark()
    if supported and in_line(version, supported) is False:
        return f" (outside the supported Spark lines, pyspark{supported}, which the sources are written for)"
    return ""


def javac_command(jars: Path, classes: Path) -> list[str]:
    """javac for Java 17 against every jar in ``jars``, writing into ``classes`` (the sources to add). javac's own
    JVM runs for seconds: its C1 compiler alone halves its CPU, and the classes it writes are the same."""
    return [str(find_javac()), "-J-XX:TieredStopAtLevel=1", "--release", "17", "-nowarn", "-cp", str(jars / "*"), "-d", str(classes)]


def compile_jar(target: Path, jars: Path | None = None, spec: JarSpec | None = None) -> Path:
    """Compile ``spec``'s sources against ``jars`` (default: :func:`pyspark_jars`) into ``target``, atomically."""
    spec = spec or shim()
    sources = java_sources(spec)
    if not sources:
        raise BuildError(f"no Java sources under {', '.join(map(str, spec.sources))}")
    jars = jars or pyspark_jars()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sparkshim-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        proc = subprocess.run(javac_command(jars, classes) + [str(src) for _, src in sources], capture_output=True, text=True)
        if proc.returncode != 0:
            version = spark_version_of(jars)
            raise BuildError(f"javac failed against the Spark {version} jars in {jars}{outside_line_hint(version)}:\n{proc.stderr or proc.stdout}")
        manifest = ("Manifest-Version: 1.0\nCreated-By: sparkshim.build\n"
                    f"{SPARK_VERSION_ATTR}: {spark_version_of(jars)}\n{SOURCES_ATTR}: {sources_fingerprint(spec)}\n\n")
        partial = target.with_name(target.name + ".tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", manifest)
            for cls in sorted(classes.rglob("*.class")):
                jar.write(cls, cls.relative_to(classes).as_posix())
            for entry, path in sorted(spec.resources.items()):
                jar.write(path, entry)
        os.replace(partial, target)
    return target


def is_current(jar: Path, spec: JarSpec | None = None) -> bool:
    """``jar`` exists and was built from ``spec``'s sources as they are now."""
    try:
        return jar_manifest(jar).get(SOURCES_ATTR) == sources_fingerprint(spec)
    except (OSError, KeyError, zipfile.BadZipFile):
        return False


def build(force: bool = False, spec: JarSpec | None = None) -> Path:
    """``spec``'s jar (default: the packaged shim jar), compiled first when it is missing or older than its
    sources (developer tooling: scripts/setup.sh and the lab; the bridge never calls this)."""
    spec = spec or shim()
    if force or not is_current(spec.target, spec):
        compile_jar(spec.target, spec=spec)
    return spec.target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkshim.build", description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when an up-to-date jar exists")
    parser.add_argument("--print-path", action="store_true", help="only print where the jar is (building it if needed)")
    parser.add_argument("--output", type=Path, help="write the jar here instead of the package (always compiles)")
    parser.add_argument("--spark-jars", type=Path, help="compile against this directory of Spark jars instead of pyspark's")
    args = parser.parse_args(argv)
    try:
        if args.output or args.spark_jars:
            path = compile_jar(args.output or PACKAGED_JAR, args.spark_jars)
        else:
            path = build(force=args.force)
    except BuildError as exc:
        print(f"sparkshim: {exc}", file=sys.stderr)
        return 1
    print(path if args.print_path else f"sparkshim: {path} (Spark {jar_manifest(path).get(SPARK_VERSION_ATTR)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
