"""Merger defects found by attacking it, each against a real daemon on real files: races, crashes, hostile inputs, load.
In this process (``start_merger``) unless a crash, a signal, an rlimit or the process's peak memory is under test."""

import contextlib
import itertools
import os
import random
import shutil
import signal
import socket
import stat
import threading
import time
from pathlib import Path

import grpc
import pytest

from riffle.merger.faults import CRASH_ENV, FAIL_ENV, FAIL_STEPS, PAUSE_ENV, PUBLISH_STEPS
from riffle.merger.publish import TEMP_PREFIX
from riffle.protocol import pb
from riffle.shuffle.layout import (
    SYNTHETIC_MAP_ID_BASE,
    block_file_path,
    data_file_name,
    encode_index,
    id_beside_inputs,
    index_file_name,
    read_partition,
)
from srlab.riffle_bench.inputs import write_inputs
from srsupport.daemons import DaemonProcess
from tests.fixtures import all_files, make_outputs, write_map_output

M = SYNTHETIC_MAP_ID_BASE


def request(rid, sid, maps, dirs, parts, mid, app="app"):
    return pb.MergeRequest(request_id=rid, app_id=app, shuffle_id=sid, map_ids=maps, local_dirs=[str(d) for d in dirs],
                           num_partitions=parts, merged_map_id=mid)


def rpc_code(call) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()


@contextlib.asynccontextmanager
async def served(service):
    """A stub of ``service`` served in this event loop over real gRPC on loopback."""
    from riffle.protocol import pb_grpc

    server = grpc.aio.server()
    pb_grpc.add_MergerServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield pb_grpc.MergerStub(channel)
    finally:
        await server.stop(None)


def files_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


# -- 1. confinement by descriptor -------------------------------------------------------------------
def test_swapping_dirs_for_symlinks_during_merges_never_writes_outside(tmp_path, start_merger):
    root, outside = tmp_path / "local", tmp_path / "outside"
    executor = root / "blockmgr-a"
    executor.mkdir(parents=True)
    dirs = [str(executor)]
    parts = 20000  # big indexes: a path-checking daemon spends a while between its check and its first write
    make_outputs(dirs, 1, [0, 1, 2, 3], parts, sizes=(0, 0, 0, 0, 0, 17))
    outputs = [block_file_path(dirs, name(1, M + i)).parent for i in range(30) for name in (data_file_name, index_file_name)]
    for sub in outputs:
        sub.mkdir(exist_ok=True)
    shutil.copytree(root, outside)  # a mirror: a merge that followed a symlink would succeed there
    before = files_under(outside)
    # the executor dir and the sub dirs the outputs go to are swapped for symlinks to the mirror
    victims = [executor, *dict.fromkeys(outputs)]
    stop = threading.Event()
    swaps = [0]

    def swapper():
        rng = random.Random(7)
        while not stop.is_set():
            victim = rng.choice(victims)
            target = outside / victim.relative_to(root)
            moved = victim.with_name(victim.name + "-moved")
            try:
                os.rename(victim, moved)
            except OSError:
                continue
            try:
                os.symlink(target, victim)
                time.sleep(rng.random() * 0.05)
                os.unlink(victim)
            except OSError:
                pass
            for attempt in range(100):
                try:
                    os.rename(moved, victim)
                    break
                except OSError:  # something stands there again meanwhile: set that one aside (inside the root)
                    os.rename(victim, victim.with_name(f"{victim.name}-aside-{swaps[0]}-{attempt}"))
            swaps[0] += 1
            time.sleep(rng.random() * 0.005)

    with start_merger("--no-fsync", "--log-level", "WARNING", local_dirs=[root]) as d:
        thread = threading.Thread(target=swapper)
        thread.start()
        outcomes = []
        try:
            for i in range(30):
                try:
                    d.client.merge(f"race-{i}", 1, [0, 1, 2, 3], dirs, parts, M + i, app_id="app")
                    outcomes.append("OK")
                except grpc.RpcError as exc:
                    outcomes.append(exc.code().name)
                assert files_under(outside) == before, f"merge {i} wrote outside the roots"
        finally:
            stop.set()
            thread.join()
    assert swaps[0] > 10
    assert set(outcomes) <= {"OK", "PERMISSION_DENIED", "NOT_FOUND", "ALREADY_EXISTS"}, outcomes
    assert files_under(outside) == before


def test_fifo_socket_and_device_inputs_refused_without_blocking(root, dirs, start_merger):
    make_outputs(dirs, 2, [0], 3)
    hostile = {}
    for m, kind in ((1, "fifo"), (2, "socket"), (3, "device")):
        data = block_file_path(dirs, data_file_name(2, m))
        data.parent.mkdir(parents=True, exist_ok=True)
        index = block_file_path(dirs, index_file_name(2, m))
        index.parent.mkdir(parents=True, exist_ok=True)
        index.write_bytes(encode_index([1, 1, 1]))
        if kind == "fifo":
            os.mkfifo(data)
        elif kind == "socket":
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(str(data))
            hostile["sock"] = sock
        else:
            try:
                os.mknod(data, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero
            except PermissionError:
                continue
        hostile[m] = kind
    with start_merger("--grace", "1") as d:
        for m in [k for k in hostile if isinstance(k, int)]:
            t0 = time.monotonic()
            assert rpc_code(lambda: d.client.merge(f"h{m}", 2, [0, m], dirs, 3, M + m, app_id="app", timeout=10)) == \
                grpc.StatusCode.PERMISSION_DENIED
            assert time.monotonic() - t0 < 5
        # 32 FIFO merges at once neither freeze the daemon nor keep it from stopping
        futures = [d.client.stub.Merge.future(request(f"f{i}", 2, [0, 1], dirs, 3, M + 100 + i), metadata=d.client.metadata,
                                              timeout=30) for i in range(32)]
        assert all(f.exception(timeout=30).code() == grpc.StatusCode.PERMISSION_DENIED for f in futures)
        assert d.client.status().memory_in_use == 0
        t0 = time.monotonic()
        assert d.stop(timeout=20) == 0
        assert time.monotonic() - t0 < 1 + 5
    if "sock" in hostile:
        hostile["sock"].close()


# -- 2. publish exactly once ----------------------------------------------------------------------
def test_input_hardlinked_to_a_file_outside_the_roots_is_refused(root, dirs, tmp_path, start_merger):
    """A hard link is the one way to put a file from elsewhere (another user's, one the executor cannot read) under
    an executor's dir; the merger, often privileged, would copy it into a world-readable merged file."""
    secret = tmp_path / "secret"
    secret.write_bytes(b"top secret")
    make_outputs(dirs, 3, [0], 1)
    data, index = block_file_path(dirs, data_file_name(3, 1)), block_file_path(dirs, index_file_name(3, 1))
    for path in (data, index):
        path.parent.mkdir(parents=True, exist_ok=True)
    os.link(secret, data)
    index.write_bytes(encode_index([len(b"top secret")]))
    with start_merger() as d:
        assert rpc_code(lambda: d.client.merge("leak", 3, [0, 1], dirs, 1, M + 1, app_id="app")) == grpc.StatusCode.PERMISSION_DENIED
    assert not block_file_path(dirs, data_file_name(3, M + 1)).exists()


def test_the_merger_never_creates_a_spark_sub_dir_and_the_driver_names_merged_files_beside_their_inputs(tmp_path, start_merger):
    """Spark creates a block-manager sub dir on first use by checking and then creating it, unlocked against other
    processes: a merger that created one in between failed the executor's task (FileAlreadyExistsException)."""
    root = tmp_path / "local"
    dirs = [str(root / "blockmgr-a")]
    make_outputs(dirs, 3, [0, 1], 2)  # their files' sub dirs only, as a young executor's
    held = {block_file_path(dirs, name(3, m)).parent for m in (0, 1) for name in (data_file_name, index_file_name)}
    executor = Path(dirs[0])
    before = files_under(executor)
    elsewhere = next(M + i for i in range(10_000) if block_file_path(dirs, data_file_name(3, M + i)).parent not in held)
    beside = id_beside_inputs(3, [(0, True), (1, True)], 1, itertools.count(M))
    assert beside is not None and {block_file_path(dirs, name(3, beside)).parent for name in (data_file_name, index_file_name)} <= held
    with start_merger() as d:
        assert rpc_code(lambda: d.client.merge("away", 3, [0, 1], dirs, 2, elsewhere, app_id="app")) == grpc.StatusCode.NOT_FOUND
        assert files_under(executor) == before  # no sub dir made, the inputs untouched
        d.client.merge("beside", 3, [0, 1], dirs, 2, beside, app_id="app")
    assert block_file_path(dirs, data_file_name(3, beside)).exists() and {p.parent for p in executor.glob("*/*")} <= held


def test_concurrent_same_output_merges_publish_once(root, dirs, start_merger):
    write_inputs(dirs, 3, 8, 5000, 512)  # a few seconds of work each
    with start_merger("--no-fsync") as d:
        first = d.client.stub.Merge.future(request("one", 3, [0, 1, 2, 3], dirs, 5000, M + 1), metadata=d.client.metadata, timeout=120)
        second = d.client.stub.Merge.future(request("two", 3, [4, 5, 6, 7], dirs, 5000, M + 1), metadata=d.client.metadata, timeout=120)
        results = []
        for f in (first, second):
            err = f.exception(timeout=120)
            results.append(err.code() if err else f.result())
        winners = [r for r in results if isinstance(r, pb.MergeResponse)]
        assert len(winners) == 1 and grpc.StatusCode.ALREADY_EXISTS in results, results
        winner_maps = [0, 1, 2, 3] if results[0] is winners[0] else [4, 5, 6, 7]
        data, index = Path(winners[0].data_path), Path(winners[0].index_path)
        stamp = data.read_bytes()
        for p in (0, 4999):
            assert read_partition(data, index, 5000, p) == b"".join(
                read_partition(block_file_path(dirs, data_file_name(3, m)), block_file_path(dirs, index_file_name(3, m)), 5000, p)
                for m in winner_maps)
        # and afterwards, too: another request id for the same output is refused, the files stay
        assert rpc_code(lambda: d.client.merge("three", 3, [4, 5], dirs, 5000, M + 1, app_id="app")) == grpc.StatusCode.ALREADY_EXISTS
        assert data.read_bytes() == stamp


@pytest.mark.parametrize("step", PUBLISH_STEPS)
def test_crash_at_every_publish_step_leaves_nothing_or_a_complete_pair(root, dirs, step, start_merger):
    blocks = make_outputs(dirs, 7, [0, 1, 2], 30)
    data, index = block_file_path(dirs, data_file_name(7, M + 1)), block_file_path(dirs, index_file_name(7, M + 1))
    crashing = DaemonProcess([root], env={CRASH_ENV: step})
    with pytest.raises(grpc.RpcError):
        crashing.client.merge("c", 7, [0, 1, 2], dirs, 30, M + 1, app_id="app", timeout=30)
    assert crashing.proc.wait(30) == 86
    crashing.kill()
    with start_merger() as again:
        assert not [f for f in all_files(root) if TEMP_PREFIX in f]
        complete = PUBLISH_STEPS.index(step) >= PUBLISH_STEPS.index("index-linked")
        assert data.exists() == index.exists() == complete, (step, data.exists(), index.exists())
        if complete:
            for p in range(30):
                assert read_partition(data, index, 30, p) == b"".join(blocks[m][p] for m in (0, 1, 2))
            assert again.client.cleanup(dirs, "app", 7).files_deleted == 2  # the recovered pair is known as the app's
        resp = again.client.merge("retry", 7, [0, 1, 2], dirs, 30, M + 1, app_id="app")
        assert resp.bytes_written == sum(len(b) for m in (0, 1, 2) for b in blocks[m])


def test_recovery_undoes_an_index_whose_data_file_was_lost(root, dirs, start_merger):
    """After a power loss the index's link can survive without the data's: recovery must not keep half a pair."""
    make_outputs(dirs, 8, [0, 1], 20)
    data, index = block_file_path(dirs, data_file_name(8, M + 1)), block_file_path(dirs, index_file_name(8, M + 1))
    crashing = DaemonProcess([root], env={CRASH_ENV: "index-linked"})
    with pytest.raises(grpc.RpcError):
        crashing.client.merge("c", 8, [0, 1], dirs, 20, M + 1, app_id="app", timeout=30)
    assert crashing.proc.wait(30) == 86
    crashing.kill()
    data.unlink()
    with start_merger() as again:
        assert not index.exists() and not data.exists()
        assert again.client.merge("retry", 8, [0, 1], dirs, 20, M + 1, app_id="app").bytes_written > 0


# -- 3. bounded, control never starved ------------------------------------------------------------
def test_full_queue_refuses_at_once_and_control_answers_within_a_second(root, dirs, start_merger):
    slow = list(range(8))
    write_inputs(dirs, 8, 8, 20000, 512)
    make_outputs(dirs, 2, [0, 1], 10)
    with start_merger("--memory", "10m", "--read-buffer", "256k", "--write-buffer", "512k", "--max-queue", "8",
                      "--workers", "2", "--no-fsync") as d:
        meta = d.client.metadata
        running = [d.client.stub.Merge.future(request(f"r{i}", 8, slow, dirs, 20000, M + i), metadata=meta, timeout=300) for i in range(2)]
        deadline = time.monotonic() + 20  # both slots taken by the slow merges before the flood, whatever order gRPC serves in
        while d.client.status().running < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        flood = [d.client.stub.Merge.future(request(f"q{i}", 2, [0, 1], dirs, 10, M + 100 + i), metadata=meta, timeout=300)
                 for i in range(40)]
        deadline = time.monotonic() + 20  # two merges run (--workers 2), eight wait, the rest are refused at once
        while sum(f.done() for f in flood) < 40 - 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        refused = [f for f in flood if f.done()]
        assert len(refused) == 40 - 8 and d.client.status().queued == 8
        assert all(f.exception().code() == grpc.StatusCode.RESOURCE_EXHAUSTED for f in refused)
        worst = 0.0
        for _ in range(10):
            for call in (lambda: d.client.stub.Status(pb.StatusRequest(), timeout=1, metadata=meta),
                         lambda: d.client.stub.Cancel(pb.CancelRequest(request_id="nope"), timeout=1, metadata=meta),
                         lambda: d.client.healthy()):
                t0 = time.monotonic()
                assert call()
                worst = max(worst, time.monotonic() - t0)
        assert worst < 1.0
        status = d.client.status()
        assert status.merges_rejected == len(refused) and status.max_queue == 8
        waiting = [i for i, f in enumerate(flood) if not f.done()]
        assert d.client.cancel(f"q{waiting[0]}") is True
        assert flood[waiting[0]].exception(timeout=1).code() == grpc.StatusCode.CANCELLED
        for i in range(2):
            d.client.cancel(f"r{i}")
        assert all(f.exception(timeout=60).code() == grpc.StatusCode.CANCELLED for f in running)


def test_huge_partition_request_stays_within_memory_plus_64mb(root, dirs):
    parts = 1 << 20
    lengths = [0] * parts
    for p in range(0, parts, 997):
        lengths[p] = 64
    index_bytes = encode_index(lengths)
    for m in range(8):
        data, index = block_file_path(dirs, data_file_name(5, m)), block_file_path(dirs, index_file_name(5, m))
        for path in (data, index):
            path.parent.mkdir(parents=True, exist_ok=True)
        data.write_bytes(os.urandom(sum(lengths)))
        index.write_bytes(index_bytes)
    with DaemonProcess([root], "--memory", "64m", "--no-fsync") as d:
        resp = d.client.merge("huge", 5, list(range(8)), dirs, parts, M + 1, app_id="app", timeout=300)
        assert len(resp.partition_lengths) == parts and resp.bytes_written == 8 * sum(lengths)
        peak = d.peak_rss_mb()
        assert peak <= 64 + 64, f"peak RSS {peak:.1f} MB over --memory 64m + 64 MB"
        # a request whose reply alone cannot fit the budget is refused up front
        code = rpc_code(lambda: d.client.merge("too-big", 5, list(range(8)), dirs, 1 << 24, M + 2, app_id="app"))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED


def _nofile(limit):
    """A ``preexec_fn`` that starts the daemon under an open-file limit of ``limit``."""
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def test_fan_in_capped_by_open_file_limit(root, dirs):
    with DaemonProcess([root], preexec_fn=_nofile(400)) as d:
        cap = d.client.status().max_fan_in
        assert 0 < cap < 400 // 2
        code = rpc_code(lambda: d.client.merge("wide", 1, list(range(cap + 1)), dirs, 2, M + 1, app_id="app"))
        assert code == grpc.StatusCode.INVALID_ARGUMENT


def test_widest_allowed_merge_fits_the_open_file_limit(root, dirs):
    """At the fan-in cap, with every input in its own sub dir, the merge must not run out of descriptors."""
    with DaemonProcess([root], preexec_fn=_nofile(1024)) as d:
        cap = d.client.status().max_fan_in
        maps = list(range(cap))
        for m in maps:
            write_map_output(dirs, 4, m, [b"x" * (m % 7)], sub_dirs=4096)
        merged = id_beside_inputs(4, [(m, True) for m in maps], len(dirs), itertools.count(M), 4096)
        assert merged is not None
        resp = d.client.merge("widest", 4, maps, dirs, 1, merged, app_id="app", sub_dirs=4096, timeout=120)
        assert resp.bytes_written == sum(m % 7 for m in maps)


def test_sigterm_ends_within_grace_plus_five_seconds_during_merges(root, dirs):
    write_inputs(dirs, 8, 8, 20000, 1024)
    d = DaemonProcess([root], "--grace", "1", "--workers", "4")
    futures = [d.client.stub.Merge.future(request(f"s{i}", 8, list(range(8)), dirs, 20000, M + i), metadata=d.client.metadata,
                                          timeout=120) for i in range(12)]
    time.sleep(0.5)
    t0 = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    d.proc.wait(1 + 5 + 1)
    assert time.monotonic() - t0 < 1 + 5
    assert all(f.exception(timeout=10) is not None or f.result() for f in futures)
    d.kill()


# -- 4. cleanup scoped to its application ---------------------------------------------------------
def test_cleanup_deletes_only_the_apps_own_merged_files(root, dirs, start_merger):
    make_outputs(dirs, 1, [0, 1], 6)
    make_outputs(dirs, 2, [0, 1], 6)
    foreign = block_file_path(dirs, data_file_name(1, M + 99))  # looks merged, but this daemon did not write it
    foreign.parent.mkdir(parents=True, exist_ok=True)
    foreign.write_bytes(b"not ours")
    with start_merger() as d:
        a1 = d.client.merge("a1", 1, [0, 1], dirs, 6, M + 1, app_id="app-A")
        a2 = d.client.merge("a2", 2, [0, 1], dirs, 6, M + 2, app_id="app-A")
        b1 = d.client.merge("b1", 1, [0, 1], dirs, 6, M + 3, app_id="app-B")
        assert d.client.cleanup(dirs, "app-B", 2).files_deleted == 0
        assert d.client.cleanup(dirs, "app-B", all_shuffles=True).files_deleted == 2
        assert not Path(b1.data_path).exists() and Path(a1.data_path).exists()
        stub, meta = d.client.stub, d.client.metadata
        for bad in (pb.CleanupRequest(local_dirs=dirs, app_id="app-A"),  # neither shuffle_id nor all_shuffles
                    pb.CleanupRequest(local_dirs=dirs, shuffle_id=1),  # no app id
                    pb.CleanupRequest(local_dirs=dirs, app_id="app-A", shuffle_id=1, all_shuffles=True)):
            assert rpc_code(lambda: stub.Cleanup(bad, metadata=meta, timeout=10)) == grpc.StatusCode.INVALID_ARGUMENT
        assert Path(a1.data_path).exists() and Path(a2.data_path).exists()
        assert d.client.cleanup(dirs, "app-A", all_shuffles=True).files_deleted == 4
        assert foreign.read_bytes() == b"not ours"
        assert all(block_file_path(dirs, data_file_name(s, m)).exists() for s in (1, 2) for m in (0, 1))


def test_wide_request_index_windows_stay_within_memory_plus_64mb(root, dirs):
    """Every input's window of partition lengths is held at once: with lengths past Python's small-int cache
    (> 256 bytes), a list per input cost 5x what the daemon reserves. The data files are empty, so the merge
    fails (DATA_LOSS) right after the first window, once its memory peak is reached."""
    fan_in, parts = 1024, 8193  # two windows: the data length is checked only in the last
    index_bytes = encode_index([1000] * parts)
    for m in range(fan_in):
        data, index = block_file_path(dirs, data_file_name(6, m)), block_file_path(dirs, index_file_name(6, m))
        for path in (data, index):
            path.parent.mkdir(parents=True, exist_ok=True)
        data.write_bytes(b"")
        index.write_bytes(index_bytes)
    with DaemonProcess([root], "--memory", "160m", "--no-fsync") as d:
        code = rpc_code(lambda: d.client.merge("wide", 6, list(range(fan_in)), dirs, parts, M + 1, app_id="app", timeout=120))
        assert code == grpc.StatusCode.DATA_LOSS
        peak = d.peak_rss_mb()
        assert peak <= 160 + 64, f"peak RSS {peak:.1f} MB over --memory 160m + 64 MB"


def test_cleanups_beyond_the_pending_bound_are_refused_not_queued(roots, dirs):
    """A flood of Cleanup RPCs must not pile up without bound behind the two cleanup threads: past
    MAX_PENDING_CLEANUPS they get RESOURCE_EXHAUSTED at once, and the pending ones still complete."""
    import asyncio

    from riffle.merger.cleanup import MAX_PENDING_CLEANUPS
    from riffle.merger.config import Config
    from riffle.merger.journal import Journal
    from riffle.merger.service import MergerService

    service = MergerService(roots, Journal(roots, durable=False), Config(fsync=False))
    gate = threading.Event()
    for _ in range(2):  # both cleanup threads busy until the gate opens
        service.io_pool.submit(gate.wait, 30)

    async def flood() -> list:
        async with served(service) as stub:
            req = pb.CleanupRequest(local_dirs=dirs, app_id="app", all_shuffles=True)
            calls = [asyncio.ensure_future(stub.Cleanup(req, timeout=30)) for _ in range(MAX_PENDING_CLEANUPS + 5)]
            while service.cleaner.pending < MAX_PENDING_CLEANUPS or sum(c.done() for c in calls) < 5:
                await asyncio.sleep(0.01)
            gate.set()
            return await asyncio.gather(*calls, return_exceptions=True)

    try:
        results = asyncio.run(asyncio.wait_for(flood(), 60))
    finally:
        gate.set()
        service.io_pool.shutdown()
    refused = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
    assert len(refused) == 5 and all(r.code() == grpc.StatusCode.RESOURCE_EXHAUSTED for r in refused)
    assert sum(isinstance(r, pb.CleanupResponse) for r in results) == MAX_PENDING_CLEANUPS
    assert service.cleaner.pending == 0


# -- 5. every request field bounded ---------------------------------------------------------------
def test_every_request_field_is_bounded_and_errors_never_echo_it_whole(root, dirs, start_merger):
    make_outputs(dirs, 4, [0, 1], 3)
    long_component = f"{dirs[0]}/{'x' * 300}"
    deep = f"{dirs[0]}/" + "/".join(["y" * 200] * 30)  # over PATH_MAX
    outside = "/elsewhere/" + "/".join(["z" * 200] * 19)  # within PATH_MAX, outside the roots
    with start_merger() as d:
        cases = [
            ({"executor_id": "exec\n" * 90_000}, grpc.StatusCode.INVALID_ARGUMENT, "executor_id"),
            ({"request_id": "a\nb"}, grpc.StatusCode.INVALID_ARGUMENT, "request_id"),
            ({"app_id": "a" * 257}, grpc.StatusCode.INVALID_ARGUMENT, "app_id"),
            ({"local_dirs": [long_component]}, grpc.StatusCode.INVALID_ARGUMENT, "longer than"),
            ({"local_dirs": [deep]}, grpc.StatusCode.INVALID_ARGUMENT, "longer than"),
            ({"local_dirs": [outside]}, grpc.StatusCode.PERMISSION_DENIED, "outside"),
        ]
        for change, code, text in cases:
            args = {"request_id": "r", "app_id": "app", "shuffle_id": 4, "map_ids": [0, 1], "local_dirs": dirs,
                    "num_partitions": 3, "merged_map_id": M + 1, "executor_id": "1"}
            args.update(change)
            with pytest.raises(grpc.RpcError) as info:
                d.client.merge(**args)
            assert info.value.code() == code and text in info.value.details(), (change.keys(), info.value.details()[:300])
            assert len(info.value.details()) < 600, len(info.value.details())
        bad_cleanup = pb.CleanupRequest(local_dirs=dirs, app_id="a\x00" * 1000, all_shuffles=True)
        assert rpc_code(lambda: d.client.stub.Cleanup(bad_cleanup, metadata=d.client.metadata, timeout=10)) == \
            grpc.StatusCode.INVALID_ARGUMENT
        assert d.client.merge("ok", 4, [0, 1], dirs, 3, M + 1, app_id="app", executor_id="driver").bytes_written > 0
        log = d.log()
    assert "exec\\nexec\\nexec\\nexec" not in log and "x" * 300 not in log and "z" * 200 + "/" + "z" * 200 not in log
    assert len(log) < 20_000, len(log)


def test_index_offsets_at_the_int64_limits_are_data_loss(root, dirs, start_merger):
    """Offsets a difference of which overflows int64: DATA_LOSS (corrupt input), not INTERNAL with a traceback."""
    make_outputs(dirs, 5, [0], 2)
    for m, offsets in ((1, (0, (1 << 63) - 1, -(1 << 63))), (2, (0, (1 << 63) - 1, (1 << 63) - 1)), (3, (-(1 << 63), 0, 0))):
        data, index = block_file_path(dirs, data_file_name(5, m)), block_file_path(dirs, index_file_name(5, m))
        for path in (data, index):
            path.parent.mkdir(parents=True, exist_ok=True)
        data.write_bytes(b"0123456789")
        index.write_bytes(b"".join(o.to_bytes(8, "big", signed=True) for o in offsets))
    with start_merger() as d:
        for m in (1, 2, 3):
            with pytest.raises(grpc.RpcError) as info:
                d.client.merge(f"i{m}", 5, [0, m], dirs, 2, M + m, app_id="app")
            assert info.value.code() == grpc.StatusCode.DATA_LOSS, (m, info.value.details())
        assert "Traceback" not in d.log()


# -- 6. cancel and cleanup that hold --------------------------------------------------------------
def wait_for_log(d, text, timeout=30):
    deadline = time.monotonic() + timeout
    while text not in d.log():
        assert time.monotonic() < deadline, f"{text!r} never logged: {d.log()[-2000:]}"
        time.sleep(0.02)


def merged_pair(dirs, sid, mid):
    return block_file_path(dirs, data_file_name(sid, mid)), block_file_path(dirs, index_file_name(sid, mid))


def test_cancel_after_the_copy_loop_never_publishes_and_a_late_one_says_so(root, dirs, start_merger):
    """A Cancel that finds the merge means nothing is published; past the first link it is too late and says found=false."""
    make_outputs(dirs, 3, [0, 1], 6)
    before = all_files(root)
    with start_merger(env={PAUSE_ENV: "temps-written:3"}) as d:
        future = d.client.stub.Merge.future(request("c", 3, [0, 1], dirs, 6, M + 1), metadata=d.client.metadata, timeout=60)
        wait_for_log(d, "fault injected: pausing")  # the copy loop is over, nothing is published yet
        assert d.client.cancel("c") is True
        assert future.exception(timeout=30).code() == grpc.StatusCode.CANCELLED
        assert all_files(root) == before and not os.listdir(root / ".riffle-merger" / "pending")
        assert d.client.status().merges_cancelled == 1
    with start_merger(env={PAUSE_ENV: "index-linked:2"}) as d:
        future = d.client.stub.Merge.future(request("late", 3, [0, 1], dirs, 6, M + 2), metadata=d.client.metadata, timeout=60)
        wait_for_log(d, "fault injected: pausing")
        assert d.client.cancel("late") is False  # too late: it publishes, and says so
        assert future.result(timeout=30).bytes_written > 0
        assert all(p.exists() for p in merged_pair(dirs, 3, M + 2))


@pytest.mark.parametrize("step", ["temps-written", "index-linked"])
def test_cleanup_of_an_app_ends_its_running_merges_so_nothing_outlives_it(root, dirs, step, start_merger):
    """The driver's stop sends Cancel and Cleanup at once: whether the merge can still be cancelled (paused before
    publishing) or not (paused after its index is linked), Cleanup returns only once nothing of the app is left."""
    make_outputs(dirs, 3, [0, 1], 6)
    before = all_files(root)
    with start_merger(env={PAUSE_ENV: f"{step}:2"}) as d:
        future = d.client.stub.Merge.future(request("m", 3, [0, 1], dirs, 6, M + 1, app="app-A"), metadata=d.client.metadata,
                                            timeout=60)
        wait_for_log(d, "fault injected: pausing")
        cleaned = d.client.cleanup(dirs, "app-A", all_shuffles=True)
        assert all_files(root) == before, sorted(all_files(root) - before)
        assert cleaned.files_deleted == (2 if step == "index-linked" else 0)
        outcome = future.exception(timeout=30)
        assert (outcome is None) == (step == "index-linked")  # too late to cancel: it published, and Cleanup deleted it
        assert all_files(root) == before and not os.listdir(root / ".riffle-merger" / "pending")
        assert not os.listdir(root / ".riffle-merger" / "apps")


def test_cleanup_that_outwaits_a_merge_past_cancelling_returns_and_its_output_goes_when_it_ends(root, roots, dirs, monkeypatch,
                                                                                                   caplog):
    """A merge past cancelling (its index linked) that outlasts Cleanup's wait for it (20 s; 0.2 s here, against a
    1.5 s stall): Cleanup returns without it, and the pair it then publishes is deleted as soon as it ends."""
    import asyncio

    from riffle.merger import cleanup
    from riffle.merger.config import Config
    from riffle.merger.faults import Faults
    from riffle.merger.journal import Journal
    from riffle.merger.service import MergerService

    monkeypatch.setattr(cleanup, "CLEANUP_WAIT_SECONDS", 0.2)
    make_outputs(dirs, 3, [0, 1], 6)
    before = all_files(root)
    journal = Journal(roots, durable=False)
    service = MergerService(roots, journal, Config(fsync=False, faults=Faults(pause_at="index-linked", pause_seconds=1.5)))

    async def until(done, what: str) -> None:
        deadline = time.monotonic() + 30
        while not done():
            assert time.monotonic() < deadline, f"{what}: {caplog.text[-2000:]}"
            await asyncio.sleep(0.02)

    async def scenario() -> tuple:
        async with served(service) as stub:
            merge = asyncio.ensure_future(stub.Merge(request("m", 3, [0, 1], dirs, 6, M + 1, app="app-A"), timeout=30))
            await until(lambda: "fault injected: pausing" in caplog.text, "the merge never reached its index link")
            cleaned = await stub.Cleanup(pb.CleanupRequest(local_dirs=dirs, app_id="app-A", all_shuffles=True), timeout=30)
            outlasted = not merge.done()  # Cleanup stopped waiting while the merge still stalls
            reply = await merge
            await until(lambda: all_files(root) == before and not journal.apps(), "the orphaned merge's pair was never deleted")
            return cleaned, outlasted, reply

    try:
        with caplog.at_level("INFO", logger="riffle.merger"):
            cleaned, outlasted, reply = asyncio.run(asyncio.wait_for(scenario(), 60))
    finally:
        service.merge_pool.shutdown()
        service.io_pool.shutdown()
        journal.close()
    assert outlasted and cleaned.files_deleted == 0, caplog.text[-2000:]
    assert reply.bytes_written > 0  # too late to cancel: it published, then its pair was deleted
    assert "cleanup of app app-A: 1 merges did not end within" in caplog.text


# -- 7. a full disk at every step -----------------------------------------------------------------
@pytest.mark.parametrize("errno_name", ["ENOSPC", "EDQUOT"])
@pytest.mark.parametrize("step", FAIL_STEPS)
def test_disk_full_at_every_step_is_resource_exhausted_and_leaves_nothing(root, dirs, step, errno_name, start_merger):
    """Out of space (or quota) creating the output's sub dir, its temps, writing them, writing the journal record,
    or creating the app's record dir after the links: RESOURCE_EXHAUSTED, nothing published, nothing pending."""
    make_outputs(dirs, 3, [0, 1], 6)
    before = all_files(root)
    with start_merger(env={FAIL_ENV: f"{step}:{errno_name}"}) as d:
        with pytest.raises(grpc.RpcError) as info:
            d.client.merge("full", 3, [0, 1], dirs, 6, M + 1, app_id="app")
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, info.value.details()
        assert "disk full" in info.value.details() and "fault injected" in info.value.details()
        assert all_files(root) == before, sorted(all_files(root) - before)
        state = root / ".riffle-merger"
        assert not os.listdir(state / "pending") and not os.listdir(state / "apps")
        status = d.client.status()
        assert status.merges_failed == 1 and status.memory_in_use == 0
        assert d.client.cleanup(dirs, "app", all_shuffles=True).files_deleted == 0
        assert "Traceback" not in d.log()


# -- 8. memory of waiting requests ----------------------------------------------------------------
def test_waiting_requests_stay_within_memory_plus_64mb(root, dirs):
    """A request waiting for admission holds its decoded message and located paths (about 1 MB for one of 64 long
    local dirs): what waiting requests hold is bounded (--max-queue-memory, 32m), past it new ones are refused."""
    make_outputs(dirs, 1, [0, 1], 4)
    long_dirs = [str(root) + "/" + "/".join(f"d{j:03d}" + "x" * 200 for j in range(19)) + f"/{i}" for i in range(64)]
    with DaemonProcess([root], "--memory", "64m", "--workers", "1", "--grace", "1", env={PAUSE_ENV: "temps-written:60"}) as d:
        meta = d.client.metadata
        first = d.client.stub.Merge.future(request("first", 1, [0, 1], dirs, 4, M), metadata=meta, timeout=60)
        wait_for_log(d, "fault injected: pausing")  # the one worker is busy: everything after waits
        base = d.rss_mb()
        waiting = []
        for batch in range(30):  # ten at a time: the requests gRPC holds before the daemon sees them are not the daemon's
            waiting += [d.client.stub.Merge.future(request(f"w{i}", 1, [0, 1], long_dirs, 4, M + 1 + i), metadata=meta, timeout=60)
                        for i in range(batch * 10, batch * 10 + 10)]
            deadline = time.monotonic() + 30
            while (lambda st: st.queued + st.merges_rejected)(d.client.status()) < len(waiting):
                assert time.monotonic() < deadline, d.client.status()
                time.sleep(0.02)
        status = d.client.status()
        assert 0 < status.queued < 100 and status.merges_rejected == 300 - status.queued, status
        refused = [f for f in waiting if f.done()]
        assert all(f.exception().code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "--max-queue-memory" in f.exception().details()
                   for f in refused)
        peak = d.peak_rss_mb()
        assert peak <= 64 + 64, f"peak RSS {peak:.1f} MB (from {base:.1f}, now {d.rss_mb():.1f}, {status.queued} queued) over --memory 64m + 64 MB"
        for i in range(300):
            d.client.cancel(f"w{i}")
        first.cancel()


def test_a_burst_of_oversized_requests_is_refused_by_size_within_memory_plus_64mb(root):
    """gRPC holds what it has received before the daemon's admission sees it, so the request cap (512 KiB, above the
    largest request the daemon accepts, which still reaches it) is what one request can cost there. A hundred requests
    of 4 MiB at once, from a client that ignores the cap, are refused by size and the daemon stays within
    --memory 64m + 64 MB, a few MB over idle (with a 4 MiB cap it reached about 300 MB, and with gRPC's receive windows
    growing to megabytes 20 to 90 MB over idle)."""
    from riffle.merger.config import MAX_FAN_IN
    from riffle.merger.requests import MAX_ID, MAX_LOCAL_DIRS, MAX_PARTITIONS, MAX_PATH
    from riffle.protocol import MAX_REQUEST_BYTES, pb_grpc

    biggest = pb.MergeRequest(request_id="\U0001F600" * MAX_ID, app_id="\U0001F600" * MAX_ID, executor_id="x" * 128, shuffle_id=1,
                              map_ids=[M - 1 - i for i in range(MAX_FAN_IN)], local_dirs=["/" + "d" * (MAX_PATH - 1)] * MAX_LOCAL_DIRS,
                              num_partitions=MAX_PARTITIONS, merged_map_id=(1 << 63) - 1, sub_dirs_per_local_dir=1 << 16)
    assert biggest.ByteSize() <= MAX_REQUEST_BYTES
    oversized = pb.MergeRequest(request_id="big", app_id="app", shuffle_id=1, map_ids=[0, 1], local_dirs=[str(root)], num_partitions=4,
                                merged_map_id=M, executor_id="x" * ((4 << 20) - 4096))
    with DaemonProcess([root], "--memory", "64m") as d:
        code = rpc_code(lambda: d.client.stub.Merge(biggest, metadata=d.client.metadata, timeout=30))
        assert code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED)  # it reached the daemon's checks
        idle = d.rss_mb()
        with grpc.insecure_channel(d.address, options=[("grpc.max_send_message_length", 8 << 20)]) as channel:
            stub = pb_grpc.MergerStub(channel)
            burst = [stub.Merge.future(oversized, metadata=d.client.metadata, timeout=60) for _ in range(100)]
            errors = [f.exception() for f in burst]
        peak = d.peak_rss_mb()
        assert peak <= 64 + 64, f"peak RSS {peak:.1f} MB over --memory 64m + 64 MB"
        assert peak - idle <= 16, f"peak RSS {peak:.1f} MB from {idle:.1f} MB idle: more than a 64 KiB window read of each request"
        assert all(e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in e.details() for e in errors), errors[0]
