"""Riffle's driver side without Spark: merge policies, merger placement, configuration, the decisions
over a shuffle's merges, and the merger fleet against a real (closed) gRPC port."""

from __future__ import annotations

import random
import socket
import time

import pytest

from riffle import messages
from riffle.driver.config import RiffleConfig
from riffle.driver.cost import CostConfig
from riffle.driver.fleet import MergerFleet
from riffle.driver.gate import node_storage
from riffle.driver.merges import IllegalTransition, Merge, MergeState, ShuffleState, map_files_after, merge_group, settle_reason
from riffle.driver.observer import SchedulerObserver
from riffle.driver.placement import candidates, same_host, two_choices
from riffle.driver.policy import BlockSizePolicy, MapOutput, NWayPolicy, make_merge_policy
from riffle.driver.settled import settle
from sparkshim.conf import ConfigError
from srsupport.riffle_watch import forget_refusals, idle, mark_all_up, state_sizes, use_config, wait_idle, watching


def out(i, executor="1", nbytes=100):
    return MapOutput(0, i, 1000 + i, executor, "h", nbytes)


def test_nway_groups_per_executor_and_flushes_the_rest():
    p = NWayPolicy(3)
    groups = [g for i in range(8) for g in p.add(out(i, executor=str(i % 2)))]
    assert [[o.map_index for o in g] for g in groups] == [[0, 2, 4], [1, 3, 5]]
    assert sorted(o.map_index for o in p.leftover()) == [6, 7]
    p.add(out(8, executor="0"))
    assert [[o.map_index for o in g] for g in p.flush()] == [[6, 8]]  # executor 1's lone output stays unmerged
    with pytest.raises(ValueError):
        NWayPolicy(1)


def test_block_size_merges_at_the_target_average_and_skips_large_outputs():
    p = BlockSizePolicy(target_block_bytes=100, num_partitions=10)  # a group closes at 1000 bytes
    assert p.add(out(0, nbytes=5000)) == []  # already 500 bytes per block: left alone
    assert p.add(out(1, nbytes=400)) == [] and p.add(out(2, nbytes=400)) == []
    (group,) = p.add(out(3, nbytes=400))
    assert [o.map_index for o in group] == [1, 2, 3]
    assert [o.map_index for o in p.leftover()] == [0]
    assert isinstance(make_merge_policy("blocksize", 2, 1, 1), BlockSizePolicy)
    with pytest.raises(ValueError):
        make_merge_policy("random", 2, 1, 1)


def test_placement_prefers_the_less_loaded_of_two_and_needs_the_same_host():
    loads = {"a:1": 5.0, "b:1": 1.0, "c:1": 3.0}
    picks = {two_choices(list(loads), loads.__getitem__, random.Random(s)) for s in range(50)}
    assert "a:1" not in picks  # the most loaded one never wins a pair
    assert candidates(["127.0.0.1:7000", "10.9.9.9:7000"], "localhost") == ["127.0.0.1:7000"]
    assert same_host("10.0.0.5", "10.0.0.5") and not same_host("10.0.0.5", "10.0.0.6")
    with pytest.raises(ValueError):
        two_choices([], lambda m: 0.0, random.Random(0))


def test_merge_group_names_owner_members_and_lengths():
    m = Merge("r", 3, [out(4), out(2), out(9)], 1 << 62, "m:1", ["/d"])
    m.succeed([5, 0, 7])
    g = merge_group(m)
    assert (g.owner, g.merged_map_id, g.executor, g.map_indexes, g.map_ids, g.lengths) == (2, 1 << 62, "1", (4, 2, 9), (1004, 1002, 1009), (5, 0, 7))
    assert messages.decode(messages.encode(g)) == g


def test_config_parsing_and_errors(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    conf = {"spark.riffle.enabled": "true", "spark.riffle.mergers": "h1:7000, h2:7001", "spark.riffle.nway": "10",
            "spark.riffle.bestEffort": "0.9", "spark.riffle.holdTimeout": "500ms", "spark.riffle.targetBlockSize": "1m",
            "spark.riffle.authTokenFile": str(token), "spark.riffle.tlsCa": str(token)}
    c = RiffleConfig.from_conf(conf.get)
    assert (c.enabled, c.mergers, c.nway, c.best_effort, c.hold_timeout, c.target_block_bytes, c.token) == (
        True, ("h1:7000", "h2:7001"), 10, 0.9, 0.5, 1 << 20, "s3cret")
    assert "s3cret" not in repr(c)
    for key, value in [("mergers", "nohostport"), ("policy", "greedy"), ("nway", "1"), ("bestEffort", "1.5"),
                       ("targetBlockSize", "huge"), ("authTokenFile", str(tmp_path / "missing"))]:
        with pytest.raises(ConfigError, match=f"spark.riffle.{key}"):
            RiffleConfig.from_conf({f"spark.riffle.{key}": value}.get)


@pytest.mark.parametrize("address", ["h1:99999", "h1:0", "h1:\u00b2", "h1:\u0667\u0663\u0663\u0668", "h1:+7338", "h1:007338"])
def test_a_listed_mergers_port_is_ascii_digits_in_1_to_65535(address):
    """Only spark.riffle.mergerPort was range-checked: 99999, 0, a superscript or Arabic-Indic digits passed as a port."""
    with pytest.raises(ConfigError) as info:
        RiffleConfig.from_conf({"spark.riffle.mergers": f"h0:7338,{address}"}.get)
    assert str(info.value) == f"spark.riffle.mergers: {address!r}: port must be ASCII digits in 1..65535"
    assert RiffleConfig.from_conf({"spark.riffle.mergers": "h1:1,[::1]:65535"}.get).mergers == ("h1:1", "[::1]:65535")


class TrackerStandIn:
    """Stands in for the JVM tracker only here (its messages are the real schema's); the live tests use the shim."""

    def __init__(self):
        self.events: list = []
        self.lookups = 0
        self.released: list[int] = []
        self.holds: list[int] = []

    def applicationId(self):
        return "app-1"

    def drain(self):
        text, self.events = messages.encode(self.events), []
        return text

    def localDirs(self, executor):
        self.lookups += 1
        return [f"/local/{executor}/v{self.lookups}"]

    def publishStatus(self, text):
        self.published = messages.decode(text)

    def hold(self, shuffle):
        self.holds.append(shuffle)
        return True

    def configure(self, merging, hold_timeout, hold_all):
        self.configured = (merging, hold_timeout, hold_all)

    def release(self, shuffle):
        self.released.append(shuffle)


HOLD_ALL = RiffleConfig(enabled=True, cost=CostConfig(enabled=False))  # every mergeable shuffle held at its map stage's submission


def test_local_dirs_arrive_once_per_executor_and_are_forgotten_when_it_is_removed():
    from riffle.driver.scheduler import MergeScheduler

    tracker = TrackerStandIn()
    s = MergeScheduler(None, tracker, RiffleConfig(enabled=True))
    tracker.events = [messages.ExecutorDirs("7", ["/local/7/sent"])]
    s.step()
    assert s.local_dirs.of("7") == ["/local/7/sent"] and tracker.lookups == 0  # sent by the shim: no py4j call
    tracker.events = [messages.ExecutorRemoved("7")]
    s.step()
    assert s.local_dirs.of("7") == ["/local/7/v1"] and s.local_dirs.of("7") == ["/local/7/v1"]  # not sent: looked up once
    assert state_sizes(s)["local_dirs"] == 1
    s.fleet.close()


def test_observers_see_each_event_before_it_is_handled_and_each_settled_shuffle():
    from riffle.driver.scheduler import MergeScheduler

    tracker = TrackerStandIn()
    s = MergeScheduler(None, tracker, HOLD_ALL)
    seen: list = []

    class Watch(SchedulerObserver):
        def on_event(self, event):
            seen.append((type(event).__name__, event.shuffle in s.shuffles))

        def on_settled(self, shuffle):
            seen.append(("settled", shuffle.shuffle_id, list(tracker.released)))

    assert wait_idle(s, 0.0)  # nothing held
    with watching(s, Watch()):
        tracker.events = [messages.MapStageSubmitted(4, 9, "stage", 0, 2, 3, True, False, {}, "", "")]
        s.step()
        assert not idle(s) and not wait_idle(s, 0.05)  # held, not settled: the deadline passes
        tracker.events = [messages.HoldExpired(4)]
        s.step()
    assert seen == [("MapStageSubmitted", False), ("HoldExpired", True), ("settled", 4, [4])]
    assert idle(s) and wait_idle(s, 0.0) and not s.observers
    s.fleet.close()


def test_the_tab_keeps_the_latest_settled_shuffles_after_spark_cleans_them_and_counts_every_one():
    """Every shuffle seen is counted in one state; the rows keep the latest MAX_SETTLED_SHUFFLES settled ones, each with
    its outcome and why, after Spark cleaned them up (marked cleaned), and every merging one; the ones never held are
    counted in one summary per cause, not listed."""
    from riffle.driver.scheduler import MAX_SETTLED_SHUFFLES, MergeScheduler

    tracker = TrackerStandIn()
    s = MergeScheduler(None, tracker, HOLD_ALL)
    n = MAX_SETTLED_SHUFFLES * 3 // 2 + 60  # more held than listed
    for sid in range(n):  # every third never held (unsafe), the others held until the hold expires; all cleaned up
        held = sid % 3 != 0
        tracker.events.append(messages.MapStageSubmitted(sid, sid, f"stage {sid}", 0, 2, 3, held, False, {}, "" if held else "unsafe",
                                                         "" if held else "unsafe to merge: serializer X"))
        tracker.events += [messages.HoldExpired(sid)] if held else []
        tracker.events.append(messages.ShuffleCleaned(sid))
    tracker.events += [messages.MapStageSubmitted(n, n, "held", 0, 2, 3, True, False, {}, "", ""),
                       messages.MapStageSubmitted(n + 1, n + 1, "gone", 0, 2, 3, True, False, {}, "", ""),
                       messages.ShuffleCleaned(n + 1)]  # still merging; cleaned up before it settled
    s.step()
    model = tracker.published
    held_ids = [sid for sid in range(n) if sid % 3 != 0]
    assert [r.shuffle for r in model.shuffles] == [*held_ids[-MAX_SETTLED_SHUFFLES + 1:], n, n + 1]  # in the order seen
    assert all(r.cleaned and r.reason for r in model.shuffles if r.shuffle != n), model.shuffles
    held, gone = model.shuffles[-2], model.shuffles[-1]
    assert (held.state, held.cleaned, gone.state, gone.reason) == ("merging", False, "settled", "Spark cleaned the shuffle up before it settled")
    unsafe = len(range(0, n, 3))
    last = range(0, n, 3)[-1]
    assert model.unmerged == (messages.RiffleUnmerged("unsafe", unsafe, tuple(range(0, n, 3))[-messages.MAX_UNMERGED_LATEST:], last,
                                                      f"stage {last}", "unsafe to merge: serializer X"),)
    t = model.totals
    assert (t.shuffles, t.merging, t.settled, t.merged, t.unmerged) == (n + 2, 1, n + 1 - unsafe, 0, {"unsafe": unsafe})
    assert t.shuffles == t.merging + t.settled + sum(t.unmerged.values())
    assert state_sizes(s)["rows"] == MAX_SETTLED_SHUFFLES + 1 and state_sizes(s)["shuffles"] <= MAX_SETTLED_SHUFFLES + 1
    s.fleet.close()


def test_settle_reason_waits_for_the_map_stage_then_all_best_effort_or_timeout():
    assert settle_reason(None, [], 0.0, 0.95, 30.0) is None  # map stage still running
    assert settle_reason(10.0, [], 10.0, 0.95, 30.0) == "all merges finished"  # nothing was merged: release at once
    done, failed, cancelled, running = MergeState.DONE, MergeState.FAILED, MergeState.CANCELLED, MergeState.RUNNING
    assert settle_reason(10.0, [done, failed, cancelled], 10.0, 0.95, 30.0) == "all merges finished"
    assert settle_reason(10.0, [done, running], 11.0, 0.95, 30.0) is None
    assert settle_reason(10.0, [done, done, running], 11.0, 0.5, 30.0) == "best effort: 2/3 merges finished"
    assert settle_reason(10.0, [failed, running], 40.0, 0.5, 30.0) == "timeout after 30 s: 0/2 merges finished"


def test_a_merge_leaves_running_once():
    m = Merge("a", 5, [out(0), out(1)], 1, "m:1", ["/d"])
    m.fail("UNAVAILABLE: down", "merger_down")
    assert (m.state, m.error, m.cause) == (MergeState.FAILED, "UNAVAILABLE: down", "merger_down") and m.state == "failed"
    with pytest.raises(IllegalTransition, match="failed -> cancelled"):
        m.cancel("best_effort")


def test_the_settled_record_counts_files_and_blocks_after_the_commit():
    s = ShuffleState(5, 7, 8, 10, True, None, outputs={i: out(i) for i in range(8)}, map_done_at=100.0, map_bytes=800)
    s.merges = [Merge("a", 5, [out(0), out(1), out(2)], 1, "m:1", ["/d"]), Merge("b", 5, [out(3), out(4), out(5)], 2, "m:1", ["/d"]),
                Merge("c", 5, [out(6), out(7)], 3, "m:1", ["/d"])]
    for m in s.merges[:2]:
        m.succeed([])
    s.merges[2].cancel("best_effort")
    s.committed = 2
    assert map_files_after(s) == 8 - 6 + 2
    r = settle(s, "why", 101.5, "nway 3")
    assert (r.blocks_before, r.blocks_after, r.merges_requested, r.merges_committed, r.merges_cancelled, r.merges_failed,
            r.hold_seconds, r.bytes, r.map_files_after, r.policy, r.reason) == (80, 40, 3, 2, 1, 0, 1.5, 800, 4, "nway 3", "why")
    s.committed = 1  # the shim skipped one group: members are averaged
    assert map_files_after(s) == 8 - 3 + 1


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_fleet_marks_an_unreachable_merger_down_and_stops_choosing_it():
    address = closed_port()
    fleet = MergerFleet(RiffleConfig(enabled=True, mergers=(address, "10.9.9.9:7000"), rpc_timeout=5.0), "app-1")
    try:
        assert fleet.choose("localhost") == address  # the only merger on that host; no status RPC needed
        m = Merge("r1", 3, [out(0), out(1)], 1 << 62, address, ["/d"])
        fleet.send(m, 4)
        assert fleet.merged_where == {3: {(address, ("/d",))}}
        deadline = time.monotonic() + 10
        while m.state is MergeState.RUNNING and time.monotonic() < deadline:
            time.sleep(0.01)
            fleet.poll(m)
        assert m.state is MergeState.FAILED and m.error.startswith("UNAVAILABLE"), m.error
        assert fleet.choose("localhost") is None  # down for a while
        mark_all_up(fleet)
        assert fleet.reachable("localhost") == [address]
        fleet.cleanup(3)  # fails on the closed port: a warning, not an error
        assert fleet.merged_where == {}
    finally:
        fleet.close()


def test_the_scheduler_reads_the_fleets_config():
    from riffle.driver.scheduler import MergeScheduler

    s = MergeScheduler(None, TrackerStandIn(), RiffleConfig(enabled=True))
    assert s.fleet.reachable("h1") == ["h1:7338"]  # no mergers listed: one per executor host
    use_config(s, RiffleConfig(enabled=True, merger_port=9000))
    assert s.fleet.config is s.config and s.fleet.reachable("h1") == ["h1:9000"]
    s.fleet.close()


def test_outputs_without_data_are_never_grouped():
    from riffle.driver.policy import MapOutput, has_data

    empty, unknown, full = (MapOutput(0, i, i, "e1", "h", b) for i, b in enumerate((0, -1, 10)))
    assert [has_data(o) for o in (empty, unknown, full)] == [False, True, True]


def test_a_token_without_tls_for_listed_remote_mergers_is_refused_at_parse_time(monkeypatch, tmp_path):
    monkeypatch.delenv("RIFFLE_INSECURE", raising=False)
    remote = {"spark.riffle.mergers": "127.0.0.1:7000,10.0.0.5:7338", "spark.riffle.authToken": "t"}
    with pytest.raises(ConfigError, match=r"spark.riffle.authToken without spark.riffle.tlsCa .* to 10.0.0.5:7338: set spark.riffle.tlsCa"):
        RiffleConfig.from_conf(remote.get)
    token = tmp_path / "token"
    token.write_text("t")
    with pytest.raises(ConfigError, match="spark.riffle.authTokenFile without spark.riffle.tlsCa"):
        RiffleConfig.from_conf({"spark.riffle.mergers": "10.0.0.5:7338", "spark.riffle.authTokenFile": str(token)}.get)
    assert RiffleConfig.from_conf((remote | {"spark.riffle.tlsCa": str(token)}).get).tls_ca == str(token)
    assert RiffleConfig.from_conf((remote | {"spark.riffle.mergers": "localhost:7000"}).get).token == "t"
    assert RiffleConfig.from_conf({"spark.riffle.authToken": "t"}.get).token == "t"  # mergers found per executor host: checked when used
    monkeypatch.setenv("RIFFLE_INSECURE", "1")  # the client's own opt-out applies alike
    assert RiffleConfig.from_conf(remote.get).mergers == ("127.0.0.1:7000", "10.0.0.5:7338")


def test_a_merger_the_client_refuses_is_one_warning_and_no_cleanup(monkeypatch, caplog):
    """A token, no CA and a merger off loopback (known only once an executor host is): the client refuses
    at creation; that merger counts as refusing (one WARN), the scheduler's step goes on, cleanup skips it."""
    from riffle.driver.scheduler import MergeScheduler

    monkeypatch.delenv("RIFFLE_INSECURE", raising=False)
    s = MergeScheduler(None, TrackerStandIn(), RiffleConfig(enabled=True, token="t", merger_port=7338))
    fleet = s.fleet
    remote = "10.9.9.9:7338"
    try:
        with caplog.at_level("DEBUG", logger="riffle.driver"):
            for i in range(3):
                m = Merge(f"r{i}", 3 + i, [out(0), out(1)], 1 << 62, remote, ["/d"])
                fleet.send(m, 4)  # does not raise
                assert m.state is MergeState.FAILED and "cleartext" in m.error
            assert node_storage(fleet, "10.9.9.9") == fleet.config.cost.storage  # nor does its Status call: the conf's storage
            fleet.merged_where = {3: {(remote, ("/d",))}}
            fleet.cleanup_all()
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert len(warnings) == 1 and remote in warnings[0] and "cleartext" in warnings[0], warnings
        assert fleet.merged_where == {} and remote in fleet.refused
        use_config(s, RiffleConfig(enabled=True, token="t", tls_ca="/ca.pem"))  # a new CA: the refusal is forgotten
        assert fleet.refused == {}
    finally:
        fleet.close()


def test_cleanup_on_a_merger_that_went_down_is_one_warning(caplog):
    address = closed_port()
    fleet = MergerFleet(RiffleConfig(enabled=True, mergers=(address,), rpc_timeout=5.0), "app-1")
    try:
        fleet.merged_where = {sid: {(address, ("/d",))} for sid in range(8)}
        with caplog.at_level("WARNING", logger="riffle.driver"):
            fleet.cleanup_all()
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert len(warnings) == 1 and "UNAVAILABLE" in warnings[0] and address in warnings[0], warnings
        assert fleet.merged_where == {}
    finally:
        fleet.close()


def test_mergers_refusing_for_one_reason_are_one_warning(caplog):
    """A token rotated on every merger: each refuses with the same cause, and the driver says so once."""
    fleet = MergerFleet(RiffleConfig(enabled=True, mergers=("127.0.0.2:7000", "127.0.0.3:7000")), "app-1")
    try:
        with caplog.at_level("WARNING", logger="riffle.driver"):
            for address in ("127.0.0.2:7000", "127.0.0.3:7000"):
                fleet.refuse(address, "UNAUTHENTICATED: missing or wrong bearer token")
            fleet.refuse("127.0.0.3:7000", "UNIMPLEMENTED: unknown method")
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert len(warnings) == 2 and "UNAUTHENTICATED" in warnings[0] and "UNIMPLEMENTED" in warnings[1], warnings
        assert set(fleet.refused) == {"127.0.0.2:7000", "127.0.0.3:7000"}
        forget_refusals(fleet)
        assert fleet.refused == {}
    finally:
        fleet.close()


def test_a_merger_hung_in_status_delays_no_decision():
    """A real gRPC merger whose Status blocks until the test lets it go: the scheduler's thread never waits for it. A
    shuffle priced with that merger's storage waits for no answer (the cost model cannot decide: nothing is merged on a
    guess), and another decision (a failed map stage releases its reducers) is made while the call is still in flight:
    before its deadline, so the merger is not even marked down yet."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import grpc

    from riffle.driver.scheduler import MergeScheduler
    from riffle.v1 import merger_pb2 as pb
    from riffle.v1 import merger_pb2_grpc as pb_grpc

    entered, release = threading.Event(), threading.Event()

    class HungMerger(pb_grpc.MergerServicer):
        def Status(self, request, context):
            entered.set()
            release.wait(60)
            return pb.StatusResponse(load=0.0)

    class Tracker(TrackerStandIn):
        def __init__(self):
            super().__init__()
            self.lock = threading.Lock()

        def drain(self):
            with self.lock:
                return super().drain()

        def send(self, *events):
            with self.lock:
                self.events += events

    class Settled(SchedulerObserver):
        def __init__(self):
            self.seen: list[tuple[int, bool, str]] = []
            self.event = threading.Event()

        def on_settled(self, shuffle):
            self.seen.append((shuffle.shuffle_id, release.is_set(), s.fleet.health(address)))
            self.event.set()

    server = grpc.server(ThreadPoolExecutor(2))
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    pb_grpc.add_MergerServicer_to_server(HungMerger(), server)
    server.start()
    tracker = Tracker()
    s = MergeScheduler(None, tracker, RiffleConfig(enabled=True, mergers=(address,), rpc_timeout=3600.0))
    settled = Settled()
    try:
        with watching(s, settled):
            tracker.send(messages.MapStageSubmitted(1, 5, "priced by the hung merger", 0, 4, 200, True, False, {}, "", ""))
            s.start()
            assert entered.wait(30), "the scheduler never asked the merger's status"
            tracker.send(messages.MapOutput(1, 5, 0, 0, 0, "1", "127.0.0.1", 1 << 20),
                         messages.MapStageSubmitted(2, 6, "released", 0, 4, 200, True, False, {}, "", ""),
                         messages.MapStageDone(2, 6, False))
            assert settled.event.wait(30), "no decision while the merger hangs in Status"
            assert settled.seen == [(2, False, "up")]  # decided while the Status call was in flight, short of its deadline
            assert tracker.released == [2] and tracker.holds == []
            shuffle = s.shuffles[1]
            assert not shuffle.held and not shuffle.finalized and shuffle.merges == []  # undecided: nothing merged on a guess
    finally:
        release.set()
        s.stop(cleanup=False)
        server.stop(0)


def test_a_group_waits_for_its_mergers_status_answers_and_goes_where_it_went_before():
    """Two mergers on the outputs' host, one down: the group is parked (no Status call on the scheduler's thread) until
    both answered, then placed as the blocking calls placed it: on the one that is up."""
    from concurrent.futures import ThreadPoolExecutor

    import grpc

    from riffle.driver.scheduler import MergeScheduler
    from riffle.v1 import merger_pb2 as pb
    from riffle.v1 import merger_pb2_grpc as pb_grpc

    class UpMerger(pb_grpc.MergerServicer):
        def Status(self, request, context):
            return pb.StatusResponse(load=0.0)

        def Merge(self, request, context):
            return pb.MergeResponse(partition_lengths=[1, 2, 3])

    server = grpc.server(ThreadPoolExecutor(2))
    up = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    pb_grpc.add_MergerServicer_to_server(UpMerger(), server)
    server.start()
    down = closed_port()
    tracker = TrackerStandIn()
    s = MergeScheduler(None, tracker, RiffleConfig(enabled=True, mergers=(down, up), nway=2, cost=CostConfig(enabled=False)))
    try:
        tracker.events = [messages.MapStageSubmitted(1, 5, "two mergers", 0, 2, 3, True, False, {}, "", "")]
        tracker.events += [messages.MapOutput(1, 5, 0, i, i, "1", "127.0.0.1", 100) for i in range(2)]
        s.step()
        shuffle = s.shuffles[1]
        assert shuffle.held and (shuffle.merges, len(shuffle.parked)) == ([], 1)  # both answers awaited
        deadline = time.monotonic() + 30
        while not shuffle.merges and time.monotonic() < deadline:
            time.sleep(0.01)
            s.step()
        assert [m.merger for m in shuffle.merges] == [up] and shuffle.parked == [] and not shuffle.unsent
        assert s.fleet.health(down) == "down"
    finally:
        s.fleet.close()
        server.stop(0)
