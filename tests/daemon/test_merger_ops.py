"""What ops see: start-up refusals (one line, exit 2), Prometheus metrics, ``riffle status``, the client's cleartext guard."""

import json
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from riffle.merger.client import CleartextToken, MergerClient
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from srsupport.daemons import DaemonProcess, free_port
from tests.fixtures import make_outputs


def serve(*args, env=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "riffle.merger.cli", "serve", *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def refused_in_process(monkeypatch, capsys, caplog, *args) -> tuple[int, str]:
    """``riffle-merger serve args`` run by the CLI's own ``main`` in this process: its exit code and what it wrote on
    stderr, the log records it made at INFO or above as lines of it (the console script logs there at INFO). Every
    refusal comes before serving, so a daemon that starts serving instead fails the test. The exit code as a process
    returns it: tests/daemon/test_riffle_cli.py's test_serve_rejects_missing_local_dir and this module's port-in-use test."""
    import logging

    from riffle.merger.cli import main
    from riffle.merger.server import MergerDaemon

    def served(self):
        raise AssertionError("the merger started serving instead of refusing")

    monkeypatch.setattr(MergerDaemon, "serve_forever", served)
    caplog.set_level(logging.INFO)
    capsys.readouterr()
    try:
        code = main(["serve", *args])
    except SystemExit as exc:  # argparse's refusals
        code = exc.code
    logged = "".join(f"{r.levelname} {r.name}: {r.getMessage()}\n" for r in caplog.records if r.name.startswith("riffle"))
    return code, capsys.readouterr().err + logged


@pytest.fixture
def token_file(tmp_path):
    path = tmp_path / "token"
    path.write_text("s3cret\n")
    path.chmod(0o600)
    return path


def refusals(root, tmp_path, token_file):
    """Case name -> (serve arguments, text the one error line must contain); the token files come from ``token_files``."""
    loose, empty, fifo, big = tmp_path / "loose-token", tmp_path / "empty-token", tmp_path / "fifo", tmp_path / "big-token"
    r = ["--local-dir", str(root)]
    # non-loopback addresses are refused before anything binds
    return {
        "no token off loopback": (["--listen", "0.0.0.0:7338", *r], "without a token"),
        "token in cleartext off loopback": (["--listen", "0.0.0.0:7338", "--token-file", str(token_file), *r], "cleartext"),
        "token file readable by others": (["--token-file", str(loose), *r], f"chmod 600 {loose}"),
        "missing token file": (["--token-file", str(tmp_path / "nope"), *r], f"--token-file={tmp_path / 'nope'}: No such file"),
        "empty token file": (["--token-file", str(empty), *r], "is empty"),
        "token file a FIFO": (["--token-file", str(fifo), *r], f"--token-file={fifo}: not a regular file but a FIFO"),
        "token file /dev/zero": (["--token-file", "/dev/zero", *r], "--token-file=/dev/zero: not a regular file but a character device"),
        "token file of 2 MiB": (["--token-file", str(big), *r], f"--token-file={big}: larger than 1048576 bytes"),
        "token longer than gRPC carries": (["--token-file", str(tmp_path / "long-token"), *r],
                                           f"--token-file={tmp_path / 'long-token'}: the token is 20000 bytes; at most 4096 fit in a gRPC call's metadata"),
        "tls cert a FIFO": (["--tls-cert", str(fifo), "--tls-key", str(tmp_path / "key.pem"), *r],
                            f"--tls-cert={fifo}: not a regular file but a FIFO"),
        "missing local dir": (["--local-dir", str(tmp_path / "missing")], "does not exist"),
        "tls cert without key": (["--tls-cert", str(token_file), *r], "go together"),
        "tls key readable by others": (["--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "loose-key.pem"), *r],
                                       f"--tls-key={tmp_path / 'loose-key.pem'}: readable by group or others"),
        "missing tls files": (["--tls-cert", str(tmp_path / "c.pem"), "--tls-key", str(tmp_path / "k.pem"), *r], "No such file"),
        "metrics off loopback": (["--metrics-listen", "0.0.0.0:9100", *r], "refusing to serve metrics on 0.0.0.0:9100 off loopback"),
        "bad metrics address": (["--metrics-listen", "nowhere", *r], "HOST:PORT"),
        "metrics address not on this host": (["--insecure", "--metrics-listen", "192.0.2.1:9100", *r], "--metrics-listen 192.0.2.1:9100: cannot listen"),
        "metrics port out of range": (["--metrics-listen", "127.0.0.1:70000", *r], "--metrics-listen port must be ASCII digits in 0..65535"),
        "listen port out of range": (["--listen", "127.0.0.1:99999", *r], "--listen port must be ASCII digits in 0..65535"),
        "listen port in Arabic-Indic digits": (["--listen", "127.0.0.1:\u0667\u0663\u0663\u0668", *r], "--listen port must be ASCII digits"),
        "memory below the minimum": (["--memory", "1", *r], "--memory must be in 1m..1t, got 1 byte"),
        "memory past any machine": (["--memory", "99999t", *r], "--memory must be in 1m..1t, got 99999t"),
        "queue memory below the minimum": (["--max-queue-memory", "1000", *r], "--max-queue-memory must be in 1m..1t, got 1000 bytes"),
        "read buffer over the memory": (["--memory", "8m", "--read-buffer", "16m", *r], "--read-buffer must be between 4k and --memory (8m), got 16m"),
        "memory not finite": (["--memory", "inf", *r], "not a positive size"),
        "negative memory with a unit": (["--memory", "-5g", *r], "argument --memory: not a positive size: '-5g'"),
        "negative grace": (["--grace", "-5", *r], "--grace must be in 0.."),
        "grace not a number": (["--grace", "nan", *r], "--grace must be in 0.."),
        "no workers": (["--workers", "0", *r], "--workers must be in 1.."),
        "unknown log level": (["--log-level", "chatty", *r], "argument --log-level: invalid choice"),
        "negative queue": (["--max-queue", "-1", *r], "--max-queue must be in 0.."),
        "no application leases": (["--max-apps", "0", *r], "--max-apps must be in 1.."),
        "storage request time not a duration": (["--storage-request-time", "fast", *r],
                                                "--storage-request-time='fast': expected a duration such as 2s or 500ms in [0.001ms, 60s]"),
        "storage bandwidth over the range": (["--storage-bandwidth", "2t", *r], "--storage-bandwidth='2t': expected bytes per second"),
    }


@pytest.mark.parametrize("case", sorted(refusals("/r", Path("/t"), "/f")))
def test_each_start_up_refusal_is_one_line_and_exit_code_2(root, tmp_path, token_file, case, monkeypatch, capsys, caplog):
    for name, text, mode in (("loose-token", "s3cret", 0o644), ("empty-token", "", 0o600), ("loose-key.pem", "key", 0o640),
                             ("cert.pem", "cert", 0o644), ("key.pem", "key", 0o600), ("big-token", "x" * (2 << 20), 0o600),
                             ("long-token", "x" * 20000, 0o600)):
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(mode)
    os.mkfifo(tmp_path / "fifo")
    args, text = refusals(root, tmp_path, token_file)[case]
    code, stderr = refused_in_process(monkeypatch, capsys, caplog, *args)
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("riffle-merger: error: ") and text in lines[0], stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("flag", ["--token-file", "--tls-ca"])
def test_riffle_status_refuses_a_fifo_a_device_or_a_large_file_at_once(tmp_path, flag):
    """Before it asks any merger, in one line naming the flag, the path and the reason (a FIFO blocked it, and
    /dev/zero was read until memory ran out: the command runs here with its address space capped at 2 GiB)."""
    fifo, big = tmp_path / "fifo", tmp_path / "big"
    os.mkfifo(fifo)
    big.write_bytes(b"x" * (2 << 20))
    cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # noqa: E731
    for path, reason in ((fifo, "not a regular file but a FIFO"), ("/dev/zero", "not a regular file but a character device"),
                         (big, "larger than 1048576 bytes (1 MiB)")):
        out = subprocess.run([sys.executable, "-m", "riffle.cli", "status", f"127.0.0.1:{free_port()}", flag, str(path)],
                             capture_output=True, text=True, timeout=60, preexec_fn=cap)
        assert out.returncode == 2 and out.stdout == "", out.stderr
        assert out.stderr == f"riffle: error: {flag}={path}: {reason}\n", out.stderr


def test_client_refuses_to_send_a_token_in_cleartext_off_loopback():
    with pytest.raises(CleartextToken, match="cleartext"):
        MergerClient("10.1.2.3:7338", token="t", insecure=False)
    MergerClient("10.1.2.3:7338", token="t", insecure=True).close()  # explicit opt-out; nothing is sent yet
    MergerClient("127.0.0.1:7338", token="t", insecure=False).close()
    MergerClient("10.1.2.3:7338", insecure=False).close()  # no token, nothing to leak


def test_metrics_endpoint_and_riffle_status(root, dirs, start_merger, monkeypatch, capsys):
    make_outputs(dirs, 1, [0, 1, 2], 10)
    port = free_port()
    with start_merger("--metrics-listen", f"127.0.0.1:{port}", token="tok") as d:
        d.client.merge("m", 1, [0, 1, 2], dirs, 10, SYNTHETIC_MAP_ID_BASE + 1, app_id="app")
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        for line in ('riffle_merges_total{outcome="completed"} 1.0', 'riffle_merges_total{outcome="failed"} 0.0',
                     "riffle_queue_depth 0.0", "riffle_memory_reserved_bytes 0.0", "riffle_merge_duration_seconds_count 1.0",
                     "riffle_merge_inputs_sum 3.0"):
            assert line in body, line
        written = d.client.status().bytes_merged
        assert f"riffle_merge_output_bytes_total {float(written)}" in body
        index_bytes = 3 * (10 + 1) * 8  # the inputs' indexes are read as well as their data
        assert f"riffle_merge_input_bytes_total {float(written + index_bytes)}" in body
        from riffle.cli import main as riffle  # `riffle status` in this process (its exit codes as a process: test_riffle_cli.py)

        dead = f"127.0.0.1:{free_port()}"
        monkeypatch.setenv("RIFFLE_MERGER_TOKEN", "tok")
        capsys.readouterr()
        assert riffle(["status", d.address, dead, "--timeout", "1", "--json"]) == 1  # one merger is down
        rows = json.loads(capsys.readouterr().out)
        assert rows[0]["health"] == "SERVING" and rows[0]["completed"] == 1 and rows[0]["version"]
        assert rows[1]["health"] == "DOWN" and "UNAVAILABLE" in rows[1]["error"]
        assert riffle(["status", d.address, "--timeout", "1"]) == 0
        text = capsys.readouterr().out
        assert text.splitlines()[0].split()[:3] == ["address", "health", "version"]
        assert d.address in text and "SERVING" in text


def test_port_in_use_is_one_error_line_and_exit_code_2(root):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        out = serve("--listen", address, "--local-dir", str(root))
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    # grpc's C core logs its own line first; ours is the last
    assert out.stderr.strip().splitlines()[-1] == f"riffle-merger: error: cannot listen on {address}: the address is in use or not on this host"


def test_second_daemon_on_the_same_state_dir_is_refused(root, start_merger):
    """Two daemons on one state dir would each take the other's merges in progress for a crash's leftovers."""
    with start_merger() as first:
        out = serve("--listen", f"127.0.0.1:{free_port()}", "--local-dir", str(root))
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "another merger is running on state dir" in lines[0], out.stderr
        assert first.client.healthy()
    with start_merger() as again:  # the lock goes with the daemon
        assert again.client.healthy()


def threads_of(pid: int) -> int:
    return int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("Threads:")))


def test_metrics_endpoint_is_bounded_in_connections_and_threads(root, dirs):
    """Four times the bound of idle connections to the metrics port cost no thread each (they are closed past the
    bound) and leave merges and, once they are gone, scrapes working. A real process: its thread count is the claim."""
    from riffle.merger.metrics import IDLE_TIMEOUT, MAX_CONNECTIONS

    make_outputs(dirs, 1, [0, 1], 4)
    port = free_port()
    with DaemonProcess([root], "--metrics-listen", f"127.0.0.1:{port}") as d:
        before = threads_of(d.proc.pid)
        idle = []
        try:
            for _ in range(4 * MAX_CONNECTIONS):
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            assert d.client.merge("m", 1, [0, 1], dirs, 4, SYNTHETIC_MAP_ID_BASE + 1, app_id="app").bytes_written > 0
            assert threads_of(d.proc.pid) <= before + 4, (before, threads_of(d.proc.pid))
        finally:
            for sock in idle:
                sock.close()
        deadline = time.monotonic() + IDLE_TIMEOUT + 10  # the closed connections free their slots; at worst they idle out
        while True:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
                break
            except OSError:  # refused past the bound while the slots are still held
                assert time.monotonic() < deadline, "scrapes never worked again"
                time.sleep(0.1)
        refused = float(next(line.split()[1] for line in body.splitlines() if line.startswith("riffle_metrics_connections_refused_total")))
        assert refused > 0  # how many depends on how many were accepted before the close freed the slots
        assert threads_of(d.proc.pid) <= before + 4


def test_calls_grpc_cancels_are_counted_and_logged(root, dirs, start_merger):
    """A caller whose deadline passes sees CANCELLED or DEADLINE_EXCEEDED; the daemon counts and logs it."""
    import grpc

    from riffle.merger.faults import PAUSE_ENV

    make_outputs(dirs, 1, [0, 1], 4)
    port = free_port()
    with start_merger("--metrics-listen", f"127.0.0.1:{port}", env={PAUSE_ENV: "temps-written:2"}) as d:
        with pytest.raises(grpc.RpcError) as info:
            d.client.merge("gone", 1, [0, 1], dirs, 4, SYNTHETIC_MAP_ID_BASE + 1, app_id="app", timeout=0.5)
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        deadline = time.monotonic() + 10
        while "merge gone ended while running: the caller cancelled it" not in d.log():
            assert time.monotonic() < deadline, d.log()[-2000:]
            time.sleep(0.05)
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        assert 'riffle_rpc_cancelled_total{stage="running"} 1.0' in body
        assert d.client.status().merges_cancelled == 1


def test_an_application_silent_for_its_lease_loses_its_merged_files(root, dirs):
    """A driver that died without Cleanup: once it has sent nothing for ``--app-lease`` seconds, the daemon deletes
    its merged files and records; an application that keeps renewing (KeepAlive) keeps them, and a SIGSTOP of the
    daemon itself does not count against anyone's lease."""
    import signal

    make_outputs(dirs, 1, [0, 1, 2, 3], 4)
    with DaemonProcess([root], "--app-lease", "2") as d:
        dead = d.client.merge("m-dead", 1, [0, 1], dirs, 4, SYNTHETIC_MAP_ID_BASE + 1, app_id="app-dead")
        live = d.client.merge("m-live", 1, [2, 3], dirs, 4, SYNTHETIC_MAP_ID_BASE + 2, app_id="app-live")
        assert d.client.keep_alive("app-live").lease_seconds == 2
        os.kill(d.proc.pid, signal.SIGSTOP)  # longer than the lease: nobody's lease runs down meanwhile
        time.sleep(3)
        os.kill(d.proc.pid, signal.SIGCONT)
        time.sleep(0.6)
        assert Path(dead.data_path).exists(), d.log()[-2000:]
        deadline = time.monotonic() + 2 + 0.5 + 3  # the lease, its check interval (lease / 4), slack
        while Path(dead.data_path).exists() or Path(dead.index_path).exists():
            assert time.monotonic() < deadline, d.log()[-2000:]
            d.client.keep_alive("app-live")
            time.sleep(0.2)
        assert Path(live.data_path).exists() and Path(live.index_path).exists()
        # the daemon logs after the files are gone: wait for the line rather than read the log at once
        expected = "application app-dead sent nothing for 2s (its lease): its merges cancelled, its 2 merged files deleted"
        while expected not in d.log():
            assert time.monotonic() < deadline + 2, d.log()[-2000:]
            time.sleep(0.1)
        apps = root / ".riffle-merger" / "apps"
        assert len(list(apps.iterdir())) == 1  # only app-live's records are left


def test_the_driver_renews_its_lease_where_it_has_merged_files(root, dirs, start_merger):
    """The driver's fleet renews its application's lease on the mergers holding its merged files (at once on a
    merger new to it, then every lease / 3 as the daemon's reply says): the files outlive several leases, and go
    once the renewals stop."""
    from riffle.driver.config import RiffleConfig
    from riffle.driver.fleet import MergerFleet

    make_outputs(dirs, 1, [0, 1], 4)
    with start_merger("--app-lease", "2") as d:
        out = d.client.merge("m", 1, [0, 1], dirs, 4, SYNTHETIC_MAP_ID_BASE + 1, app_id="app-x")
        fleet = MergerFleet(RiffleConfig(enabled=True, mergers=(d.address,)), "app-x")
        fleet.keep_alive()  # nothing merged yet: nothing renewed, the next periodic renewal is a minute away
        fleet.merged_where[1] = {(d.address, tuple(dirs))}  # a merger new to the fleet is renewed at once
        until = time.monotonic() + 5  # two and a half leases
        while time.monotonic() < until:
            fleet.keep_alive()  # the scheduler's loop calls it every step; it sends only when due
            time.sleep(0.05)
        assert Path(out.data_path).exists(), d.log()[-2000:]
        fleet.close()
        deadline = time.monotonic() + 2 + 0.5 + 3
        while Path(out.data_path).exists():
            assert time.monotonic() < deadline, d.log()[-2000:]
            time.sleep(0.1)


def test_merged_files_are_their_applications_claim_to_a_lease_even_in_a_full_table(root, dirs, start_merger):
    """After a restart, other applications take every lease the table allows (--max-apps) first: the one whose merged
    files are on record is still renewed, by KeepAlive and Merge alike, and keeps its files past its lease while the
    silent one's go; one more application without files is refused, by KeepAlive and Merge alike, until some lapse."""
    import grpc

    M = SYNTHETIC_MAP_ID_BASE
    make_outputs(dirs, 1, [0, 1, 2, 3], 4)
    with start_merger() as d:
        live = d.client.merge("m-live", 1, [0, 1], dirs, 4, M + 1, app_id="app-live")
        dead = d.client.merge("m-dead", 1, [2, 3], dirs, 4, M + 2, app_id="app-dead")
    with start_merger("--app-lease", "2", "--max-apps", "4") as d:
        for i in range(4):
            d.client.keep_alive(f"filler-{i}")
        assert d.client.keep_alive("app-live").lease_seconds == 2
        assert d.client.merge("m-live-2", 1, [0, 1], dirs, 4, M + 3, app_id="app-live").bytes_written > 0
        for call in (lambda: d.client.keep_alive("filler-4"), lambda: d.client.merge("m-more", 1, [2, 3], dirs, 4, M + 4, app_id="filler-5")):
            with pytest.raises(grpc.RpcError) as info:
                call()
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, info.value.details()
            assert info.value.details() == ("4 applications without merged files here already hold a lease (at most 4, "
                                            "--max-apps); retry later"), info.value.details()
        # the silent application's lease runs out (counted from the restart) while the live one renews
        expected = "application app-dead sent nothing for 2s (its lease): its merges cancelled, its 2 merged files deleted"
        deadline = time.monotonic() + 2 + 0.5 + 5
        while expected not in d.log():
            assert time.monotonic() < deadline, d.log()[-2000:]
            assert d.client.keep_alive("app-live").lease_seconds == 2
            time.sleep(0.2)
        assert not Path(dead.data_path).exists()
        assert Path(live.data_path).exists() and Path(live.index_path).exists(), d.log()[-2000:]
        while True:  # the silent fillers' leases lapse too: one more application is let in
            try:
                d.client.keep_alive("newcomer")
                break
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline + 3, exc.details()
                d.client.keep_alive("app-live")
                time.sleep(0.2)
        assert Path(live.data_path).exists() and "Traceback" not in d.log()
