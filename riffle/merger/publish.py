"""Publishing a merged pair: all or nothing, never replacing a file, whatever instant the daemon crashes at.

The pair is written under temp names (private: no request may name them, the sweep finds them), then
published without replacing anything: a journal record first, then ``link`` of the data file, then of
the index (the file Spark reads first), then the temps go and the record is committed
(:mod:`riffle.merger.journal`). A failure before the record is committed undoes everything (the client
has not been told of the pair yet), and a tail a crash interrupted is finished by the journal's recovery.
Temps a crash left before any record named them are removed by :func:`remove_stale_temps` at start-up.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from riffle.merger.errors import as_disk_full
from riffle.merger.faults import Faults
from riffle.merger.journal import Journal, unlink_if_ours, unlink_quietly
from riffle.merger.paths import PRIVATE_PREFIX, PathRefused, Roots, open_dir_at
from riffle.merger.record import Record

if TYPE_CHECKING:
    from riffle.merger.cancel import CancelToken

TEMP_PREFIX = f"{PRIVATE_PREFIX}-tmp-"  # temp names are private: no request may name them, the sweep finds them
T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    """Where a merged pair goes: its directories (open descriptors; Spark hashes each name to its own sub dir),
    its names, and what the journal records about them."""

    app_id: str
    shuffle_id: int
    data_dir: int
    index_dir: int
    data_name: str
    index_name: str
    data_path: str                # for messages
    index_path: str
    data_where: tuple[str, ...]   # the data file's dir as the journal records it: root's canonical path, then components
    index_where: tuple[str, ...]


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


def refuse_existing(target: Target) -> None:
    """Fail early, before any input is read, when either final name is taken (the links would refuse it anyway)."""
    for dir_fd, name, path in ((target.data_dir, target.data_name, target.data_path),
                               (target.index_dir, target.index_name, target.index_path)):
        if _exists(dir_fd, name):
            raise FileExistsError(f"{path} already exists; merged files are never rewritten")


def _link(dir_fd: int, tmp: str, name: str, path: str) -> None:
    """Give the temp file its final name; never replaces an existing file."""
    try:
        os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError as exc:
        raise FileExistsError(f"{path} already exists; merged files are never rewritten") from exc


def publish_pair(journal: Journal, target: Target, fill: Callable[[int, int], T], durable: bool, faults: Faults,
                 cancel: CancelToken | None = None) -> T:
    """Create the pair's temps, have ``fill(data_fd, index_fd)`` write them, then publish them; returns what ``fill`` did.

    ``cancel`` is committed just before the data file is linked: a cancel that came before undoes everything,
    one that comes after is refused by the token (the merge publishes).

    ``durable=False`` skips the fsyncs (publishing stays all or nothing): Spark itself never fsyncs
    shuffle files, and a merged file lost in a crash is recomputed.
    """
    t = target
    token = uuid.uuid4().hex
    tmp_data, tmp_index = f"{TEMP_PREFIX}{token}-{t.data_name}", f"{TEMP_PREFIX}{token}-{t.index_name}"
    create = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    out_fd = idx_fd = -1
    created: list[tuple[int, str]] = []
    journal_name = None
    try:
        try:
            faults.fail("temp-create", t.data_path)
            out_fd = os.open(tmp_data, create, 0o644, dir_fd=t.data_dir)
            created.append((t.data_dir, tmp_data))
            idx_fd = os.open(tmp_index, create, 0o644, dir_fd=t.index_dir)
            created.append((t.index_dir, tmp_index))
        except OSError as exc:
            raise as_disk_full(exc, "creating", t.data_path) from exc
        filled = fill(out_fd, idx_fd)
        try:
            faults.fail("data-write", t.data_path)
        except OSError as exc:
            raise as_disk_full(exc, "writing", t.data_path) from exc
        for fd, path in ((out_fd, t.data_path), (idx_fd, t.index_path)):
            if durable:
                try:
                    os.fsync(fd)
                except OSError as exc:
                    raise as_disk_full(exc, "syncing", path) from exc
        data_inode, index_inode = os.fstat(out_fd), os.fstat(idx_fd)
        os.close(out_fd)
        os.close(idx_fd)
        out_fd = idx_fd = -1
        faults.reached("temps-written")
        record = Record(t.app_id, t.shuffle_id, t.data_where, t.index_where, t.data_name, t.index_name, tmp_data, tmp_index,
                        (data_inode.st_dev, data_inode.st_ino), (index_inode.st_dev, index_inode.st_ino))
        try:
            journal_name = journal.begin(record)
        except OSError as exc:
            raise as_disk_full(exc, "recording the merge into", t.data_path) from exc
        faults.reached("recorded")
        if cancel is not None:
            cancel.commit(t.data_path)
        _link(t.data_dir, tmp_data, t.data_name, t.data_path)
        if durable and t.index_dir != t.data_dir:
            os.fsync(t.data_dir)  # the data's link is on disk before the index's can be
        faults.reached("data-linked")
        try:
            _link(t.index_dir, tmp_index, t.index_name, t.index_path)
        except BaseException:
            unlink_if_ours(t.data_dir, t.data_name, record.data_inode)
            raise
        faults.reached("index-linked")
    except BaseException:
        for fd in (out_fd, idx_fd):
            if fd >= 0:
                os.close(fd)
        for dir_fd, name in created:
            unlink_quietly(dir_fd, name)
        if journal_name is not None:
            journal.abandon(journal_name)
        raise
    # published: a crash from here on is finished by recovery; a failure (a full disk for the app's record dir)
    # is undone, since the client has not been told of the pair and Cleanup could not find it unrecorded
    try:
        for dir_fd, name in created:
            unlink_quietly(dir_fd, name)
        faults.reached("temps-removed")
        if durable:
            os.fsync(t.data_dir)
            if t.index_dir != t.data_dir:
                os.fsync(t.index_dir)
        journal.commit(journal_name, record)
    except OSError as exc:
        unlink_if_ours(t.index_dir, t.index_name, record.index_inode)
        unlink_if_ours(t.data_dir, t.data_name, record.data_inode)
        journal.abandon(journal_name)
        raise as_disk_full(exc, "recording the merge into", t.data_path) from exc
    faults.reached("committed")
    return filled


def remove_stale_temps(roots: Roots, max_depth: int = 4) -> list[str]:
    """Delete temp files a crashed daemon left under its roots, walking by descriptor; returns what was removed."""
    removed: list[str] = []

    def walk(fd: int, shown: str, depth: int) -> None:
        with os.scandir(fd) as it:
            entries = list(it)
        for entry in entries:
            if entry.name.startswith(TEMP_PREFIX) and entry.is_file(follow_symlinks=False):
                unlink_quietly(fd, entry.name)
                removed.append(f"{shown}/{entry.name}")
            elif depth < max_depth and entry.is_dir(follow_symlinks=False) and not entry.name.startswith(PRIVATE_PREFIX):
                try:
                    sub = open_dir_at(fd, entry.name, entry.name)
                except (OSError, PathRefused):
                    continue
                try:
                    walk(sub, f"{shown}/{entry.name}", depth + 1)
                finally:
                    os.close(sub)

    for fd, path in zip(roots.fds, roots.paths):
        walk(fd, path, 1)
    return removed
