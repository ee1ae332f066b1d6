"""slaq.live.storage: when the runtime says cached data spilled to disk while SLAQ ran several jobs."""

from __future__ import annotations

import logging

from slaq.live.storage import MB, StorageCheck, spill_warning


def test_the_warning_needs_blocks_on_disk_and_at_least_two_jobs():
    assert spill_warning(0, 5) is None
    assert spill_warning(300 * MB, 1) is None  # one job: SLAQ did not widen anything
    text = spill_warning(300 * MB, 4)
    assert text is not None and "300 MB" in text and "4 SLAQ jobs" in text and "spark.executor.memory" in text


def test_the_check_reads_every_nth_epoch_warns_once_and_survives_a_failed_read(caplog):
    reads: list[int] = []
    answers = iter([RuntimeError("py4j down"), 0, 50 * MB, 80 * MB])

    def read() -> int:
        reads.append(1)
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return a

    check = StorageCheck(read, every=3)
    with caplog.at_level(logging.DEBUG, logger="slaq.storage"):
        for _ in range(2):
            check.after_epoch(jobs=3)
        assert reads == []  # not before the 3rd epoch
        check.after_epoch(jobs=3)  # read fails: logged at DEBUG, nothing raised
        for _ in range(3):
            check.after_epoch(jobs=3)  # reads 0: nothing to say
        for _ in range(3):
            check.after_epoch(jobs=1)  # one job: not even read
        assert len(reads) == 2 and check.warned is None
        for _ in range(3):
            check.after_epoch(jobs=3)  # 50 MB on disk: the warning
        for _ in range(9):
            check.after_epoch(jobs=3)  # once only, and no more reads
    assert check.warned is not None and "50 MB" in check.warned
    assert len(reads) == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [check.warned]
    assert any("py4j down" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)
