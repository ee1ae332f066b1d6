"""Worker-side merge (Riffle, thesis §4.3.1, Algorithm 2).

For each reduce partition in order, the partition's block of every input is appended to the output.
Each input is therefore read front to back; it is read through its own buffer in large sequential
requests, and the output goes out through one write buffer, so the disk sees few large sequential
requests even though blocks interleave across inputs. Compressed or serialized blocks are copied as
raw bytes. The output is written to a temporary name next to its final place, fsynced, and renamed
into place only when complete; any failure removes it. Existing files are never overwritten.
"""

from __future__ import annotations

import errno
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from riffle.merger.paths import PathGuard
from riffle.shuffle.layout import CorruptShuffleFile, decode_index, encode_index

TEMP_PREFIX = ".riffle-tmp-"


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


@dataclass(frozen=True)
class MergeResult:
    partition_lengths: list[int]
    bytes_written: int
    data_path: Path
    index_path: Path


class _Reader:
    """Sequential reads of one input through its own buffer."""

    def __init__(self, fd: int, buffer: memoryview, name: str):
        self.fd, self.buf, self.name = fd, buffer, name
        self.start = self.end = 0

    def copy_to(self, writer: _Writer, length: int) -> None:
        while length > 0:
            if self.start == self.end:
                got = os.readv(self.fd, [self.buf])
                if got == 0:
                    raise CorruptShuffleFile(f"{self.name}: data file ended before its index said")
                self.start, self.end = 0, got
            take = min(length, self.end - self.start)
            writer.put(self.buf[self.start:self.start + take])
            self.start += take
            length -= take


class _Writer:
    """Sequential writes through one buffer."""

    def __init__(self, fd: int, buffer: memoryview, name: str):
        self.fd, self.buf, self.name = fd, buffer, name
        self.pos = 0
        self.written = 0

    def put(self, chunk: memoryview) -> None:
        while len(chunk):
            take = min(len(chunk), len(self.buf) - self.pos)
            self.buf[self.pos:self.pos + take] = chunk[:take]
            self.pos += take
            chunk = chunk[take:]
            if self.pos == len(self.buf):
                self.flush()

    def flush(self) -> None:
        view = self.buf[:self.pos]
        while len(view):
            try:
                n = os.write(self.fd, view)
            except OSError as exc:
                raise _as_disk_full(exc, "writing", self.name) from exc
            view = view[n:]
            self.written += n
        self.pos = 0


def _open_inputs(guard: PathGuard, inputs: list[tuple[Path, Path]], num_partitions: int) -> tuple[list[int], list[list[int]]]:
    fds: list[int] = []
    offsets: list[list[int]] = []
    try:
        for data_path, index_path in inputs:
            try:
                fd = guard.open_input(data_path)
            except FileNotFoundError as exc:
                raise MissingInput(f"map output {data_path} does not exist") from exc
            fds.append(fd)
            try:
                ifd = guard.open_input(index_path)
            except FileNotFoundError as exc:
                raise MissingInput(f"map output index {index_path} does not exist") from exc
            try:
                raw = os.pread(ifd, (num_partitions + 1) * 8 + 1, 0)
            finally:
                os.close(ifd)
            offsets.append(decode_index(raw, num_partitions, os.fstat(fd).st_size, str(index_path)))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds, offsets


def _durable_write(path: Path, payload: bytes, durable: bool = True) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(payload)
        while len(view):
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    except OSError as exc:
        raise _as_disk_full(exc, "writing", path) from exc
    finally:
        os.close(fd)


def merge_map_outputs(
    guard: PathGuard,
    inputs: list[tuple[Path, Path]],
    num_partitions: int,
    out_data: Path,
    out_index: Path,
    read_buffer: int,
    write_buffer: int,
    cancel: threading.Event | None = None,
    progress: Callable[[int], None] | None = None,
    durable: bool = True,
) -> MergeResult:
    """Merge ``inputs`` (data, index) into ``out_data``/``out_index``; all or nothing.

    ``durable=False`` skips the fsyncs (the temp-then-rename still makes the result all or nothing):
    Spark itself never fsyncs shuffle files, and a merged file lost in a crash is recomputed.
    """
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    if not inputs:
        raise ValueError("nothing to merge")
    for target in (out_data, out_index):
        guard.inside(target.parent)
        if os.path.lexists(target):
            raise FileExistsError(f"{target} already exists; merged files are never rewritten")
    fds, offsets = _open_inputs(guard, inputs, num_partitions)
    token = uuid.uuid4().hex
    tmp_data = out_data.parent / f"{TEMP_PREFIX}{token}-{out_data.name}"
    tmp_index = out_index.parent / f"{TEMP_PREFIX}{token}-{out_index.name}"
    out_fd = -1
    try:
        out_data.parent.mkdir(parents=True, exist_ok=True)
        out_index.parent.mkdir(parents=True, exist_ok=True)
        out_fd = os.open(tmp_data, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        arena = bytearray(len(fds) * read_buffer + write_buffer)
        view = memoryview(arena)
        readers = [_Reader(fd, view[i * read_buffer:(i + 1) * read_buffer], str(inputs[i][0])) for i, fd in enumerate(fds)]
        writer = _Writer(out_fd, view[len(fds) * read_buffer:], str(out_data))
        lengths = []
        for r in range(num_partitions):
            if cancel is not None and cancel.is_set():
                raise MergeCancelled(f"merge into {out_data.name} cancelled at partition {r} of {num_partitions}")
            total = 0
            for reader, offs in zip(readers, offsets):
                size = offs[r + 1] - offs[r]
                if size:
                    reader.copy_to(writer, size)
                    total += size
            lengths.append(total)
            if progress is not None and total:
                progress(total)
        writer.flush()
        try:
            if durable:
                os.fsync(out_fd)
        except OSError as exc:
            raise _as_disk_full(exc, "syncing", out_data) from exc
        os.close(out_fd)
        out_fd = -1
        _durable_write(tmp_index, encode_index(lengths), durable)
        os.rename(tmp_data, out_data)
        os.rename(tmp_index, out_index)
        if durable:
            _fsync_dir(out_data.parent)
            if out_index.parent != out_data.parent:
                _fsync_dir(out_index.parent)
        return MergeResult(lengths, sum(lengths), out_data, out_index)
    except BaseException:
        if out_fd >= 0:
            os.close(out_fd)
        for leftover in (tmp_data, tmp_index):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass
        raise
    finally:
        for fd in fds:
            os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale_temps(guard: PathGuard, max_depth: int = 4) -> list[Path]:
    """Delete temp files a crashed daemon left under its roots; returns what was removed."""
    removed = []
    for root in guard.roots:
        base_depth = len(root.parts)
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            if len(Path(dirpath).parts) - base_depth >= max_depth:
                dirnames[:] = []
            for name in filenames:
                if name.startswith(TEMP_PREFIX):
                    path = Path(dirpath) / name
                    try:
                        path.unlink()
                        removed.append(path)
                    except FileNotFoundError:
                        pass
    return removed
