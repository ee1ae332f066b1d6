"""The merger daemon on loopback gRPC: errors, auth, limits and TLS in this process (``start_merger``); crash,
shutdown and a file-size limit as a real process (``DaemonProcess``)."""

import resource
import shutil
import signal
import subprocess
import time
from pathlib import Path

import grpc
import pytest

from riffle.merger.publish import TEMP_PREFIX
from riffle.shuffle.layout import (
    SYNTHETIC_MAP_ID_BASE,
    block_file_path,
    data_file_name,
    encode_index,
    index_file_name,
    read_partition,
)
from srlab.riffle_bench.inputs import write_inputs
from srsupport.daemons import DaemonProcess
from tests.fixtures import all_files, make_outputs

M = SYNTHETIC_MAP_ID_BASE


def temps(root: Path) -> list[str]:
    return [f for f in all_files(root) if TEMP_PREFIX in f]


def rpc_error(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


@pytest.fixture
def daemon(start_merger):
    """A merger that wants a token and logs everything."""
    return start_merger("--log-level", "DEBUG", token="t0ken")


def test_merge_and_status_and_cleanup(daemon, dirs, root):
    blocks = make_outputs(dirs, 4, [3, 1, 2], 25)
    resp = daemon.client.merge("a", 4, [3, 1, 2], dirs, 25, M + 1, app_id="app", executor_id="1")
    for p in range(25):
        assert read_partition(Path(resp.data_path), Path(resp.index_path), 25, p) == b"".join(blocks[m][p] for m in (3, 1, 2))
    status = daemon.client.status()
    assert status.merges_completed == 1 and status.bytes_merged == resp.bytes_written and status.running == 0
    originals = {str(block_file_path(dirs, data_file_name(4, m))) for m in (3, 1, 2)}
    cleaned = daemon.client.cleanup(dirs, "app", 4)
    assert cleaned.files_deleted == 2 and not Path(resp.data_path).exists()
    assert all(Path(p).exists() for p in originals)
    assert '"level": "INFO"' in daemon.log() and "merged 3 outputs" in daemon.log()


@pytest.mark.parametrize("change,code,text", [
    ({"map_ids": [-1]}, "INVALID_ARGUMENT", "map_ids"),
    ({"map_ids": [1, 1]}, "INVALID_ARGUMENT", "duplicates"),
    ({"merged_map_id": 5}, "INVALID_ARGUMENT", "merged_map_id"),
    ({"num_partitions": 0}, "INVALID_ARGUMENT", "num_partitions"),
    ({"shuffle_id": -3}, "INVALID_ARGUMENT", "shuffle_id"),
    ({"local_dirs": ["/etc"]}, "PERMISSION_DENIED", "outside"),
    ({"local_dirs": ["blockmgr-a"]}, "PERMISSION_DENIED", "not absolute"),
    ({"map_ids": [1, 99]}, "NOT_FOUND", "shuffle_4_99_0.index"),
    ({"num_partitions": 24}, "DATA_LOSS", "corrupt map output"),
])
def test_bad_requests_get_precise_errors_and_write_nothing(daemon, dirs, root, change, code, text):
    make_outputs(dirs, 4, [1, 2], 25)
    before = all_files(root)
    args = {"request_id": "x", "app_id": "app", "shuffle_id": 4, "map_ids": [1, 2], "local_dirs": dirs, "num_partitions": 25, "merged_map_id": M + 2}
    args.update(change)
    err = rpc_error(lambda: daemon.client.merge(**args))
    assert err.code().name == code and text in err.details()
    assert {f for f in all_files(root) if not f.startswith(".merger-")} == {f for f in before if not f.startswith(".merger-")}


def test_token_required_but_health_open(daemon, dirs):
    from riffle.merger.client import MergerClient

    with MergerClient(daemon.address) as anonymous, MergerClient(daemon.address, token="wrong") as wrong:
        assert anonymous.healthy()
        for client in (anonymous, wrong):
            assert rpc_error(client.status).code() == grpc.StatusCode.UNAUTHENTICATED


def test_binds_loopback_by_default(root):
    from riffle.merger.cli import build_parser

    assert build_parser().parse_args(["serve", "--local-dir", str(root)]).listen.startswith("127.0.0.1:")


def _limit_file_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))


def test_disk_full_reports_cause_and_leaves_nothing(root, dirs):
    make_outputs(dirs, 6, [0, 1, 2, 3], 40)  # well over the 256 KiB the daemon may write
    before = {f for f in all_files(root) if not f.startswith(".merger-")}
    with DaemonProcess([root], preexec_fn=_limit_file_size) as d:
        err = rpc_error(lambda: d.client.merge("big", 6, [0, 1, 2, 3], dirs, 40, M + 3, app_id="app"))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "disk full" in err.details()
        assert d.client.status().merges_failed == 1
    assert {f for f in all_files(root) if not f.startswith(".merger-")} == before


def slow_inputs(dirs, sid=8, maps=40):
    write_inputs(dirs, sid, maps, 20000, 1024)  # 800k small blocks: seconds of work
    return list(range(maps))


def wait_for_temp(root, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if temps(root):
            return
        time.sleep(0.005)
    raise AssertionError("merge never started writing")


def test_cancel_running_merge(daemon, root, dirs):
    maps = slow_inputs(dirs)
    from riffle.protocol import pb

    request = pb.MergeRequest(app_id="app", request_id="slow", shuffle_id=8, map_ids=maps, local_dirs=dirs, num_partitions=20000,
                              merged_map_id=M + 4)
    future = daemon.client.stub.Merge.future(request, metadata=daemon.client.metadata, timeout=120)
    wait_for_temp(root)
    assert daemon.client.cancel("slow") is True
    err = future.exception(timeout=60)
    assert err.code() == grpc.StatusCode.CANCELLED
    assert temps(root) == []
    assert daemon.client.status().merges_cancelled == 1
    assert daemon.client.cancel("unknown") is False


def test_overloaded_queue_is_refused_clearly(root, dirs, start_merger):
    from riffle.protocol import pb

    make_outputs(dirs, 2, [0, 1], 10)
    slow = slow_inputs(dirs, sid=9, maps=4)
    d = start_merger("--memory", "2m", "--read-buffer", "128k", "--write-buffer", "256k", "--max-queue", "1")
    req = lambda rid, sid, maps, mid, parts: pb.MergeRequest(  # noqa: E731
        app_id="app", request_id=rid, shuffle_id=sid, map_ids=maps, local_dirs=dirs, num_partitions=parts, merged_map_id=mid)
    running = d.client.stub.Merge.future(req("r", 9, slow, M + 10, 20000), metadata=d.client.metadata, timeout=120)
    wait_for_temp(root)
    waiting = d.client.stub.Merge.future(req("w", 2, [0, 1], M + 11, 10), metadata=d.client.metadata, timeout=120)
    deadline = time.monotonic() + 10
    while d.client.status().queued < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    err = rpc_error(lambda: d.client.stub.Merge(req("x", 2, [0, 1], M + 12, 10), metadata=d.client.metadata, timeout=30))
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "overloaded" in err.details()
    assert running.result(timeout=120).bytes_written > 0
    assert waiting.result(timeout=60).bytes_written > 0
    status = d.client.status()
    assert status.merges_rejected == 1 and status.requests_queued_total >= 1


def test_crash_mid_merge_then_restart_cleans_up(root, dirs, start_merger):
    maps = slow_inputs(dirs)
    d = DaemonProcess([root])
    from riffle.protocol import pb

    # keep the future referenced: a collected future cancels its RPC
    in_flight = d.client.stub.Merge.future(pb.MergeRequest(app_id="app", request_id="c", shuffle_id=8, map_ids=maps, local_dirs=dirs,
                                                           num_partitions=20000, merged_map_id=M + 5), timeout=120)
    wait_for_temp(root)
    d.kill()
    assert in_flight.exception(timeout=30) is not None
    assert temps(root), "the crash should have left a partial temp file behind"
    assert not block_file_path(dirs, data_file_name(8, M + 5)).exists()
    again = start_merger()
    assert temps(root) == []
    assert "removed 1 temp files" in again.log() or "removed 2 temp files" in again.log()
    resp = again.client.merge("again", 8, maps[:2], dirs, 20000, M + 5, app_id="app")
    assert resp.bytes_written == 2 * 20000 * 1024


def test_graceful_shutdown_never_leaves_temp_files(root, dirs):
    maps = slow_inputs(dirs)
    from riffle.protocol import pb

    d = DaemonProcess([root], "--grace", "0.2")
    future = d.client.stub.Merge.future(pb.MergeRequest(app_id="app", request_id="g", shuffle_id=8, map_ids=maps, local_dirs=dirs,
                                                        num_partitions=20000, merged_map_id=M + 6), timeout=120)
    wait_for_temp(root)
    assert d.stop() == 0
    err = future.exception(timeout=30)
    assert err is not None and err.code() in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE)
    assert temps(root) == []
    assert "shutting down" in d.log_path.read_text()


def test_index_for_empty_partitions(daemon, dirs):
    for m in (0, 1):
        data = block_file_path(dirs, data_file_name(5, m))
        data.parent.mkdir(parents=True, exist_ok=True)
        data.write_bytes(b"")
        idx = block_file_path(dirs, index_file_name(5, m))
        idx.parent.mkdir(parents=True, exist_ok=True)
        idx.write_bytes(encode_index([0, 0, 0]))
    resp = daemon.client.merge("e", 5, [0, 1], dirs, 3, M + 7, app_id="app")
    assert list(resp.partition_lengths) == [0, 0, 0] and resp.bytes_written == 0


@pytest.fixture
def tls_files(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    key.chmod(0o600)  # the daemon refuses a key others can read, like a token file
    return key, cert


def start_tls_daemon(start_merger, key, cert, token="tt"):
    """A merger serving TLS only, that wants ``token``."""
    return start_merger("--tls-cert", str(cert), "--tls-key", str(key), "--no-fsync", token=token)


def test_tls_with_token(dirs, tls_files, start_merger):
    from riffle.merger.client import MergerClient

    key, cert = tls_files
    make_outputs(dirs, 3, [0, 1], 4)
    address = start_tls_daemon(start_merger, key, cert).address
    with MergerClient(address, token="tt", tls_ca=str(cert)) as secure, MergerClient(address, token="tt", timeout=5) as plaintext:
        assert secure.healthy()
        assert secure.merge("tls", 3, [0, 1], dirs, 4, M + 20, app_id="app").bytes_written > 0
        assert rpc_error(plaintext.status).code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL)


def test_a_reply_over_4mib_reaches_a_tls_client_like_a_plaintext_one(dirs, tls_files, start_merger):
    """Both clients take replies up to the same limit: 4.5 million partition lengths of one byte each make a
    reply of 4.5 MB, over gRPC's default 4 MiB receive limit."""
    from riffle.merger.client import MergerClient

    key, cert = tls_files
    parts = 4_500_000
    data, index = block_file_path(dirs, data_file_name(9, 0)), block_file_path(dirs, index_file_name(9, 0))
    for path in (data, index):
        path.parent.mkdir(parents=True, exist_ok=True)
    data.write_bytes(b"x" * parts)
    index.write_bytes(encode_index([1] * parts))
    address = start_tls_daemon(start_merger, key, cert).address
    with MergerClient(address, token="tt", tls_ca=str(cert)) as secure:
        resp = secure.merge("big-reply", 9, [0], dirs, parts, M + 30, app_id="app", timeout=300)
        assert len(resp.partition_lengths) == parts and resp.ByteSize() > 4 << 20
