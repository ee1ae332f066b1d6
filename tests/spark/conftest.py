"""The shim's own tests run in the shared session's driver JVM (no extra JVM on a 2-core machine)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def gateway(spark):
    return spark.sparkContext._gateway
