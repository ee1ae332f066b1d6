"""Start a real merger daemon as a child process (benchmarks and tests talk to it over loopback gRPC)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

from riffle.merger.client import MergerClient


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DaemonProcess:
    """``riffle-merger serve`` in a subprocess; ``peak_rss_mb()`` reads the kernel's high-water mark."""

    def __init__(self, local_dirs: list[str | Path], *extra: str, token: str | None = None, port: int | None = None,
                 env: dict | None = None, preexec_fn=None):
        self.port = port or free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.token = token
        args = [sys.executable, "-m", "riffle.merger.cli", "serve", "--listen", self.address, *extra]
        for d in local_dirs:
            args += ["--local-dir", str(d)]
        full_env = {**os.environ, **(env or {})}
        if token:
            full_env["RIFFLE_MERGER_TOKEN"] = token
        self.log_path = Path(str(local_dirs[0])) / f".merger-{self.port}.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=full_env, preexec_fn=preexec_fn)
        self.client = MergerClient(self.address, token=token)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"merger exited with {self.proc.returncode}: {self.log()}")
            if self.client.healthy():
                return
            time.sleep(0.1)
        raise TimeoutError(f"merger at {self.address} not healthy after {timeout}s: {self.log()}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def _status_mb(self, field: str) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        match = re.search(rf"{field}:\s+(\d+) kB", status)
        if match is None:
            raise RuntimeError(f"no {field} in /proc/{self.proc.pid}/status")
        return int(match.group(1)) / 1024

    def peak_rss_mb(self) -> float:
        """The kernel's high-water mark of the daemon's resident memory."""
        return self._status_mb("VmHWM")

    def rss_mb(self) -> float:
        return self._status_mb("VmRSS")

    def stop(self, timeout: float = 60.0) -> int:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.client.close()
        self._log.close()

    def __enter__(self) -> DaemonProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
