"""How full the executors' storage memory got while a sweep ran, and how much cached data went to disk.

Concurrent spark.ml fits each keep their own cached copy of the training data (why that matters:
``slaq.live.storage``, whose WARN says the same to a user at run time). This watch puts the peaks in
the benchmark's JSON, so a difference in executor time per iteration between configurations can be
told apart from a scheduling effect.
"""

from __future__ import annotations

import threading
from typing import Any

from slaq.live.status_store import scala_list
from slaq.live.storage import MB


class StorageWatch:
    """Samples Spark's status store every ``interval`` seconds from a daemon thread (a context manager);
    :attr:`summary` holds the peaks once it exits."""

    def __init__(self, sc: Any, interval: float = 0.5):
        self._sc = sc
        self._store = sc._jsc.sc().statusStore()
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slaq-bench-storage-watch", daemon=True)
        self._peak_memory = 0.0
        self._peak_disk = 0.0
        self._capacity = 0.0
        self.summary: dict[str, float] = {}
        self.rdd_peaks: dict[str, float] = {}  # each persisted RDD's largest size seen (memory plus disk, bytes), by name

    def sample(self) -> None:
        """One reading: storage memory used and cached bytes on disk, summed over the executors, and each persisted RDD's size."""
        memory = disk = capacity = 0.0
        for e in scala_list(self._sc, self._store.executorList(True)):
            if e.id() == "driver":
                continue
            memory += e.memoryUsed()
            disk += e.diskUsed()
            capacity += e.maxMemory()
        for info in self._sc._jsc.sc().getRDDStorageInfo():
            name = str(info.name())
            self.rdd_peaks[name] = max(self.rdd_peaks.get(name, 0.0), float(int(info.memSize()) + int(info.diskSize())))
        self._peak_memory = max(self._peak_memory, memory)
        self._peak_disk = max(self._peak_disk, disk)
        self._capacity = max(self._capacity, capacity)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()

    def __enter__(self) -> StorageWatch:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
        self.summary = {"storage_memory_peak_mb": round(self._peak_memory / MB, 1),
                        "storage_memory_capacity_mb": round(self._capacity / MB, 1),
                        "cached_on_disk_peak_mb": round(self._peak_disk / MB, 1)}
