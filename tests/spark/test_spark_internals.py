"""The seam to Spark's internals on the Spark line this run uses (scripts/test.sh runs these on every supported
line): every handle resolves, so no feature is switched off; the sources compile against that line's jars too
(one jar, whichever line it is built on); no shim class but the seam's handle type uses reflection, and no test or
lab file reaches a private JVM member by reflection."""

from __future__ import annotations

import re
from pathlib import Path

import pyspark

from riffle.product import PRODUCT as RIFFLE
from sparkshim.bridge import call_static, shim_for
from sparkshim.build import SPARK_VERSION_ATTR, compile_jar, jar_manifest, java_sources, pyspark_jars


def test_self_check_finds_every_internal_on_this_spark(spark, gateway):
    sc = spark.sparkContext
    missing = call_static(gateway, "seam.Features", "selfCheck", ["org.apache.spark.SparkContext"], sc._jsc.sc())
    assert missing.isEmpty(), str(missing)
    assert shim_for(sc).component(RIFFLE.shim_component).unavailableReason() is None


def test_the_shim_compiles_against_this_lines_jars(tmp_path):
    jar = compile_jar(tmp_path / "shim.jar", pyspark_jars())
    assert jar_manifest(jar)[SPARK_VERSION_ATTR] == pyspark.__version__


def test_reflection_lives_in_the_seam_handle_only():
    users = sorted(p.name for _, p in java_sources() if re.search(r"java\.lang\.reflect|getDeclaredField|setAccessible", p.read_text()))
    assert users == ["Handle.java"]


PRIVATE_REACH = re.compile(r"getDeclared(Field|Method|Constructor)s?\b|setAccessible")


def test_tests_and_lab_read_no_private_jvm_member():
    """The tests and the lab read the JVM's state as users can (the tabs' JSON, the driver log, the typed messages, the
    shim's public methods), never a private member by reflection: a product class carries nothing only they read."""
    root = Path(__file__).parents[2]
    sources = [p for d in ("tests", "lab") for p in sorted((root / d).rglob("*")) if p.suffix in {".py", ".java", ".scala", ".sh"}]
    users = [p.relative_to(root).as_posix() for p in sources if p != Path(__file__) and PRIVATE_REACH.search(p.read_text())]
    assert sources and users == []


def test_the_floor_and_each_product_bring_their_own_java():
    roots = {root.relative_to(root.parents[1]).as_posix() for root, _ in java_sources()}
    assert roots == {"sparkshim/java", "slaq/java", "riffle/java"}
