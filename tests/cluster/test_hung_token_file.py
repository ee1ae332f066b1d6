"""A token file on a mount whose reads hang (a hung NFS or FUSE server): every read is given up in time, and none
leaves threads piling up or a lock held. The hang is real: the file lies on a FUSE mount (the ``hdd`` storage
profile) whose every read from the disk takes ``HANG_SECONDS`` in the kernel. Needs root and FUSE (CI has both)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from riffle.driver import token_file
from riffle.driver.token_file import KEY, TokenFile
from sparkshim.safe_read import FileRefused, read_config_file
from srlab.storage.model import DiskProfile
from srlab.storage.mount import StorageError, check_available, mounted

HANG_SECONDS = 4.0  # far beyond the reads' timeouts below, short enough to wait out
GIVE_UP_SECONDS = 1.0  # a re-read of the token is given up after this


@pytest.fixture
def hung_mount(tmp_path) -> Path:
    try:
        check_available()
    except StorageError as exc:
        pytest.skip(str(exc))
    with mounted(tmp_path / "backing", tmp_path / "disk", DiskProfile(seek_ms=HANG_SECONDS * 1000)) as mp:
        yield mp


def readers(setting: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"read {setting}"]


def wait_for(condition, timeout: float = HANG_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.005)


def wait_out(setting: str) -> None:
    """Until the blocked reads of ``setting`` have returned from the kernel."""
    for t in readers(setting):
        t.join(HANG_SECONDS * 5)
        assert not t.is_alive()


def test_thirty_reads_of_a_hung_file_leave_one_thread_and_the_file_is_read_again_once_it_returns(hung_mount):
    path = hung_mount / "token"
    path.write_text("s3cret\n")
    refusals = []
    for _ in range(30):
        with pytest.raises(FileRefused) as info:
            read_config_file(str(path), "--hung", timeout=0.01)
        refusals.append(str(info.value))
    assert len(readers("--hung")) == 1  # was 30: one blocked thread per read
    assert refusals[0] == f"--hung={path}: not read within 0.01 s (a hung file system?)"
    assert set(refusals[1:]) == {f"--hung={path}: an earlier read has not returned yet (a hung file system?); "
                                 "it is not read again until that one returns"}
    wait_out("--hung")
    assert read_config_file(str(path), "--hung", timeout=HANG_SECONDS * 5) == b"s3cret\n"


def test_a_hung_reread_of_the_token_holds_no_lock_and_a_rotated_token_is_taken_once_it_returns(hung_mount, monkeypatch):
    """A merger refusing the token makes the RPC threads read the file again; while one read hangs, the other threads
    (and the scheduler's) get their answer at once instead of waiting for the lock for the read's whole timeout."""
    path = hung_mount / "token"
    path.write_text("new\n")
    monkeypatch.setattr(token_file, "REREAD_SECONDS", 0.0)
    monkeypatch.setattr(token_file, "REREAD_TIMEOUT_SECONDS", GIVE_UP_SECONDS)
    tokens = TokenFile("old", str(path))
    with ThreadPoolExecutor(2) as pool:
        rereading = pool.submit(tokens.newer_than, "old")
        wait_for(lambda: len(readers(KEY)) == 1)  # its read is in the kernel, for GIVE_UP_SECONDS more at most
        assert pool.submit(tokens.newer_than, "older").result(timeout=0.5) == "old"  # was: waited for the hung read's lock
        assert rereading.result(timeout=HANG_SECONDS) is None  # given up: no newer token yet
    assert tokens.newer_than("old") is None  # the hung read has not returned: not read again, no new thread
    assert len(readers(KEY)) <= 1
    wait_out(KEY)
    monkeypatch.setattr(token_file, "REREAD_TIMEOUT_SECONDS", HANG_SECONDS * 5)
    assert tokens.newer_than("old") == "new"
