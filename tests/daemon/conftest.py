"""Fixtures of the daemon tests: a local root with three executor dirs, its journal, and mergers started in this process."""

from pathlib import Path

import pytest

from riffle.merger.journal import Journal
from riffle.merger.paths import Roots
from riffle.shuffle.layout import DEFAULT_SUB_DIRS
from srsupport.daemons import DaemonInProcess


@pytest.fixture
def root(tmp_path) -> Path:
    r = tmp_path / "local"
    r.mkdir()
    return r


@pytest.fixture
def dirs(root) -> list[str]:
    """Three executor dirs with every sub dir Spark creates as its tasks write blocks (the merger creates none)."""
    out = [root / "blockmgr-a", root / "blockmgr-b", root / "blockmgr-c"]
    for d in out:
        for k in range(DEFAULT_SUB_DIRS):
            (d / f"{k:02x}").mkdir(parents=True)
    return [str(d) for d in out]


@pytest.fixture
def roots(root):
    r = Roots([root])
    yield r
    r.close()


@pytest.fixture
def journal(roots):
    j = Journal(roots, durable=False)
    yield j
    j.close()


@pytest.fixture
def start_merger(root):
    """Starts mergers in this process (``start_merger(*serve_flags, token=, env=)``, on ``root`` unless ``local_dirs``
    says otherwise), each stopped at teardown: the same daemon the CLI builds, without a Python start-up per test.
    Tests of crashes, signals, peak memory, rlimits or exit codes start a ``DaemonProcess`` instead."""
    started: list[DaemonInProcess] = []

    def start(*flags: str, token: str | None = None, env: dict | None = None, local_dirs: list | None = None,
              port: int | None = None) -> DaemonInProcess:
        started.append(DaemonInProcess(local_dirs or [root], *flags, token=token, env=env, port=port))
        return started[-1]

    yield start
    for daemon in reversed(started):
        daemon.stop()
