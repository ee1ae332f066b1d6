"""The merge cost model (riffle.driver.cost) and its place in the scheduler: which groups are merged,
which are skipped as not worth it, and how the skips are counted."""

from __future__ import annotations

import time

import pytest

from riffle.driver import cost
from riffle.driver.config import RiffleConfig
from riffle.driver.cost import CostConfig, StorageCost
from riffle.driver.merges import ShuffleState
from riffle.driver.status import NOT_WORTH_IT, fell_back

DISK = StorageCost(request_seconds=1e-3, byte_seconds=1 / 100e6, merge_seconds=5e-3, buffer_bytes=4 << 20)


def test_many_small_blocks_read_by_many_reducers_are_worth_merging():
    d = cost.decide([200_000] * 20, readers=1000, storage=DISK)  # the thesis's regime: M x R small reads
    assert d.merge and d.reason == cost.WORTH_IT and d.saved_seconds > d.cost_seconds


def test_few_readers_or_large_outputs_are_not_worth_merging():
    assert not cost.decide([200_000] * 20, readers=1, storage=DISK).merge  # coalesced to one reducer: 19 requests saved
    big = cost.decide([500 << 20] * 2, readers=200, storage=DISK)  # copying 1 GB costs more than 200 requests
    assert not big.merge and big.reason == cost.NOT_WORTH_IT


def test_a_single_output_is_never_a_merge():
    assert not cost.decide([10], readers=10_000, storage=DISK).merge


def test_savings_grow_with_fan_in_and_readers_costs_with_bytes():
    base = cost.decide([1 << 20] * 4, 100, DISK)
    assert cost.decide([1 << 20] * 8, 100, DISK).saved_seconds > base.saved_seconds
    assert cost.decide([1 << 20] * 4, 200, DISK).saved_seconds > base.saved_seconds
    assert cost.decide([4 << 20] * 4, 100, DISK).cost_seconds > base.cost_seconds


@pytest.mark.parametrize("coalesce,shuffle_bytes,expected", [
    (False, 10 << 20, 200),  # no adaptive execution: every partition is a reduce task
    (True, 2 << 20, 2),  # 2 MB over 4 cores: the 1 MB minimum partition size wins
    (True, 100 << 20, 4),  # parallelism first: 25 MB per task, under the 64 MB advisory size
    (True, 10 << 30, 160),  # 10 GB at the 64 MB advisory size
    (True, 100 << 30, 200),  # never more than the partitions
    (True, 0, 1),
])
def test_reduce_tasks_follow_adaptive_coalescing(coalesce, shuffle_bytes, expected):
    assert cost.reduce_tasks(200, shuffle_bytes, CostConfig(coalesce=coalesce), parallelism=4) == expected


def test_reduce_tasks_without_parallelism_first_use_the_advisory_size():
    assert cost.reduce_tasks(200, 640 << 20, CostConfig(coalesce=True, parallelism_first=False), parallelism=4) == 10


def test_summary_is_one_line_with_counts():
    text = cost.summary([cost.decide([1 << 10] * 4, 1000, DISK), cost.decide([1 << 10] * 4, 1, DISK)])
    assert text.startswith("1 group worth merging, 1 skipped as not worth it") and "\n" not in text


def test_probe_measures_positive_costs(tmp_path):
    measured = cost.probe(tmp_path, file_bytes=1 << 20, requests=8)
    assert measured.request_seconds > 0 and measured.byte_seconds > 0
    assert list(tmp_path.iterdir()) == []


def test_conf_keys_and_adaptive_defaults():
    default = RiffleConfig.from_conf({}.get).cost
    assert default.enabled and default.coalesce and default.advisory_bytes == 64 << 20
    assert not RiffleConfig.from_conf({"spark.riffle.cost.enabled": "false"}.get).cost.enabled
    conf = { "spark.riffle.cost.requestTime": "2ms", "spark.riffle.cost.bandwidth": "200m",
            "spark.riffle.cost.mergeTime": "10ms", "spark.riffle.cost.mergeInputTime": "1ms", "spark.sql.adaptive.enabled": "false",
            "spark.sql.adaptive.advisoryPartitionSizeInBytes": "32MB"}
    on = RiffleConfig.from_conf(conf.get).cost
    assert on.enabled and not on.coalesce and on.advisory_bytes == 32 << 20
    assert on.storage.request_seconds == pytest.approx(2e-3) and on.storage.byte_seconds == pytest.approx(1 / (200 << 20))
    assert on.storage.merge_seconds == pytest.approx(1e-2) and on.storage.input_seconds == pytest.approx(1e-3)


def test_a_merge_costs_per_output_merged_so_small_groups_cost_less():
    storage = cost.StorageCost()
    small, large = (cost.merge_cost_seconds(k, 0, storage) for k in (3, 20))
    assert small < large / 4  # a fixed cost per merge alone made them nearly equal
    assert large - small == pytest.approx(17 * (storage.input_seconds + storage.request_seconds))


def test_skipped_groups_count_as_not_worth_it():
    s = ShuffleState(1, 2, 40, 200, True, None)
    s.unsent[NOT_WORTH_IT] += 3
    assert fell_back(s) == {NOT_WORTH_IT: 3}


def _scheduler_run(cost_config: CostConfig, partitions: int, nbytes: int, sql: bool = True, adaptive: dict | None = None,
                   holdable: bool = True, outputs: int = 4, mergers: tuple[str, ...] = ()):
    """A scheduler fed one shuffle's events: ``outputs`` outputs, 2-way merges. No merger is reachable: the listed ones, or
    else the one on the outputs' host, are closed ports (their Status calls fail in the background: stepped until the
    cost model had that answer)."""
    import dataclasses

    from riffle import messages
    from riffle.driver.scheduler import MergeScheduler
    from tests.unit.test_riffle_driver_units import TrackerStandIn, closed_port

    class Tracker(TrackerStandIn):
        def hold(self, shuffle):
            self.holds.append(shuffle)
            return holdable

    tracker = Tracker()
    port = int(closed_port().rpartition(":")[2])
    config = RiffleConfig(enabled=True, nway=2, mergers=mergers, merger_port=port)
    sched = MergeScheduler(None, tracker, dataclasses.replace(config, cost=cost_config))
    tracker.events = [messages.MapStageSubmitted(3, 5, "q", 0, 4, partitions, True, sql, adaptive or {}, "", "")]
    tracker.events += [messages.MapOutput(3, 5, 0, i, i, "1", "127.0.0.1", nbytes) for i in range(outputs)]
    sched.step()
    s = sched.shuffles[3]
    deadline = time.monotonic() + 30
    while (s.undecided or not s.priced_at_submission) and time.monotonic() < deadline:
        time.sleep(0.01)
        sched.step()
    return s, tracker, sched


def test_a_sql_exchange_that_cannot_pay_is_never_held():
    """Coalesced to one reduce task (4 MB over one core), no merge of it can pay: decided at its first output, before
    anything waited for it; it counts as unmerged, not worth it, and the shim forgets it."""
    s, tracker, sched = _scheduler_run(CostConfig(enabled=True, storage=DISK, coalesce=True), partitions=200, nbytes=1 << 20)
    assert [d.reason for d in s.decisions] == [NOT_WORTH_IT] and s.merges == [] and s.finalized and not s.held
    assert tracker.holds == [] and tracker.released == [3] and s.reduce_tasks == 1
    assert (sched.status().totals.merging, sched.status().totals.unmerged) == (0, {NOT_WORTH_IT: 1})
    (summary,) = sched.status().unmerged  # never held: counted by cause, not listed
    assert (summary.cause, summary.shuffles, tuple(summary.latest)) == (NOT_WORTH_IT, 1, (3,)) and "at its first output" in summary.reason
    assert not sched.status().shuffles


def test_an_rdd_shuffle_is_priced_by_its_partitions_even_when_sql_exchanges_coalesce():
    s, tracker, _ = _scheduler_run(CostConfig(enabled=True, storage=DISK, coalesce=True), partitions=2000, nbytes=100_000, sql=False)
    assert [d.reason for d in s.decisions] == [cost.WORTH_IT] * 2 and tracker.holds == [3] and s.held and tracker.released == []
    assert s.reduce_tasks == 2000 and NOT_WORTH_IT not in fell_back(s)  # sent on (here no merger is reachable: merger_down)


def test_a_shuffle_that_cannot_pay_whatever_its_bytes_and_node_is_declined_at_its_map_stages_submission():
    """With the mergers listed, the priciest node's storage is known before any output (here the listed merger is down:
    the conf's); with mergers found per executor host it is not, and the decision waits for the first output."""
    from tests.unit.test_riffle_driver_units import closed_port

    s, tracker, sched = _scheduler_run(CostConfig(), partitions=3, nbytes=1 << 20, outputs=0, mergers=(closed_port(),))
    assert [d.reason for d in s.decisions] == [NOT_WORTH_IT] and s.finalized and tracker.holds == [] and tracker.released == [3]
    assert sched.status().totals.unmerged == {NOT_WORTH_IT: 1} and "submission" in sched.status().unmerged[0].reason
    sched.fleet.close()
    s, tracker, sched = _scheduler_run(CostConfig(), partitions=3, nbytes=1 << 20, outputs=0)
    assert s.decisions == [] and not s.finalized and not s.held and tracker.holds == []


def test_a_shuffle_whose_reader_already_runs_is_left_unmerged():
    s, tracker, sched = _scheduler_run(CostConfig(enabled=True, storage=DISK, coalesce=False), partitions=2000, nbytes=100_000,
                                       holdable=False)
    assert tracker.holds == [3] and not s.held and s.finalized and s.merges == [] and sched.status().totals.unmerged == {"reader_running": 1}


def test_without_the_cost_model_every_mergeable_shuffle_is_held_at_submission_and_every_group_sent():
    s, tracker, _ = _scheduler_run(CostConfig(enabled=False), partitions=200, nbytes=1 << 20, outputs=0)
    assert tracker.holds == [3] and s.held and s.decisions == []
    s, _, _ = _scheduler_run(CostConfig(enabled=False), partitions=200, nbytes=1 << 20)
    assert s.decisions == [] and NOT_WORTH_IT not in fell_back(s)


@pytest.mark.parametrize("adaptive, expected", [
    ({}, (True, 64 << 20, 1 << 20, True)),  # the application's (here Spark's defaults)
    ({"spark.sql.adaptive.enabled": "false"}, (False, 64 << 20, 1 << 20, True)),
    ({"spark.sql.adaptive.coalescePartitions.enabled": "FALSE"}, (False, 64 << 20, 1 << 20, True)),
    ({"spark.sql.adaptive.advisoryPartitionSizeInBytes": "8MB", "spark.sql.adaptive.coalescePartitions.minPartitionSize": "512k",
      "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false"}, (True, 8 << 20, 512 << 10, False)),
    ({"spark.sql.adaptive.advisoryPartitionSizeInBytes": "lots"}, (True, 64 << 20, 1 << 20, True)),  # Spark would refuse it
])
def test_a_sql_exchange_is_priced_with_its_sessions_adaptive_settings(adaptive, expected):
    base = RiffleConfig.from_conf({}.get).cost
    c = cost.for_shuffle(base, True, adaptive)
    assert (c.coalesce, c.advisory_bytes, c.min_partition_bytes, c.parallelism_first) == expected
    assert not cost.for_shuffle(base, False, adaptive).coalesce


def test_riffle_storage_prints_confs_the_config_accepts(tmp_path, capsys):
    import json

    from riffle.cli import main

    assert main(["storage", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    conf = out["conf"] | {"spark.riffle.cost.enabled": "true"}
    parsed = RiffleConfig.from_conf(conf.get).cost
    assert parsed.enabled and parsed.storage.request_seconds >= StorageCost().request_seconds and parsed.storage.byte_seconds > 0


def test_a_group_is_priced_with_the_storage_of_the_node_that_holds_it():
    from riffle.storage_cost import NodeStorage

    conf = CostConfig(enabled=True)
    group, readers = [100_000] * 2, 200
    slow = cost.node_storage_cost(conf, NodeStorage(8e-3, 150 << 20, "flags"))
    fast = cost.node_storage_cost(conf, NodeStorage(1e-6, 1 << 40, "measured"))
    assert cost.decide(group, readers, slow).merge and not cost.decide(group, readers, fast).merge
    assert fast.request_seconds == conf.storage.request_seconds  # a fetch costs at least Spark's own per-block path
    assert slow.byte_seconds == 1 / (150 << 20) and (slow.merge_seconds, slow.input_seconds) == (conf.storage.merge_seconds,
                                                                                                  conf.storage.input_seconds)
    assert cost.node_storage_cost(conf, None) == conf.storage == cost.node_storage_cost(conf, NodeStorage())  # unknown: the conf's
    partly = cost.node_storage_cost(conf, NodeStorage(8e-3, None, "flags"))
    assert (partly.request_seconds, partly.byte_seconds) == (8e-3, conf.storage.byte_seconds)


def test_a_request_time_or_bandwidth_set_in_the_conf_wins_over_the_nodes():
    from riffle.storage_cost import NodeStorage

    node = NodeStorage(8e-3, 150 << 20, "flags")
    base = {"spark.riffle.cost.enabled": "true"}
    request_set = RiffleConfig.from_conf((base | {"spark.riffle.cost.requestTime": "0.035ms"}).get).cost
    priced = cost.node_storage_cost(request_set, node)
    assert (priced.request_seconds, priced.byte_seconds) == (pytest.approx(35e-6), 1 / (150 << 20))
    bandwidth_set = RiffleConfig.from_conf((base | {"spark.riffle.cost.bandwidth": "1g"}).get).cost
    priced = cost.node_storage_cost(bandwidth_set, node)
    assert (priced.request_seconds, priced.byte_seconds) == (8e-3, 1 / (1 << 30))


def test_a_merger_whose_storage_cannot_be_measured_reports_it_unknown_and_starts(tmp_path, caplog):
    from riffle.merger.storage import node_storage
    from riffle.storage_cost import NodeStorage

    gone = str(tmp_path / "gone")
    assert node_storage([gone], None, None) == NodeStorage()
    assert "node storage: unknown" in caplog.text and gone in caplog.text
    assert node_storage([gone], 8e-3, None) == NodeStorage(8e-3, None, "flags")
    assert node_storage([gone], 8e-3, 150 << 20) == NodeStorage(8e-3, 150 << 20, "flags")  # nothing to measure
    measured = node_storage([str(tmp_path)], 8e-3, None)
    assert measured.request_seconds == 8e-3 and measured.bytes_per_second and measured.source == "flags and measured"


def test_probe_stops_at_its_time_budget(tmp_path):
    import time

    started = time.monotonic()
    measured = cost.probe(tmp_path, requests=10**7, seconds=0.05)  # ten million requests would take a minute
    assert time.monotonic() - started < 5 and measured.request_seconds > 0 and list(tmp_path.iterdir()) == []


def test_a_probe_removes_the_files_of_probes_killed_mid_measurement(tmp_path):
    import os

    from riffle import storage_cost

    old, fresh, link = (tmp_path / f"{storage_cost.PROBE_PREFIX}{name}" for name in ("old", "fresh", "link"))
    old.write_bytes(b"x" * 4096)
    fresh.write_bytes(b"y")  # a probe measuring now, by another merger sharing the directory
    outside = tmp_path / "elsewhere"
    outside.write_text("keep")
    link.symlink_to(outside)
    stale = old.stat().st_mtime - storage_cost.STALE_PROBE_SECONDS - 60
    for path in (old, link):
        os.utime(path, (stale, stale), follow_symlinks=False)
    cost.probe(tmp_path, file_bytes=1 << 20, requests=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fresh.name, outside.name])
    assert outside.read_text() == "keep"


def test_a_merger_reporting_a_storage_bandwidth_of_0_is_priced_with_the_conf_and_warned_about_once(caplog):
    """Its Status said 0 bytes per second: the cost model divided by it at every shuffle (ZeroDivisionError, "scheduler step
    failed", every shuffle unmerged). Figures out of range are unknown now: the node is priced with the conf."""
    from concurrent.futures import ThreadPoolExecutor

    import grpc

    from riffle.v1 import merger_pb2 as pb
    from riffle.v1 import merger_pb2_grpc as pb_grpc

    class ZeroStorage(pb_grpc.MergerServicer):
        def Status(self, request, context):
            return pb.StatusResponse(load=float("nan"), storage_request_seconds=0.0, storage_bytes_per_second=0.0, storage_source="measured")

    server = grpc.server(ThreadPoolExecutor(2))
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    pb_grpc.add_MergerServicer_to_server(ZeroStorage(), server)
    server.start()
    try:
        with caplog.at_level("WARNING", logger="riffle.driver"):
            s, _, sched = _scheduler_run(CostConfig(enabled=True, storage=DISK, coalesce=False), partitions=2000, nbytes=100_000,
                                         sql=False, mergers=(address,))
            sched.step()
        assert sched.errors == 0 and s.decisions and s.held  # priced with the conf's DISK: worth merging
        warnings = [r.getMessage() for r in caplog.records if "storage" in r.getMessage()]  # (it merges nothing: Merge unimplemented)
        assert warnings == [f"Riffle: merger {address} reports storage figures out of range: time per request 0.0 (expected 1e-06..60); "
                            f"bytes per second 0.0 (expected 1024..1099511627776); merges on its node are priced with spark.riffle.cost.* "
                            "instead"], warnings
        sched.fleet.close()
    finally:
        server.stop(0)


def test_a_shuffle_declined_at_its_first_output_counts_every_map_tasks_blocks():
    """Declined at its first output, it was settled with that one output: its row showed 200 blocks where its reducers
    fetched 800 (4 map tasks x 200 partitions). Its map stage's tasks are counted, and the totals count them too."""
    from riffle import messages

    s, tracker, sched = _scheduler_run(CostConfig(enabled=True, storage=DISK, coalesce=True), partitions=200, nbytes=1 << 20, outputs=1)
    assert s.finalized and not s.held and len(s.outputs) == 1  # declined at its first output
    tracker.events = [messages.MapOutput(3, 5, 0, i, i, "1", "127.0.0.1", 1 << 20) for i in range(1, 4)]
    tracker.events.append(messages.MapStageDone(3, 5, True))
    sched.step()
    record = sched.settled[3]
    assert (record.held, record.maps, record.blocks_before, record.blocks_after) == (False, 4, 800, 800)
    totals = sched.status().totals
    assert (totals.blocks_unmerged, totals.blocks_merged) == (800, 800)
    sched.fleet.close()


def test_the_first_shuffle_not_worth_merging_is_said_once_with_why(caplog):
    """A first trial on one fast disk merged nothing and nothing said why: the first shuffle the cost model declines is
    one INFO line (in the driver JVM's log too) saying so and why; later ones are counted, not said again."""
    from riffle import messages

    with caplog.at_level("INFO", logger="riffle.driver"):
        s, tracker, sched = _scheduler_run(CostConfig(enabled=True, storage=DISK, coalesce=True), partitions=200, nbytes=1 << 20, outputs=1)
        tracker.events = [messages.MapStageSubmitted(4, 6, "q2", 0, 4, 200, True, True, {}, "", ""),
                          messages.MapOutput(4, 6, 0, 0, 9, "1", "127.0.0.1", 1 << 20)]
        sched.step()
    assert s.finalized and sched.shuffles[4].finalized and sched.status().totals.unmerged == {NOT_WORTH_IT: 2}
    said = [r.getMessage() for r in caplog.records if "said once" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("Riffle: shuffle 3 is not worth merging (at its first output): a group of "), said
    assert "reads cost less than merging on this storage" in said[0] and "summary at application end" in said[0]
    sched.fleet.close()


def test_an_executors_dirs_outside_a_mergers_served_dirs_are_found_whatever_is_merged():
    from riffle.driver.local_dirs import outside_roots

    assert outside_roots(["/tmp/spark/blockmgr-1", "/data/x/blockmgr-2", "/tmp/sparkle/b"], ["/tmp/spark/", "/srv"]) == [
        "/data/x/blockmgr-2", "/tmp/sparkle/b"]
    assert outside_roots(["/tmp/spark/a/../b"], ["/tmp/spark"]) == [] and outside_roots(["/a"], []) == ["/a"]


def test_a_nodes_storage_reads_naturally_whatever_its_request_time():
    """A 5 s request time was logged as ``5e+03 ms``."""
    from riffle.storage_cost import NodeStorage

    assert str(NodeStorage(5.0, 150 << 20, "flags")) == "5,000 ms a read request, 150 MiB/s (flags)"
    assert str(NodeStorage(8e-3, None, "measured")) == "8 ms a read request, ? (measured)"
    assert str(NodeStorage(1.234e-5, 1 << 30, "flags")).startswith("0.0123 ms a read request, 1,024 MiB/s")
