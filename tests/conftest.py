"""Shared fixtures: one real Spark session (local-cluster, two executor JVMs) per test session."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def spark_local_root():
    root = Path(tempfile.mkdtemp(prefix="slaq-riffle-spark-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def spark(spark_local_root):
    """A real SparkSession on ``local-cluster[2,1,1024]`` whose shuffle files live under ``spark_local_root``."""
    from pyspark.sql import SparkSession

    from slaq.bench.session import neutral_gateway

    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    neutral_gateway()  # this session's confs must not become defaults of later sessions in this process
    session = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("slaq-riffle-tests")
               .config("spark.local.dir", str(spark_local_root))
               .config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.shuffle.sort.bypassMergeThreshold", "1")
               .config("spark.scheduler.mode", "FAIR")
               .config("spark.slaq.enabled", "true")
               .config("spark.slaq.epoch", "0.5s")
               .getOrCreate())
    yield session
    session.stop()


def pytest_collection_modifyitems(session, config, items):
    """Multi-node cluster tests first: each starts its own SparkContext, and one Python process holds one
    at a time, so they must run before the shared local-cluster session above is created."""
    items.sort(key=lambda item: 0 if "/tests/cluster/" in str(item.path) else 1)
