"""``python -m sparkshim.brain`` outside a driver, the brain's check of the driver's shim jar, its heartbeat, and
its one line when the driver's gateway cannot be reached (real loopback sockets)."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sparkshim.brain import EXIT_NO_GATEWAY, EXIT_NOT_ATTACHED, gateway_unreachable, jar_mismatch, start_heartbeat
from sparkshim.build import PACKAGED_JAR, SOURCES_ATTR, jar_manifest


def run_brain(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY_")}
    return subprocess.run([sys.executable, "-m", "sparkshim.brain", *args], capture_output=True, text=True, env=env, timeout=60)


def test_help_says_what_starts_it():
    proc = run_brain("--help")
    assert proc.returncode == 0
    assert "io.slaqriffle.SlaqRifflePlugin" in proc.stdout


def test_without_a_gateway_it_says_so_and_exits():
    proc = run_brain()
    assert proc.returncode == EXIT_NOT_ATTACHED
    assert "PYSPARK_GATEWAY_PORT" in proc.stderr and "SlaqRifflePlugin" in proc.stderr


def test_a_jar_from_other_sources_is_refused_and_the_same_one_accepted():
    assert jar_mismatch("", "anywhere") is None  # nothing to compare
    if PACKAGED_JAR.exists():
        ours = jar_manifest(PACKAGED_JAR)[SOURCES_ATTR]
        assert jar_mismatch(ours, "file:/x.jar") is None
        why = jar_mismatch("0" * 12, "file:/x.jar")
        assert why is not None and "file:/x.jar" in why and "--print-path" in why


class Handle:
    """Counts heartbeats; after ``fail_after`` of them it raises as py4j does once the gateway is closed."""

    def __init__(self, fail_after: int):
        self.beats = 0
        self.fail_after = fail_after
        self.gone = threading.Event()

    def alive(self) -> None:
        if self.beats >= self.fail_after:
            self.gone.set()
            raise ConnectionError("gateway closed")
        self.beats += 1


def test_the_heartbeat_beats_until_the_gateway_is_gone_or_it_is_stopped():
    closing = Handle(fail_after=3)
    start_heartbeat(closing, every=0.01)
    assert closing.gone.wait(10) and closing.beats == 3  # the first beat at once, then one per interval
    quiet = Handle(fail_after=10**6)
    stop = start_heartbeat(quiet, every=0.01)
    deadline = time.monotonic() + 10
    while quiet.beats < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    stop.set()
    beats = quiet.beats
    time.sleep(0.1)  # ten intervals
    assert beats >= 2 and quiet.beats <= beats + 1  # at most the beat that was under way


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _gateway(answer: Callable[[socket.socket], None]) -> Iterator[int]:
    """A loopback listener whose one accepted connection gets ``answer``; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    conns: list[socket.socket] = []

    def serve() -> None:
        conn, _ = server.accept()
        conns.append(conn)
        answer(conn)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield server.getsockname()[1]
    finally:
        t.join(5)
        for c in conns:
            c.close()
        server.close()


def _reset(conn: socket.socket) -> None:  # what BrainGateway does to a connection over its limits
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _reads_secret_then(reply: bytes) -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        f = conn.makefile("rb")
        f.readline(), f.readline()
        conn.sendall(reply)
    return answer


def test_the_gateways_answer_to_the_secret_names_the_cause_of_each_failure():
    assert "connection refused" in (gateway_unreachable(_closed_port(), "s") or "")
    with _gateway(_reset) as port:
        assert "slots are taken by other local connections" in (gateway_unreachable(port, "s") or "")
    with _gateway(lambda conn: conn.makefile("rb").readline()) as port:  # reads, never answers
        assert "no answer" in (gateway_unreachable(port, "s", timeout=0.3) or "")
    with _gateway(_reads_secret_then(b"!xAuthentication error\n")) as port:
        assert "refused the brain's secret" in (gateway_unreachable(port, "s") or "")
    with _gateway(_reads_secret_then(b"!yv\n")) as port:
        assert gateway_unreachable(port, "s") is None


def test_a_gateway_that_cannot_be_reached_is_one_line_and_its_own_exit_code():
    env = dict(os.environ, PYSPARK_GATEWAY_PORT=str(_closed_port()), PYSPARK_GATEWAY_SECRET="s")
    proc = subprocess.run([sys.executable, "-m", "sparkshim.brain"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == EXIT_NO_GATEWAY
    lines = (proc.stdout + proc.stderr).splitlines()
    assert len(lines) == 1 and lines[0].startswith("WARNING sparkshim.brain: SLAQ/Riffle brain: cannot reach"), lines
    assert "connection refused" in lines[0] and "plain Spark" in lines[0]
