"""What a job name may be and what one epoch costs with thousands of jobs open (issue #47): names bounded in bytes where
they enter and inert in log lines, a status listing at most MAX_STATUS_JOBS jobs, a sync draining only losses."""

from __future__ import annotations

import logging

import pytest

import slaq
from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.live.status import MAX_STATUS_JOBS
from slaq.names import MAX_NAME_BYTES, shown
from tests.fixtures import FakeClock, FakePools


def test_a_name_over_the_byte_bound_is_refused_where_it_enters():
    assert slaq.job("x" * MAX_NAME_BYTES).name == "x" * MAX_NAME_BYTES
    for name in ("x" * (MAX_NAME_BYTES + 1), "\u00e9" * (MAX_NAME_BYTES // 2 + 1), "y" * 10_000_000):
        with pytest.raises(ValueError, match=f"at most {MAX_NAME_BYTES} bytes"):
            slaq.job(name)


def test_control_characters_in_a_name_are_inert_in_log_lines(caplog):
    name = "a\x1b[2J\x0b\x0c\x85\u2028\x00\x07\x7f\u202eb"
    assert shown(name) == "a\\u001B[2J\\u000B\\u000C\\u0085\\u2028\\u0000\\u0007\\u007F\\u202Eb"
    with caplog.at_level(logging.INFO, logger="slaq"):
        EpochLoop(FakePools(), clock=FakeClock()).add(LiveJob(name, reports=False))
    (line,) = [r.getMessage() for r in caplog.records if "reports no per-iteration loss" in r.getMessage()]
    assert shown(name) in line and not set("\x1b\x0b\x0c\x85\u2028\x00\x07\x7f\u202e") & set(line)


class CountingPools(FakePools):
    """The fake shim, counting full drains and loss-only ones."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def drain(self):
        self.calls.append("drain")
        return super().drain()

    def drain_losses(self):
        self.calls.append("losses")
        return []


def test_a_status_lists_at_most_max_status_jobs_and_a_sync_reads_no_pool_states():
    pools = CountingPools()
    loop = EpochLoop(pools, clock=FakeClock())
    for i in range(MAX_STATUS_JOBS + 50):
        loop.add(LiveJob(f"j{i:05d}"))
    loop.step()
    assert [j.job for j in loop.status.jobs] == [f"j{i:05d}" for i in range(MAX_STATUS_JOBS)]  # the first to arrive
    assert len(pools.deposits[-1]) == MAX_STATUS_JOBS + 50  # every job still gets its share
    pools.calls.clear()
    loop.sync()
    assert pools.calls == ["losses"]
