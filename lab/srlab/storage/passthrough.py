"""The FUSE file system of one simulated disk: every call passes through to a directory on the real disk,
and every read takes as long as :class:`srlab.storage.model.SeekModel` says, one read at a time.

Each call is a few system calls on the backing directory and nothing else (no logging per request), so
the Python layer's own time stays small next to the costs it charges. A read's charge includes the real
read it does: it sleeps only for what is left of the cost. And the layer's time between one read's end
and the next one's start (the trip through the kernel and libfuse, 0.1-0.2 ms) is credited when the next
read comes right after (within ``CREDIT``): a stream of back-to-back reads then gets the profile's
transfer rate, not that less the layer's own time. Writes pass through uncharged and do not take the
disk's lock, so they never wait behind reads.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
from dataclasses import asdict
from typing import Any

from fuse import FuseOSError, Operations

from srlab.storage.model import DiskProfile, SeekModel

STAT_KEYS = ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks", "st_blksize")
STATVFS_KEYS = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail", "f_flag", "f_namemax")
CREDIT = 0.0005  # seconds: a read starting this soon after the disk fell idle starts when it fell idle
OPEN_FLAGS_DROPPED = os.O_CREAT | os.O_EXCL | os.O_APPEND  # the kernel resolved these; writes come with their offset


def _stat(st: os.stat_result) -> dict[str, int]:
    out = {k: getattr(st, k) for k in STAT_KEYS}
    out |= {"st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns}
    return out


class SlowDisk(Operations):
    """A pass-through to ``root`` whose reads cost what ``profile``'s disk charges."""

    use_ns = True          # times as integer nanoseconds
    flag_nullpath_ok = 1   # a file unlinked while open (hard_remove) stays usable through its handle

    def __init__(self, root: str, profile: DiskProfile):
        self.root = os.path.realpath(root)
        self.model = SeekModel(profile)
        self.busy = threading.Lock()  # the disk: one request at a time (not ``lock``: fusepy's name for POSIX locks)
        self.inodes: dict[int, int] = {}  # open handle of a charged file -> its inode (the head's "which file")
        self.idle_since = 0.0  # when the last read's charge ended (monotonic seconds)

    def _full(self, path: str) -> str:
        return self.root + path

    # -- reads: the only charged call ---------------------------------------------------------
    def read(self, path: str | None, size: int, offset: int, fi: Any) -> bytes:
        fd = fi.fh
        inode = self.inodes.get(fd)
        if inode is None:  # a file read as if cached
            return os.pread(fd, size, offset)
        with self.busy:
            now = time.monotonic()
            started = self.idle_since if now - self.idle_since < CREDIT else now
            cost = self.model.read(fd, inode, offset, size, os.fstat(fd).st_size)
            data = os.pread(fd, size, offset)
            self.idle_since = max(started + cost, now)
            left = self.idle_since - time.monotonic()
            if left > 0:
                time.sleep(left)
        return data

    def destroy(self, path: str) -> None:
        """At unmount: what the disk did, one line in its log (``<backing dir>.log``)."""
        print(json.dumps({"disk": self.root, **asdict(self.model.counters)}), file=sys.stderr, flush=True)

    # -- files --------------------------------------------------------------------------------
    def _opened(self, path: str, fd: int, fi: Any) -> int:
        fi.fh = fd
        if not (self.model.profile.index_files_cached and path.endswith(".index")):
            self.inodes[fd] = os.fstat(fd).st_ino
        return 0

    def open(self, path: str, fi: Any) -> int:
        return self._opened(path, os.open(self._full(path), fi.flags & ~OPEN_FLAGS_DROPPED), fi)

    def create(self, path: str, mode: int, fi: Any) -> int:
        return self._opened(path, os.open(self._full(path), (fi.flags & ~os.O_APPEND) | os.O_CREAT, mode), fi)

    def write(self, path: str | None, data: bytes, offset: int, fi: Any) -> int:
        return os.pwrite(fi.fh, data, offset)

    def release(self, path: str | None, fi: Any) -> int:
        fd = fi.fh
        with self.busy:  # the model is only touched under the disk's lock
            self.model.close(fd)
        self.inodes.pop(fd, None)
        os.close(fd)
        return 0

    def flush(self, path: str | None, fi: Any) -> int:
        return 0  # close(2) of a caller's descriptor; the backing one stays open until release

    def fsync(self, path: str | None, datasync: int, fi: Any) -> int:
        (os.fdatasync if datasync else os.fsync)(fi.fh)
        return 0

    def truncate(self, path: str | None, length: int, fi: Any = None) -> int:
        if fi:  # a handle (fusepy passes a NULL pointer, falsy, for none)
            os.ftruncate(fi.fh, length)
        else:
            os.truncate(self._full(path or ""), length)
        return 0

    def getattr(self, path: str | None, fi: Any = None) -> dict[str, int]:
        return _stat(os.fstat(fi.fh) if fi else os.lstat(self._full(path or "")))

    # -- names and directories ----------------------------------------------------------------
    def access(self, path: str, amode: int) -> int:
        if not os.access(self._full(path), amode):
            raise FuseOSError(errno.EACCES)
        return 0

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._full(path), mode)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        os.chown(self._full(path), uid, gid)
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        if times is None:
            os.utime(self._full(path))
        else:
            os.utime(self._full(path), ns=times)
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._full(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._full(path))
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._full(path))
        return 0

    def rename(self, old: str, new: str) -> int:
        os.rename(self._full(old), self._full(new))
        return 0

    def link(self, target: str, source: str) -> int:
        """``target``: the new name; ``source``: the existing file (fusepy's order)."""
        os.link(self._full(source), self._full(target))
        return 0

    def symlink(self, target: str, source: str) -> int:
        """``target``: the new link; ``source``: what it points to (fusepy's order)."""
        os.symlink(source, self._full(target))
        return 0

    def readlink(self, path: str) -> str:
        return os.readlink(self._full(path))

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._full(path))]

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self._full(path))
        return {k: getattr(st, k) for k in STATVFS_KEYS}
