"""The seam to Spark's internals on the Spark line this run uses (scripts/test.sh runs these on every supported
line): every handle resolves, so no feature is switched off; the sources compile against that line's jars too
(one jar, whichever line it is built on); and no shim class but the seam's handle type uses reflection."""

from __future__ import annotations

import re

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


def test_the_floor_and_each_product_bring_their_own_java():
    roots = {root.relative_to(root.parents[1]).as_posix() for root, _ in java_sources()}
    assert roots == {"sparkshim/java", "slaq/java", "riffle/java"}
