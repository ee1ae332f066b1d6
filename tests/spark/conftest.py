"""The shim's own tests run in the shared session's driver JVM (no extra JVM on a 2-core machine)."""

from __future__ import annotations

import pytest

from srsupport.daemons import DaemonProcess


@pytest.fixture(scope="module")
def gateway(spark):
    return spark.sparkContext._gateway


@pytest.fixture(scope="module")
def merger(spark_local_root):
    d = DaemonProcess([spark_local_root])
    yield d
    d.stop()
