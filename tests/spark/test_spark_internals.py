"""The seam to Spark's internals on the Spark this project pins: every handle resolves, so no feature
is switched off, and no shim class but the seam's handle type uses reflection."""

from __future__ import annotations

import re
from pathlib import Path

from riffle.product import PRODUCT as RIFFLE
from sparkshim.bridge import call_static, shim_for

JAVA = Path(__file__).parents[2] / "sparkshim" / "java"


def test_self_check_finds_every_internal_on_this_spark(spark, gateway):
    sc = spark.sparkContext
    missing = call_static(gateway, "seam.Features", "selfCheck", ["org.apache.spark.SparkContext"], sc._jsc.sc())
    assert missing.isEmpty(), str(missing)
    assert shim_for(sc).component(RIFFLE.shim_component).unavailableReason() is None


def test_reflection_lives_in_the_seam_handle_only():
    users = sorted(p.name for p in JAVA.rglob("*.java") if re.search(r"java\.lang\.reflect|getDeclaredField|setAccessible", p.read_text()))
    assert users == ["Handle.java"]
