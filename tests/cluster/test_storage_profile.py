"""The ``hdd`` storage profile on a real FUSE mount: reads cost what the profile says (a seek per scattered read,
the transfer rate for a sequential one, nothing inside the read-ahead), every call Spark and the merger make
works, and nothing stays mounted, however a run ends. Needs root and FUSE (CI has both)."""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from srlab.storage.model import DiskProfile
from srlab.storage.mount import StorageError, check_available, clean_stale, is_mounted, mounted
from srlab.storage.probe import probe

PROFILE = DiskProfile(seek_ms=20.0, read_mbps=50.0, readahead_kib=64)  # a long seek: the layer's own µs stay small beside it


@pytest.fixture(autouse=True)
def fuse_available():
    try:
        check_available()
    except StorageError as exc:
        pytest.skip(str(exc))


def mounts_text() -> str:
    with open("/proc/mounts") as f:
        return f.read()


@pytest.fixture
def disk(tmp_path) -> Path:
    with mounted(tmp_path / "backing", tmp_path / "disk", PROFILE) as mp:
        yield mp
    assert str(mp) not in mounts_text()


def test_scattered_reads_cost_a_seek_and_a_sequential_read_the_transfer_rate(disk):
    measured = probe(disk, file_bytes=4 << 20, requests=10)
    # each scattered read: a seek and the read-ahead it fills
    assert measured.request_seconds == pytest.approx(PROFILE.seek_seconds + PROFILE.transfer_seconds(PROFILE.readahead_bytes), rel=0.2)
    assert measured.read_mbps == pytest.approx(PROFILE.read_mbps, rel=0.2)


def test_a_read_inside_the_read_ahead_buffer_costs_nothing_more(disk):
    path = disk / "segments"
    path.write_bytes(os.urandom(1 << 20))
    seeks, hits = [], []
    fd = os.open(path, os.O_RDONLY)
    try:
        for start in (800_000, 600_000, 400_000, 200_000, 0):  # back to front: each first read a seek
            t = time.perf_counter()
            os.pread(fd, 4096, start)
            seeks.append(time.perf_counter() - t)
            t = time.perf_counter()
            os.pread(fd, 16384, start + 32768)  # inside the 64 KiB read ahead
            hits.append(time.perf_counter() - t)
    finally:
        os.close(fd)
    assert statistics.median(seeks) >= 0.8 * PROFILE.seek_seconds
    assert statistics.median(hits) < 0.2 * PROFILE.seek_seconds, hits


def test_spark_index_files_read_as_if_cached(disk):
    """Every fetch of a block reads its map output's index: a few hot KiB a node keeps in memory."""
    (disk / "shuffle_0_1_0.index").write_bytes(bytes(8 * 401))
    (disk / "shuffle_0_1_0.data").write_bytes(bytes(8 * 401))
    reads: dict[str, list[float]] = {"index": [], "data": []}
    for reducer in (300, 200, 100, 0):
        for kind in reads:
            with open(disk / f"shuffle_0_1_0.{kind}", "rb", buffering=0) as f:  # a new handle per fetch, as Spark's
                t = time.perf_counter()
                f.seek(8 * reducer)
                f.read(16)
                reads[kind].append(time.perf_counter() - t)
    assert statistics.median(reads["index"]) < 0.2 * PROFILE.seek_seconds, reads
    assert statistics.median(reads["data"]) >= 0.8 * PROFILE.seek_seconds, reads  # the same reads of any other file: a seek each


def test_the_calls_spark_and_the_merger_make_pass_through(disk, tmp_path):
    """Appends (Spark's block writer), temp file + hard link + rename (the merger's publish), an exclusive
    flock (its journal), a file unlinked while open (a shuffle cleaned while read), fsync of a dir."""
    d = disk / "blockmgr" / "0c"
    d.mkdir(parents=True)
    for chunk in (b"abc", b"def"):
        with open(d / "shuffle_0_1_0.data", "ab") as f:
            f.write(chunk)
    os.link(d / "shuffle_0_1_0.data", d / "merged.tmp")
    os.rename(d / "merged.tmp", d / "shuffle_0_9_0.data")
    assert (d / "shuffle_0_9_0.data").read_bytes() == b"abcdef" and os.stat(d / "shuffle_0_9_0.data").st_nlink == 2
    with pytest.raises(FileExistsError):
        os.open(d / "shuffle_0_9_0.data", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    lock = os.open(disk / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    other = os.open(disk / "lock", os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(other)
    os.close(lock)
    fd = os.open(d / "shuffle_0_1_0.data", os.O_RDONLY)
    os.unlink(d / "shuffle_0_1_0.data")
    assert os.pread(fd, 6, 0) == b"abcdef"
    os.close(fd)
    dir_fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(dir_fd)
    os.close(dir_fd)
    os.truncate(d / "shuffle_0_9_0.data", 3)
    os.chmod(d / "shuffle_0_9_0.data", 0o600)
    os.utime(d / "shuffle_0_9_0.data", ns=(10**9, 2 * 10**9))
    st = os.stat(d / "shuffle_0_9_0.data")
    assert (st.st_size, st.st_mode & 0o777, st.st_mtime_ns) == (3, 0o600, 2 * 10**9)
    assert sorted(os.listdir(tmp_path / "backing" / "blockmgr" / "0c")) == ["shuffle_0_9_0.data"]  # no hidden leftovers
    assert os.statvfs(disk).f_blocks > 0


def test_nothing_stays_mounted_when_the_block_raises(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with mounted(tmp_path / "backing", tmp_path / "disk", PROFILE) as mp:
            (mp / "written").write_bytes(b"x")
            assert is_mounted(mp)
            raise RuntimeError("boom")
    assert str(mp) not in mounts_text()
    assert (tmp_path / "backing" / "written").read_bytes() == b"x"


def test_a_crashed_disks_stale_mount_is_found_and_detached(tmp_path):
    mp = tmp_path / "disk"
    (tmp_path / "backing").mkdir()
    mp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "srlab.storage.serve", str(tmp_path / "backing"), str(mp)], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not is_mounted(mp):
            assert proc.poll() is None and time.monotonic() < deadline, "the disk did not mount"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # the disk's process dies without unmounting
        proc.wait(10)
        with pytest.raises(OSError) as err:
            os.listdir(mp)
        assert err.value.errno == errno.ENOTCONN
        assert str(mp) in clean_stale()
        assert not is_mounted(mp) and str(mp) not in mounts_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        if is_mounted(mp):
            subprocess.run(["umount", "-l", str(mp)], check=False)


def test_a_killed_run_leaves_nothing_mounted(tmp_path):
    """A bench killed outright (no unwinding): its disk's process sees its parent gone and unmounts."""
    mp = tmp_path / "disk"
    holder = ("import sys, time\nfrom srlab.storage.model import DiskProfile\nfrom srlab.storage.mount import mounted\n"
              f"with mounted({str(tmp_path / 'backing')!r}, {str(mp)!r}, DiskProfile()):\n"
              "    print('mounted', flush=True)\n    time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "mounted"
        assert is_mounted(mp)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 15
        while is_mounted(mp) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert str(mp) not in mounts_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        if is_mounted(mp):
            subprocess.run(["umount", "-l", str(mp)], check=False)
