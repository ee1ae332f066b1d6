"""Worker-side merge (Riffle, thesis §4.3.1, Algorithm 2).

For each reduce partition in order, the partition's block of every input is appended to the output.
Each input is read front to back through its own buffer, and the output is written with gathered
``writev`` requests of up to the write-buffer size straight from those buffers, so the disk sees few
large sequential requests even though blocks interleave across inputs, and no byte is copied twice
in memory. Blocks are copied as raw bytes. Index offsets are streamed a window at a time, so memory does not
grow with the number of partitions beyond the 8 bytes per partition of the reply.

Every file operation is relative to directory descriptors obtained from the daemon's roots
(:mod:`riffle.merger.paths`). The output is written under temp names, then published without
replacing anything: a journal record first, then ``link`` of the data file, then of the index (the
file Spark reads first), then the temps go and the record is committed (:mod:`riffle.merger.journal`).
"""

from __future__ import annotations

import errno
import operator
import os
import sys
import threading
import uuid
from array import array
from collections.abc import Callable
from dataclasses import dataclass

from riffle.merger.journal import Journal, Record, unlink_if_ours, unlink_quietly
from riffle.merger.paths import PRIVATE_PREFIX, Location, PathRefused, Roots, open_dir_at, open_input_at
from riffle.shuffle.layout import CorruptShuffleFile, block_location, data_file_name, index_file_name

TEMP_PREFIX = f"{PRIVATE_PREFIX}-tmp-"  # temp names are private: no request may name them, the sweep finds them
INDEX_WINDOW = 8192             # partitions whose offsets an input holds at a time
REPLY_BYTES_PER_PARTITION = 48  # the reply's lengths: our array, the message's copy, its serialized form
IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") else 1024
CRASH_ENV = "RIFFLE_MERGER_CRASH_AT"  # fault injection for tests: exit abruptly at this publish step
PUBLISH_STEPS = ("temps-written", "recorded", "data-linked", "index-linked", "temps-removed", "committed")
_CRASH_AT = os.environ.get(CRASH_ENV)


class MergeCancelled(RuntimeError):
    pass


class DiskFull(OSError):
    pass


class MissingInput(FileNotFoundError):
    pass


DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _as_disk_full(exc: OSError, doing: str, path: object) -> OSError:
    """A :class:`DiskFull` naming the file when ``exc`` means no space (or file size limit), else ``exc``."""
    if exc.errno in DISK_FULL_ERRNOS:
        return DiskFull(exc.errno, f"disk full {doing} {path}: {exc.strerror}")
    return exc


def _step(name: str) -> None:
    if name == _CRASH_AT:
        os._exit(86)


def memory_needed(fan_in: int, num_partitions: int, read_buffer: int, write_buffer: int) -> int:
    """Bytes one merge may hold: its buffers, the index windows and its reply's partition lengths."""
    window = 8 * (INDEX_WINDOW + 1)
    return fan_in * (read_buffer + window) + write_buffer + window + num_partitions * REPLY_BYTES_PER_PARTITION


def fds_needed(fan_in: int, num_dirs: int) -> int:
    """Descriptors one merge holds: data and index of each input, the output's two, its directories."""
    return 2 * fan_in + 2 + 2 * num_dirs + 4


@dataclass(frozen=True)
class MergeSpec:
    app_id: str
    shuffle_id: int
    map_ids: tuple[int, ...]
    merged_map_id: int
    num_partitions: int
    sub_dirs: int


@dataclass(frozen=True)
class MergeResult:
    partition_lengths: array
    bytes_written: int
    data_path: str
    index_path: str


class _Reader:
    """Sequential reads of one input through its own buffer."""

    def __init__(self, fd: int, buffer: memoryview, name: str):
        self.fd, self.buf, self.name = fd, buffer, name
        self.start = self.end = 0

    def copy_to(self, writer: _Writer, length: int) -> None:
        while length > 0:
            if self.start == self.end:
                writer.flush()  # pending writes may still point into this buffer
                got = os.readv(self.fd, [self.buf])
                if got == 0:
                    raise CorruptShuffleFile(f"{self.name}: data file ended before its index said")
                self.start, self.end = 0, got
            take = min(length, self.end - self.start)
            writer.put(self.buf[self.start:self.start + take])
            self.start += take
            length -= take


class _Writer:
    """Gathered sequential writes: blocks are written straight from the read buffers with ``writev``, in
    requests of up to ``batch`` bytes (no copy into a write buffer); a reader flushes before it refills."""

    def __init__(self, fd: int, batch: int, name: str):
        self.fd, self.batch, self.name = fd, batch, name
        self.pending: list[memoryview] = []
        self.size = 0
        self.written = 0

    def put(self, chunk: memoryview) -> None:
        self.pending.append(chunk)
        self.size += len(chunk)
        if self.size >= self.batch or len(self.pending) >= IOV_MAX:
            self.flush()

    def flush(self) -> None:
        views = self.pending
        while views:
            try:
                n = os.writev(self.fd, views)
            except OSError as exc:
                raise _as_disk_full(exc, "writing", self.name) from exc
            self.written += n
            done = 0
            while done < len(views) and n >= len(views[done]):
                n -= len(views[done])
                done += 1
            views = views[done:]
            if n:
                views[0] = views[0][n:]
        self.pending = []
        self.size = 0


def _write_all(fd: int, view: memoryview | bytes, name: str) -> None:
    view = memoryview(view)
    while len(view):
        try:
            n = os.write(fd, view)
        except OSError as exc:
            raise _as_disk_full(exc, "writing", name) from exc
        view = view[n:]


def _big_endian(values: array) -> bytes:
    if sys.byteorder == "little":
        values = array("q", values)
        values.byteswap()
    return values.tobytes()


class _IndexStream:
    """One input's index, read and validated a window of offsets at a time."""

    def __init__(self, fd: int, num_partitions: int, data_length: int, name: str):
        self.fd, self.partitions, self.data_length, self.name = fd, num_partitions, data_length, name
        size = os.fstat(fd).st_size
        if size != (num_partitions + 1) * 8:
            raise CorruptShuffleFile(f"{name}: {size} bytes, expected {(num_partitions + 1) * 8} for {num_partitions} partitions")
        self.last = 0

    def lengths(self, start: int, end: int) -> array:
        raw = os.pread(self.fd, (end - start + 1) * 8, start * 8)
        if len(raw) != (end - start + 1) * 8:
            raise CorruptShuffleFile(f"{self.name}: index shrank while being read")
        offs = array("q", raw)
        if sys.byteorder == "little":
            offs.byteswap()
        if offs[0] != self.last:
            raise CorruptShuffleFile(f"{self.name}: offset of partition {start} is {offs[0]}, expected {self.last}")
        # a compact array, not a list: every input's window is held at once, and a list of ints past the
        # small-int cache costs five times the 8 bytes a partition that memory_needed reserves
        out = array("q", map(operator.sub, offs[1:], offs[:-1]))
        if min(out) < 0:
            raise CorruptShuffleFile(f"{self.name}: offsets decrease between partitions {start} and {end}")
        self.last = offs[-1]
        if end == self.partitions and self.last != self.data_length:
            raise CorruptShuffleFile(f"{self.name}: last offset {self.last} does not match data file length {self.data_length}")
        return out


class _Dirs:
    """Descriptors of an executor's local dirs and the sub dirs a merge touches; closed together."""

    def __init__(self, roots: Roots, dirs: list[Location]):
        self.roots, self.locs, self.fds = roots, dirs, []
        self._subs: dict[tuple[int, str], int] = {}
        try:
            for loc in dirs:
                self.fds.append(roots.open_dir(loc))
        except BaseException:
            self.close()
            raise

    def where(self, name: str, sub_dirs: int) -> tuple[int, str]:
        return block_location(len(self.locs), name, sub_dirs)

    def sub(self, name: str, sub_dirs: int, create: bool = False) -> int:
        """The descriptor of the sub dir holding ``name`` (``FileNotFoundError`` if it does not exist)."""
        key = self.where(name, sub_dirs)
        if key not in self._subs:
            self._subs[key] = open_dir_at(self.fds[key[0]], key[1], self.path(name, sub_dirs), create, parents_owner=True)
        return self._subs[key]

    def open_input(self, name: str, sub_dirs: int) -> int:
        """Open the input ``name`` through its sub dir's descriptor, closed at once: the inputs of a wide merge
        spread over as many sub dirs as files, and holding those would double the descriptors a merge needs."""
        i, sub = self.where(name, sub_dirs)
        path = self.path(name, sub_dirs)
        try:
            sub_fd = open_dir_at(self.fds[i], sub, path)
            try:
                return open_input_at(sub_fd, name, path)
            finally:
                os.close(sub_fd)
        except FileNotFoundError as exc:
            raise MissingInput(f"map output {path} does not exist") from exc

    def dir_of(self, name: str, sub_dirs: int) -> tuple[str, ...]:
        i, sub = self.where(name, sub_dirs)
        return (self.roots.paths[self.locs[i].root], *self.locs[i].parts, sub)

    def path(self, name: str, sub_dirs: int) -> str:
        i, sub = self.where(name, sub_dirs)
        return self.roots.display(self.locs[i], sub, name)

    def close(self) -> None:
        for fd in [*self._subs.values(), *self.fds]:
            os.close(fd)
        self._subs.clear()
        self.fds = []


def _open_inputs(d: _Dirs, spec: MergeSpec) -> tuple[list[int], list[_IndexStream], list[str]]:
    fds: list[int] = []
    streams: list[_IndexStream] = []
    names: list[str] = []
    try:
        for m in spec.map_ids:
            for name in (data_file_name(spec.shuffle_id, m), index_file_name(spec.shuffle_id, m)):
                fds.append(d.open_input(name, spec.sub_dirs))
            if hasattr(os, "posix_fadvise"):  # each input is read front to back: ask for the larger read-ahead
                os.posix_fadvise(fds[-2], 0, 0, os.POSIX_FADV_SEQUENTIAL)
            names.append(d.path(data_file_name(spec.shuffle_id, m), spec.sub_dirs))
            streams.append(_IndexStream(fds[-1], spec.num_partitions, os.fstat(fds[-2]).st_size,
                                        d.path(index_file_name(spec.shuffle_id, m), spec.sub_dirs)))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds, streams, names


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


def merge_map_outputs(
    roots: Roots,
    journal: Journal,
    dirs: list[Location],
    spec: MergeSpec,
    read_buffer: int,
    write_buffer: int,
    cancel: threading.Event | None = None,
    progress: Callable[[int], None] | None = None,
    durable: bool = True,
) -> MergeResult:
    """Merge the spec's map outputs into its merged map id's data and index files; all or nothing, never replacing.

    ``durable=False`` skips the fsyncs (publishing stays all or nothing): Spark itself never fsyncs
    shuffle files, and a merged file lost in a crash is recomputed.
    """
    if spec.num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    if not spec.map_ids:
        raise ValueError("nothing to merge")
    data_name = data_file_name(spec.shuffle_id, spec.merged_map_id)
    index_name = index_file_name(spec.shuffle_id, spec.merged_map_id)
    d = _Dirs(roots, dirs)
    try:
        data_dir = d.sub(data_name, spec.sub_dirs, create=True)
        index_dir = d.sub(index_name, spec.sub_dirs, create=True)
        for dir_fd, name in ((data_dir, data_name), (index_dir, index_name)):
            if _exists(dir_fd, name):
                raise FileExistsError(f"{d.path(name, spec.sub_dirs)} already exists; merged files are never rewritten")
        fds, streams, names = _open_inputs(d, spec)
        try:
            return _merge(d, journal, spec, fds, streams, names, data_dir, index_dir, data_name, index_name, read_buffer,
                          write_buffer, cancel, progress, durable)
        finally:
            for fd in fds:
                os.close(fd)
    finally:
        d.close()


def _merge(d: _Dirs, journal: Journal, spec: MergeSpec, fds: list[int], streams: list[_IndexStream], names: list[str],
           data_dir: int, index_dir: int, data_name: str, index_name: str, read_buffer: int, write_buffer: int,
           cancel: threading.Event | None, progress: Callable[[int], None] | None, durable: bool) -> MergeResult:
    token = uuid.uuid4().hex
    tmp_data, tmp_index = f"{TEMP_PREFIX}{token}-{data_name}", f"{TEMP_PREFIX}{token}-{index_name}"
    data_path, index_path = d.path(data_name, spec.sub_dirs), d.path(index_name, spec.sub_dirs)
    create = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    out_fd = idx_fd = -1
    created: list[tuple[int, str]] = []
    journal_name = None
    try:
        out_fd = os.open(tmp_data, create, 0o644, dir_fd=data_dir)
        created.append((data_dir, tmp_data))
        idx_fd = os.open(tmp_index, create, 0o644, dir_fd=index_dir)
        created.append((index_dir, tmp_index))
        view = memoryview(bytearray(len(streams) * read_buffer))
        readers = [_Reader(fds[2 * i], view[i * read_buffer:(i + 1) * read_buffer], names[i]) for i in range(len(streams))]
        writer = _Writer(out_fd, write_buffer, data_path)
        lengths = array("q")
        _write_all(idx_fd, _big_endian(array("q", [0])), index_path)
        written = 0
        for start in range(0, spec.num_partitions, INDEX_WINDOW):
            end = min(spec.num_partitions, start + INDEX_WINDOW)
            per_input = [s.lengths(start, end) for s in streams]
            totals = [0] * (end - start)
            for r in range(end - start):
                if cancel is not None and cancel.is_set():
                    raise MergeCancelled(f"merge into {data_name} cancelled at partition {start + r} of {spec.num_partitions}")
                total = 0
                for reader, lens in zip(readers, per_input):
                    size = lens[r]
                    if size:
                        reader.copy_to(writer, size)
                        total += size
                totals[r] = total
                if progress is not None and total:
                    progress(total)
            window = array("q", totals)
            lengths.extend(window)
            cumulative = array("q", bytes(8 * len(window)))
            for i, n in enumerate(totals):
                written += n
                cumulative[i] = written
            _write_all(idx_fd, _big_endian(cumulative), index_path)
        writer.flush()
        for fd, path in ((out_fd, data_path), (idx_fd, index_path)):
            if durable:
                try:
                    os.fsync(fd)
                except OSError as exc:
                    raise _as_disk_full(exc, "syncing", path) from exc
        data_inode, index_inode = os.fstat(out_fd), os.fstat(idx_fd)
        os.close(out_fd)
        os.close(idx_fd)
        out_fd = idx_fd = -1
        _step("temps-written")
        record = Record(spec.app_id, spec.shuffle_id, d.dir_of(data_name, spec.sub_dirs), d.dir_of(index_name, spec.sub_dirs),
                        data_name, index_name, tmp_data, tmp_index, (data_inode.st_dev, data_inode.st_ino),
                        (index_inode.st_dev, index_inode.st_ino))
        journal_name = journal.begin(record)
        _step("recorded")
        _publish(data_dir, tmp_data, data_name, data_path)
        if durable and index_dir != data_dir:
            os.fsync(data_dir)  # the data's link is on disk before the index's can be
        _step("data-linked")
        try:
            _publish(index_dir, tmp_index, index_name, index_path)
        except BaseException:
            unlink_if_ours(data_dir, data_name, record.data_inode)
            raise
        _step("index-linked")
    except BaseException:
        for fd in (out_fd, idx_fd):
            if fd >= 0:
                os.close(fd)
        for dir_fd, name in created:
            unlink_quietly(dir_fd, name)
        if journal_name is not None:
            journal.abandon(journal_name)
        raise
    # published: from here on nothing can undo it; an interrupted tail is finished by recovery
    for dir_fd, name in created:
        unlink_quietly(dir_fd, name)
    _step("temps-removed")
    if durable:
        os.fsync(data_dir)
        if index_dir != data_dir:
            os.fsync(index_dir)
    journal.commit(journal_name, record)
    _step("committed")
    return MergeResult(lengths, written, data_path, index_path)


def _publish(dir_fd: int, tmp: str, name: str, path: str) -> None:
    """Give the temp file its final name; never replaces an existing file."""
    try:
        os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError as exc:
        raise FileExistsError(f"{path} already exists; merged files are never rewritten") from exc


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
