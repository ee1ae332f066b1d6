"""Start a real merger daemon, as a child process or on a thread of this one (benchmarks and tests talk to it over
loopback gRPC either way)."""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import threading
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


class DaemonInProcess:
    """``riffle-merger serve`` with the same flags, built by the CLI's own code and served on a thread of this process:
    the same daemon over the same loopback gRPC, without a Python start-up per daemon. For whatever does not test a
    process boundary; crashes, signals, peak memory, rlimits and the CLI's exit codes need :class:`DaemonProcess`.

    ``host`` is a loopback address (127.0.0.2 stands for another node). Its log is the ``riffle.merger`` logger's
    records while it runs, in the format ``--log-format`` names (two
    in-process daemons at once each log both's records). ``env`` is read for the token and fault injection only."""

    def __init__(self, local_dirs: list[str | Path], *extra: str, token: str | None = None, port: int | None = None,
                 env: dict | None = None, host: str = "127.0.0.1", start_timeout: float = 30.0):
        from riffle.merger.cli import JsonFormatter, build_daemon, build_parser

        self.port = port or free_port()
        self.address = f"{host}:{self.port}"
        self.token = token
        argv = ["serve", "--listen", self.address, *extra]
        for d in local_dirs:
            argv += ["--local-dir", str(d)]
        args = build_parser().parse_args(argv)
        environ = {**os.environ, **(env or {})}
        if token:
            environ["RIFFLE_MERGER_TOKEN"] = token
        self.log_path = Path(str(local_dirs[0])) / f".merger-{self.port}.log"
        self._handler = logging.FileHandler(self.log_path)
        self._handler.setFormatter(JsonFormatter() if args.log_format == "json"
                                   else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self._logger = logging.getLogger("riffle.merger")
        self._level = self._logger.level
        self._logger.setLevel(args.log_level)
        self._logger.addHandler(self._handler)
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self.client: MergerClient | None = None
        try:
            self.daemon = build_daemon(args, environ, owns_process=False)
            self._thread = threading.Thread(target=self._serve, name=f"merger-{self.port}", daemon=True)
            self._thread.start()
            deadline = time.monotonic() + start_timeout
            while not self.daemon.wait_started(0.05):
                if not self._thread.is_alive():
                    raise RuntimeError(f"merger at {self.address} ended before serving: {self._error!r}") from self._error
                if time.monotonic() > deadline:
                    raise TimeoutError(f"merger at {self.address} not serving after {start_timeout}s: {self.log()}")
        except BaseException:
            self._detach_log()
            raise
        self.client = MergerClient(self.address, token=token)

    def _serve(self) -> None:
        try:
            self.daemon.serve_forever()
        except BaseException as exc:  # reported by __init__ or stop()
            self._error = exc

    def log(self) -> str:
        self._handler.flush()
        return self.log_path.read_text(errors="replace")

    def _detach_log(self) -> None:
        self._logger.removeHandler(self._handler)
        self._logger.setLevel(self._level)
        self._handler.close()

    def stop(self, timeout: float = 60.0) -> int:
        """The shutdown SIGTERM starts; 0 once the daemon has stopped cleanly (an exit code, like :meth:`DaemonProcess.stop`)."""
        if self._thread is None or not self._thread.is_alive() and self._handler not in self._logger.handlers:
            return 0 if self._error is None else 1
        if self.client is not None:
            self.client.close()
        if self._thread.is_alive():
            self.daemon.stop()
            self._thread.join(timeout)
        self._detach_log()
        if self._thread.is_alive():
            raise TimeoutError(f"merger at {self.address} did not stop within {timeout}s")
        return 0 if self._error is None else 1

    def __enter__(self) -> DaemonInProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
