"""On the shared session: a caching spark.ml fit that storage memory has no room for waits for the
running one (no cores, "waiting for storage memory"), starts when it ends, and Spark's storage status
shows the running fit's training cache under the name admission attributes it by."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np
import pytest

import slaq
from slaq.estimators import training_cache_prefix
from slaq.live.admission import StorageAdmission, StorageReading
from slaq.live.storage import read_storage


@pytest.fixture(scope="module")
def scheduler(spark):
    s = slaq.attach(spark)
    assert s.enabled and s.loop is not None
    return s


@pytest.fixture
def admission(scheduler, spark, monkeypatch) -> StorageAdmission:
    """Admission switched on for this test (``spark.slaq.storageAdmission`` is off by default and the
    shared session's runtime is built once), as the runtime builds it from that conf."""
    adm = StorageAdmission(lambda: read_storage(spark.sparkContext), scheduler._wake_loop)
    monkeypatch.setattr(scheduler, "admission", adm)
    monkeypatch.setattr(scheduler.loop, "_waiting", adm.waiting)
    return adm


@pytest.fixture(scope="module")
def data(spark) -> Any:
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 4))
    label = (X @ [1.0, -2.0, 0.5, 0.0] + rng.normal(size=400) > 0).astype(float)
    df = spark.createDataFrame([(Vectors.dense(x), float(y)) for x, y in zip(X, label)], ["features", "label"])
    df = df.repartition(2).cache()
    df.count()
    return df


def test_a_fit_without_room_waits_for_the_running_one_then_runs(scheduler, admission, data, monkeypatch, caplog):
    from pyspark.ml.classification import LogisticRegression

    readings: list[StorageReading] = []
    read = admission._read

    def observed() -> StorageReading:
        reading = read()
        readings.append(reading)
        return reading

    monkeypatch.setattr(admission, "_read", observed)
    monkeypatch.setattr(admission, "_headroom", 0.0)  # no room for any cache: one caching fit at a time
    first, second = LogisticRegression(maxIter=8, regParam=0.01), LogisticRegression(maxIter=8, regParam=0.1)
    models: dict[str, Any] = {}
    whys: set[str] = set()

    def fit(name: str, est: Any) -> None:
        models[name] = est.fit(data)

    with caplog.at_level(logging.INFO, logger="slaq.admission"):
        a = threading.Thread(target=fit, args=("first", first))
        a.start()
        deadline = time.monotonic() + 30
        while not scheduler.running_jobs() and time.monotonic() < deadline:
            time.sleep(0.01)
        b = threading.Thread(target=fit, args=("second", second))
        b.start()
        while a.is_alive() and time.monotonic() < deadline:
            status = scheduler.loop.status
            whys |= {j.why for j in status.jobs} if status is not None else set()
            time.sleep(0.05)
        a.join(60)
        b.join(60)
    assert set(models) == {"first", "second"}
    messages = [r.getMessage() for r in caplog.records]
    assert sum("waits for storage memory" in m for m in messages) == 1, messages
    assert sum("starts after" in m for m in messages) == 1, messages
    assert "waiting for storage memory" in whys
    assert admission.waiting() == set()
    names = {r.name for reading in readings for r in reading.rdds}
    assert any(n.startswith(training_cache_prefix("LogisticRegression", first.uid)) for n in names), names  # what a fit's measured size comes from
    assert all(reading.capacity > 0 for reading in readings)
