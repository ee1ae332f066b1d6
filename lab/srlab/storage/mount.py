"""Mounting and unmounting simulated disks: what a run may mount, one disk for the length of a ``with``
block, and the stale mounts a crashed run left.

A disk is served by its own process (:mod:`srlab.storage.serve`) in its own session, so a Ctrl-C of the
bench reaches the bench, which unmounts in order. If the bench dies without unwinding, the kernel signals
the disk's process (parent-death signal) and libfuse unmounts. If the disk's process itself is killed, its
mount is left "not connected"; :func:`clean_stale` finds and detaches those.
"""

from __future__ import annotations

import ctypes
import errno
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from srlab.storage.model import DiskProfile
from srlab.storage.serve import FSNAME

MOUNT_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
MNT_DETACH = 2


class StorageError(ValueError):
    """A simulated disk cannot be used here; the message says why and what to do (a ValueError: the commands
    print it as one ``error:`` line and exit 2)."""


def check_available() -> None:
    """Raises :class:`StorageError` unless this process can mount simulated disks (root, /dev/fuse, fusepy, libfuse2)."""
    if os.geteuid() != 0:
        raise StorageError("--storage hdd needs root: it mounts a FUSE file system per node (run as root, or use --storage local)")
    if not os.path.exists("/dev/fuse"):
        raise StorageError("--storage hdd needs FUSE, and this kernel or container has no /dev/fuse")
    try:
        import fuse  # noqa: F401
    except ImportError:
        raise StorageError("--storage hdd needs the fusepy package (scripts/setup.sh installs it: pip install fusepy)") from None
    except OSError:  # fusepy found no libfuse.so.2
        raise StorageError("--storage hdd needs libfuse 2 (scripts/setup.sh installs it: apt-get install libfuse2)") from None


def _unescape(field: str) -> str:
    """A /proc/mounts field: spaces, tabs, newlines and backslashes are octal escapes there."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def disk_mounts() -> list[str]:
    """Mount points of simulated disks, from /proc/mounts."""
    with open("/proc/mounts") as f:
        rows = [line.split() for line in f]
    return [_unescape(r[1]) for r in rows if len(r) > 2 and r[0] == FSNAME]


def is_mounted(mountpoint: str | os.PathLike[str]) -> bool:
    return os.path.realpath(mountpoint) in disk_mounts()


def _detach(mountpoint: str) -> None:
    """Lazy unmount (gone from the namespace at once, even while files on it are open)."""
    if ctypes.CDLL(None, use_errno=True).umount2(os.fsencode(mountpoint), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOENT):  # not (or no longer) a mount point
            raise StorageError(f"could not unmount {mountpoint}: {os.strerror(err)}")


def _stale(mountpoint: str) -> bool:
    """Whether the disk's process is gone (statfs always asks it; a stat may be answered from the kernel's cache)."""
    try:
        os.statvfs(mountpoint)
    except OSError as exc:
        return exc.errno == errno.ENOTCONN
    return False


def clean_stale() -> list[str]:
    """Detaches every simulated disk whose process is gone (a crashed run's); returns their mount points."""
    cleaned = [m for m in disk_mounts() if _stale(m)]
    for m in cleaned:
        _detach(m)
    return cleaned


def _serve_command(root: str, mountpoint: str, profile: DiskProfile) -> list[str]:
    return [sys.executable, "-m", "srlab.storage.serve", root, mountpoint, "--seek-ms", str(profile.seek_ms),
            "--read-mbps", str(profile.read_mbps), "--readahead-kib", str(profile.readahead_kib), "--parent-pid", str(os.getpid()),
            *(() if profile.index_files_cached else ("--charge-index-files",))]


def _stop(proc: subprocess.Popen, mountpoint: str) -> None:
    proc.terminate()  # libfuse unmounts on SIGTERM
    try:
        proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(STOP_TIMEOUT)
    if is_mounted(mountpoint):
        _detach(mountpoint)


@contextmanager
def mounted(root: str | os.PathLike[str], mountpoint: str | os.PathLike[str], profile: DiskProfile,
            log_file: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """``root`` (a directory on the real disk) mounted at ``mountpoint`` as a disk of ``profile``, for the
    length of the block; nothing is left mounted afterwards, however the block ends. The disk process's
    own messages go to ``log_file`` (default: ``<root>.log``)."""
    check_available()
    root, mp = Path(root).resolve(), Path(mountpoint).resolve()
    if is_mounted(mp):
        if not _stale(str(mp)):
            raise StorageError(f"{mp} is already a mounted simulated disk (another run using this dir? if not: umount -l {mp})")
        _detach(str(mp))
    root.mkdir(parents=True, exist_ok=True)
    mp.mkdir(parents=True, exist_ok=True)
    log_path = Path(log_file) if log_file else root.with_name(root.name + ".log")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(_serve_command(str(root), str(mp), profile), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + MOUNT_TIMEOUT
        while not is_mounted(mp):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise StorageError(f"the simulated disk at {mp} did not mount (see {log_path}):\n{tail}")
            time.sleep(0.02)
        yield mp
    finally:
        _stop(proc, str(mp))
