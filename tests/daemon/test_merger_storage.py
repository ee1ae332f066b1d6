"""A merger's node storage: from its flags or measured once at start, reported in its Status and by ``riffle status``,
and the driver pricing each group of map outputs with the storage of the node that holds it (real daemons; the
two nodes are two loopback addresses, as in the loopback cluster)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from riffle import messages
from riffle.driver.config import RiffleConfig
from riffle.driver.cost import NOT_WORTH_IT, WORTH_IT
from riffle.driver.gate import node_storage
from riffle.driver.scheduler import MergeScheduler
from srsupport.daemons import DaemonInProcess
from tests.unit.test_riffle_driver_units import TrackerStandIn


def riffle_status(*addresses: str, json_rows: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "riffle.cli", "status", *addresses, "--wait", "30", *(["--json"] if json_rows else [])],
                          capture_output=True, text=True, timeout=90)


def test_a_merger_reports_the_storage_its_flags_declare(root, start_merger):
    with start_merger("--storage-request-time", "8ms", "--storage-bandwidth", "150m") as d:
        status = d.client.status()
        assert status.storage_request_seconds == pytest.approx(8e-3) and status.storage_bytes_per_second == 150 << 20
        assert status.storage_source == "flags"
        assert [line for line in d.log().splitlines() if "node storage" in line][0].endswith(
            'node storage: 8 ms a read request, 150 MiB/s (flags)"}')
        out = riffle_status(d.address)
        assert out.returncode == 0, out.stderr
        row = json.loads(out.stdout)[0]
        assert (row["storage_request_seconds"], row["storage_bytes_per_second"], row["storage_source"]) == (0.008, 150 << 20, "flags")
        table = riffle_status(d.address, json_rows=False)
        assert "8 ms a read request, 150 MiB/s (flags)" in table.stdout, table.stdout


def test_a_merger_without_storage_flags_measures_its_node_at_start(root, start_merger):
    with start_merger() as d:
        row = json.loads(riffle_status(d.address).stdout)[0]
        assert row["storage_request_seconds"] > 0 and row["storage_bytes_per_second"] > 0 and row["storage_source"] == "measured"
        assert len([line for line in d.log().splitlines() if "node storage" in line]) == 1
    assert not [p.name for p in root.iterdir() if "probe" in p.name]  # the probe's file is gone
    with start_merger("--no-storage-probe", "--storage-request-time", "8ms") as d:
        row = json.loads(riffle_status(d.address).stdout)[0]
        assert (row["storage_request_seconds"], row["storage_bytes_per_second"], row["storage_source"]) == (0.008, None, "flags")
    with start_merger("--no-storage-probe") as d:
        status = d.client.status()
        assert not status.HasField("storage_request_seconds") and not status.HasField("storage_bytes_per_second")
        assert json.loads(riffle_status(d.address).stdout)[0]["storage_source"] == "unknown"


@contextmanager
def merger_on(host: str, root: Path, *flags: str) -> Iterator[str]:
    """A real merger (in this process) listening on ``host``, a loopback address of its own (another node to the
    driver); its address."""
    with DaemonInProcess([root], "--no-fsync", *flags, host=host) as merger:
        yield merger.address


def test_the_driver_prices_each_group_with_the_storage_of_its_node(tmp_path):
    """The same shuffle shape on two nodes: merged where the merger reports a slow disk, released unmerged (not worth
    it) where it reports a fast one. Reducers are not coalesced here, so each shuffle has 200 readers."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with merger_on("127.0.0.2", tmp_path / "a", "--storage-request-time", "8ms", "--storage-bandwidth", "150m") as slow, \
            merger_on("127.0.0.3", tmp_path / "b", "--storage-request-time", "0.001ms", "--storage-bandwidth", "1t") as fast:
        assert riffle_status(slow, fast).returncode == 0
        conf = {"spark.riffle.enabled": "true", "spark.riffle.mergers": f"{slow},{fast}", "spark.riffle.nway": "2",
                "spark.riffle.cost.enabled": "true", "spark.sql.adaptive.enabled": "false"}
        tracker = TrackerStandIn()
        scheduler = MergeScheduler(None, tracker, RiffleConfig.from_conf(conf.get))
        try:
            tracker.events = [messages.MapStageSubmitted(1, 5, "on slow", 0, 2, 200, True, False, {}, "", ""),
                              messages.MapStageSubmitted(2, 6, "on fast", 0, 2, 200, True, False, {}, "", "")]
            tracker.events += [messages.MapOutput(1, 5, 0, i, i, "1", "127.0.0.2", 100_000) for i in range(2)]
            tracker.events += [messages.MapOutput(2, 6, 0, i, 10 + i, "2", "127.0.0.3", 100_000) for i in range(2)]
            deadline = time.monotonic() + 30  # the mergers' Status answers arrive off the scheduler's thread: step until both decided
            while time.monotonic() < deadline and not (len(scheduler.shuffles) == 2 and all(
                    s.decisions and not s.undecided and (s.merges or s.shuffle_id in tracker.released) for s in scheduler.shuffles.values())):
                scheduler.step()
                time.sleep(0.01)
            on_slow, on_fast = scheduler.shuffles[1], scheduler.shuffles[2]
            assert [d.reason for d in on_slow.decisions] == [WORTH_IT] and [m.merger for m in on_slow.merges] == [slow]
            assert [d.reason for d in on_fast.decisions] == [NOT_WORTH_IT] and on_fast.merges == [] and tracker.released == [2]
            assert node_storage(scheduler.fleet, "127.0.0.2").request_seconds == pytest.approx(8e-3)
            assert node_storage(scheduler.fleet, "127.0.0.3").request_seconds == scheduler.config.cost.storage.request_seconds
        finally:
            scheduler.fleet.close()
