"""What the daemon has published, per application, so cleanup and crash recovery touch only its own files.

Each merge writes a record (JSON) into ``<state>/pending/`` before it links anything into place, and
moves it to ``<state>/apps/<app key>/`` once both files are published. A record names the output's
directory (root + components), the file names, the temp names and the inode numbers of the files
the merge created, so a file of the same name that someone else created is never removed.

Recovery at start-up, for each pending record: if both final files are ours the pair is complete, so
the temps go and the record is committed; otherwise whichever final file is ours is removed with the
temps and the record. A crash at any instant thus leaves either
nothing or a complete pair.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import stat
import threading
import uuid
from collections.abc import Callable
from typing import TypeVar

from riffle.merger.faults import NO_FAULTS, Faults
from riffle.merger.paths import Location, Roots, open_dir_at, open_private_file
from riffle.merger.record import Record, app_key

log = logging.getLogger("riffle.merger")
T = TypeVar("T")
STATE_DIR_NAME = ".riffle-merger"


def _inode(dir_fd: int, name: str) -> tuple[int, int] | None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def unlink_if_ours(dir_fd: int, name: str, inode: tuple[int, int]) -> int | None:
    """Remove ``name`` if it is still the file we created; returns the bytes freed, None if not removed."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if (st.st_dev, st.st_ino) != inode:
        return None
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    return st.st_size


def unlink_quietly(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def _check_private(fd: int, path: str) -> None:
    """Refuse a state dir someone else could have written: its records steer what recovery and cleanup remove."""
    st = os.fstat(fd)
    if st.st_uid != os.geteuid():
        raise ValueError(f"merger state dir {path} is owned by uid {st.st_uid}, not this daemon's uid {os.geteuid()}; "
                         f"fix: remove it (or give --state-dir a directory of the daemon's own)")
    if st.st_mode & 0o022:
        raise ValueError(f"merger state dir {path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o}); "
                         f"fix: chmod go-w {path}")


class StateDirBusy(ValueError):
    """Another daemon holds the state dir's lock."""


class Journal:
    """Records under the daemon's state dir (by default ``.riffle-merger`` in its first root)."""

    def __init__(self, roots: Roots, state_dir: str | None = None, durable: bool = True, faults: Faults = NO_FAULTS):
        self.roots = roots
        self.durable = durable
        self.faults = faults
        self._apps_lock = threading.Lock()  # a commit's app dir is not removed as empty between its open and its rename
        if state_dir is None:
            self.fd = open_dir_at(roots.fds[0], STATE_DIR_NAME, STATE_DIR_NAME, create=True, mode=0o700)
            self.path = os.path.join(roots.paths[0], STATE_DIR_NAME)
        else:
            os.makedirs(state_dir, mode=0o700, exist_ok=True)
            self.fd = os.open(state_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            self.path = state_dir
        try:
            _check_private(self.fd, self.path)
            self.pending_fd = open_dir_at(self.fd, "pending", "pending", create=True, mode=0o700)
            _check_private(self.pending_fd, os.path.join(self.path, "pending"))
            self.apps_fd = open_dir_at(self.fd, "apps", "apps", create=True, mode=0o700)
            _check_private(self.apps_fd, os.path.join(self.path, "apps"))
        except BaseException:
            os.close(self.fd)
            raise
        # One daemon per state dir, for its whole life: another's pending records and temps are merges in
        # progress, not leftovers of a crash, so two daemons on one state dir would undo each other's work.
        self.lock_fd = -1
        try:
            self.lock_fd = open_private_file(self.fd, "lock", os.path.join(self.path, "lock"), create=True)
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BaseException as exc:
            if self.lock_fd >= 0:
                os.close(self.lock_fd)
                self.lock_fd = -1
            self._close_dirs()
            if isinstance(exc, BlockingIOError):
                raise StateDirBusy(f"another merger is running on state dir {self.path}; "
                                   "give each daemon its own --state-dir") from None
            raise

    def _close_dirs(self) -> None:
        for fd in (self.pending_fd, self.apps_fd, self.fd):
            os.close(fd)

    def close(self) -> None:
        """Release the state dir (closing twice is harmless)."""
        if self.lock_fd < 0:
            return
        self._close_dirs()
        os.close(self.lock_fd)  # releases the lock
        self.lock_fd = -1

    # -- writing --------------------------------------------------------------------------------
    def _write(self, dir_fd: int, name: str, payload: bytes) -> None:
        tmp = f".{name}.{uuid.uuid4().hex}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
        try:
            try:
                self.faults.fail("journal-write", os.path.join(self.path, name))
                if os.write(fd, payload) != len(payload):  # a short write is a full disk too
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.path.join(self.path, name))
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            unlink_quietly(dir_fd, tmp)  # no empty or partial record is left behind
            raise
        if self.durable:
            os.fsync(dir_fd)

    def begin(self, record: Record) -> str:
        """Record an imminent publish; returns the record's name."""
        name = f"{uuid.uuid4().hex}.json"
        self._write(self.pending_fd, name, record.encode())
        return name

    def _app_dir(self, app_id: str, create: bool) -> int:
        return open_dir_at(self.apps_fd, app_key(app_id), "app state", create=create)

    def commit(self, name: str, record: Record) -> None:
        """The pair is published: the record moves to its application."""
        with self._apps_lock:
            self.faults.fail("app-dir", os.path.join(self.path, "apps", app_key(record.app_id)))
            app_fd = self._app_dir(record.app_id, create=True)
            try:
                os.rename(name, name, src_dir_fd=self.pending_fd, dst_dir_fd=app_fd)
                if self.durable:
                    os.fsync(app_fd)
            finally:
                os.close(app_fd)

    def _drop_if_empty(self, key: str) -> None:
        """Remove an application's record dir once it holds nothing, so finished applications leave no trace."""
        with self._apps_lock:
            try:
                os.rmdir(key, dir_fd=self.apps_fd)
            except OSError:  # not empty (or already gone)
                pass

    def abandon(self, name: str) -> None:
        unlink_quietly(self.pending_fd, name)

    # -- reading --------------------------------------------------------------------------------
    def _records(self, dir_fd: int) -> list[tuple[str, Record]]:
        out = []
        for name in sorted(os.listdir(dir_fd)):
            if not name.endswith(".json") or name.startswith("."):
                continue
            try:
                fd = open_private_file(dir_fd, name, f"merge record {name}")
                try:
                    raw = os.read(fd, 1 << 20)
                finally:
                    os.close(fd)
                out.append((name, Record.decode(raw)))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("ignoring unreadable merge record %s: %s", name, exc)
        return out

    def _open(self, where: tuple[str, ...]) -> int | None:
        if not where or where[0] not in self.roots.paths:
            return None
        try:
            return self.roots.open_dir(Location(self.roots.paths.index(where[0]), tuple(where[1:])))
        except OSError:
            return None

    def recover(self) -> tuple[int, int]:
        """Finish or undo every publish a crash interrupted; returns (pairs kept, pairs undone)."""
        kept = undone = 0
        for name in os.listdir(self.pending_fd):
            if name.startswith("."):  # a record whose write a crash interrupted: its publish never began
                unlink_quietly(self.pending_fd, name)
        for name, rec in self._records(self.pending_fd):
            data_fd, index_fd = self._open(rec.data_dir), self._open(rec.index_dir)
            try:
                # both files must be there: after a power loss the index's link may have survived without the data's
                complete = (index_fd is not None and _inode(index_fd, rec.index) == rec.index_inode
                            and data_fd is not None and _inode(data_fd, rec.data) == rec.data_inode)
                if not complete:
                    for fd, fname, ino in ((index_fd, rec.index, rec.index_inode), (data_fd, rec.data, rec.data_inode)):
                        if fd is not None:
                            unlink_if_ours(fd, fname, ino)
                for fd, tmp in ((data_fd, rec.tmp_data), (index_fd, rec.tmp_index)):
                    if fd is not None:
                        unlink_quietly(fd, tmp)
                        if self.durable:
                            os.fsync(fd)
                if complete:
                    kept += 1
                    self.commit(name, rec)
                else:
                    undone += 1
                    self.abandon(name)
            finally:
                for fd in (data_fd, index_fd):
                    if fd is not None:
                        os.close(fd)
        return kept, undone

    def prune(self) -> int:
        """Forget published pairs that are gone (Spark removed the executor's dirs); returns records dropped."""
        return sum(self._each_app_dir(self._prune_app))

    def _prune_app(self, app_fd: int) -> int:
        dropped = 0
        for name, rec in self._records(app_fd):
            alive = False
            for where, fname, inode in ((rec.data_dir, rec.data, rec.data_inode), (rec.index_dir, rec.index, rec.index_inode)):
                dir_fd = self._open(where)
                if dir_fd is not None:
                    alive = alive or _inode(dir_fd, fname) == inode
                    os.close(dir_fd)
            if not alive:
                unlink_quietly(app_fd, name)
                dropped += 1
        return dropped

    def apps(self) -> set[str]:
        """The applications with published pairs on record (their ids, read from one record each)."""
        return {rec.app_id for records in self._each_app_dir(self._records, drop_empty=False) for _, rec in records[:1]}

    def _each_app_dir(self, visit: Callable[[int], T], drop_empty: bool = True) -> list[T]:
        """``visit`` each application's state dir (open only while visited; dropped after if left empty)."""
        results = []
        for key in os.listdir(self.apps_fd):
            try:
                app_fd = open_dir_at(self.apps_fd, key, "app state")
            except OSError:
                continue
            try:
                results.append(visit(app_fd))
            finally:
                os.close(app_fd)
            if drop_empty:
                self._drop_if_empty(key)
        return results

    def delete(self, app_id: str, keep: Callable[[Record], bool]) -> tuple[int, int]:
        """Delete the published pairs of ``app_id`` that ``keep`` rejects; returns (files, bytes)."""
        try:
            app_fd = self._app_dir(app_id, create=False)
        except FileNotFoundError:
            return 0, 0
        files = freed = 0
        try:
            for name, rec in self._records(app_fd):
                if rec.app_id != app_id or keep(rec):
                    continue
                for where, fname, inode in ((rec.index_dir, rec.index, rec.index_inode), (rec.data_dir, rec.data, rec.data_inode)):
                    dir_fd = self._open(where)
                    if dir_fd is None:
                        continue
                    try:
                        size = unlink_if_ours(dir_fd, fname, inode)
                    finally:
                        os.close(dir_fd)
                    if size is not None:
                        files += 1
                        freed += size
                unlink_quietly(app_fd, name)
        finally:
            os.close(app_fd)
        self._drop_if_empty(app_key(app_id))
        return files, freed
