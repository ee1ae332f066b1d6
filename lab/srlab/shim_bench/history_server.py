"""A real Spark History Server process for the History Server test and benchmark: pyspark's own
``spark-class org.apache.spark.deploy.history.HistoryServer``, set up the way docs/ui.md tells a user to
(the shim jar in ``SPARK_DAEMON_CLASSPATH``, the log directory in ``SPARK_HISTORY_OPTS``), bound to the
loopback interface on a free port and stopped by its process id."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sparkshim.build import PACKAGED_JAR
from srlab.pages import fetch

T = TypeVar("T")
MAIN = "org.apache.spark.deploy.history.HistoryServer"


def spark_home() -> Path:
    import pyspark

    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def event_log_files(log_dir: Path) -> list[Path]:
    """The event log files under ``log_dir``: one file per application, or (rolling logs, Spark 4's
    default) the ``events_<n>_<app>`` files in each ``eventlog_v2_<app>`` directory."""
    return sorted(p for p in log_dir.rglob("*") if p.is_file() and (p.parent == log_dir or p.name.startswith("events_")))


def heap_used_mb(url: str) -> float:
    """The heap the History Server serving ``url`` uses after a full GC (``jcmd``: the JDK's own tool), in MiB."""
    port = url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
    pids = subprocess.run(["pgrep", "-f", f"spark.history.ui.port={port}"], capture_output=True, text=True, check=True).stdout.split()
    jcmd = spark_java_tool("jcmd")
    subprocess.run([jcmd, pids[0], "GC.run"], capture_output=True, check=True, timeout=60)
    info = subprocess.run([jcmd, pids[0], "GC.heap_info"], capture_output=True, text=True, check=True, timeout=60).stdout
    m = re.search(r"used (\d+)K", info)
    if m is None:
        raise ValueError(f"no heap figure in jcmd's answer: {info[:300]}")
    return round(int(m.group(1)) / 1024, 1)


def spark_java_tool(name: str) -> str:
    """A JDK tool next to the ``java`` Spark runs (``$JAVA_HOME/bin``, else the one on PATH)."""
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / name) if home and (Path(home) / "bin" / name).exists() else name


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 120.0) -> T:
    """``probe()``'s first truthy value, polled every 0.2 s until ``timeout``; the last error says why not."""
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            value = probe()
            if value:
                return value
        except (OSError, urllib.error.URLError, ValueError) as exc:
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"timed out waiting for {what}: {last}")


@contextmanager
def history_server(log_dir: Path, app_id: str, log: Path, env: Mapping[str, str] | None = None,
                   jar: Path = PACKAGED_JAR) -> Iterator[str]:
    """A History Server over ``log_dir`` with ``jar`` on its class path, once it lists ``app_id``; yields
    the app's URL prefix (``http://127.0.0.1:<port>/history/<app_id>``)."""
    port = free_port()
    full_env: dict[str, Any] = {**os.environ, **(env or {}), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_CLASSPATH": str(jar),
                                "SPARK_HISTORY_OPTS": f"-Dspark.history.fs.logDirectory={log_dir.as_uri()} -Dspark.history.ui.port={port} "
                                                      "-Dspark.history.fs.update.interval=1s"}
    url = f"http://127.0.0.1:{port}"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), MAIN], stdout=out, stderr=subprocess.STDOUT, env=full_env)
        try:
            def listed() -> bool:
                if proc.poll() is not None:
                    raise RuntimeError(f"the History Server exited with code {proc.returncode}:\n{log.read_text()[-3000:]}")
                return any(a["id"] == app_id for a in json.loads(fetch(url + "/api/v1/applications")))

            wait_for(f"the History Server to list {app_id}", listed)
            yield f"{url}/history/{app_id}"
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
