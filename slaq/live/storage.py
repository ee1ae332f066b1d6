"""One warning when cached data stops fitting the executors' storage memory while SLAQ runs several jobs.

Every iterative spark.ml fit of the estimators :func:`slaq.integrations.catalogue.training_caches` lists persists
its own copy of its training data (``MEMORY_AND_DISK``) for as long as it runs. SLAQ runs many fits at
once, so many copies are alive together; once they exceed storage memory Spark moves blocks to disk
and every later iteration reads them back, which can cost more than SLAQ's allocation wins
(docs/benchmarks.md: a third to a half more executor CPU per iteration at the default
size of ``slaq bench mllib`` on 1 GiB executors). Nothing in Spark says so, hence this line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("slaq.storage")
CHECK_EVERY_EPOCHS = 10  # reading every RDD's storage is an RPC to the block manager master: not every epoch
MB = 1024 * 1024


def memory_blocks_on_disk(sc: Any) -> int:
    """Bytes of blocks on disk that belong to RDDs persisted at a level using memory *and* disk, i.e.
    blocks Spark moved out of (or never fitted in) storage memory."""
    total = 0
    for info in sc._jsc.sc().getRDDStorageInfo():
        level = info.storageLevel()
        if level.useMemory() and level.useDisk():
            total += int(info.diskSize())
    return total


def spill_warning(on_disk: int, jobs: int) -> str | None:
    """The warning for ``on_disk`` bytes of memory-level cached blocks on disk while ``jobs`` SLAQ jobs
    run, or ``None`` when there is nothing to say (no spill, or a single job, which SLAQ does not widen)."""
    if on_disk <= 0 or jobs < 2:
        return None
    return (f"SLAQ: cached data no longer fits the executors' storage memory: {on_disk / MB:.0f} MB of blocks "
            f"cached for memory are on disk while {jobs} SLAQ jobs run. Each iterative spark.ml fit caches its own "
            "copy of its training data while it runs, and SLAQ runs many fits at once, so every iteration now "
            "reads blocks back from disk; give the executors more memory (spark.executor.memory) or start fewer "
            "fits at a time (docs/mllib.md, 'Memory')")


class StorageCheck:
    """Called once per epoch; every :data:`CHECK_EVERY_EPOCHS` epochs it reads the storage and logs
    :func:`spill_warning` at most once per SLAQ runtime. Never raises: a failed read is logged at DEBUG."""

    def __init__(self, read_on_disk: Callable[[], int], every: int = CHECK_EVERY_EPOCHS):
        self._read = read_on_disk
        self._every = every
        self._epochs = 0
        self.warned: str | None = None

    def after_epoch(self, jobs: int) -> None:
        self._epochs += 1
        if self.warned is not None or jobs < 2 or self._epochs % self._every:
            return
        try:
            message = spill_warning(self._read(), jobs)
        except Exception as exc:
            log.debug("SLAQ: could not read the executors' storage: %s", exc)
            return
        if message is not None:
            self.warned = message
            log.warning(message)
