"""The copy loop of a merge (Riffle, thesis §4.3.1, Algorithm 2): block-by-block concatenation of map outputs.

For each reduce partition in order, the partition's block of every input is appended to the output.
Each input is read front to back through its own buffer, and the output is written with gathered
``writev`` requests of up to the write-buffer size straight from those buffers, so the disk sees few
large sequential requests even though blocks interleave across inputs, and no byte is copied twice
in memory. Blocks are copied as raw bytes. Index offsets are streamed a window at a time, so memory does not
grow with the number of partitions beyond the 8 bytes per partition of the reply.

The loop only reads and writes open descriptors: which files they are, and how the output gets its
final name, is the business of :mod:`riffle.merger.engine` and :mod:`riffle.merger.publish`.
"""

from __future__ import annotations

import operator
import os
import sys
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from riffle.merger.errors import MergeCancelled, as_disk_full
from riffle.shuffle.layout import CorruptShuffleFile


class Cancellable(Protocol):
    def is_set(self) -> bool: ...


INDEX_WINDOW = 8192             # partitions whose offsets an input holds at a time
REPLY_BYTES_PER_PARTITION = 48  # the reply's lengths: our array, the message's copy, its serialized form
IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") else 1024


def memory_needed(fan_in: int, num_partitions: int, read_buffer: int, write_buffer: int) -> int:
    """Bytes one merge may hold: its buffers, the index windows and its reply's partition lengths."""
    window = 8 * (INDEX_WINDOW + 1)
    return fan_in * (read_buffer + window) + write_buffer + window + num_partitions * REPLY_BYTES_PER_PARTITION


class IndexStream:
    """One input's index, read and validated a window of offsets at a time."""

    def __init__(self, fd: int, num_partitions: int, data_length: int, name: str):
        self.fd, self.partitions, self.data_length, self.name = fd, num_partitions, data_length, name
        size = os.fstat(fd).st_size
        if size != (num_partitions + 1) * 8:
            raise CorruptShuffleFile(f"{name}: {size} bytes, expected {(num_partitions + 1) * 8} for {num_partitions} partitions")
        self.last = 0
        self.bytes_read = 0

    def lengths(self, start: int, end: int) -> array:
        raw = os.pread(self.fd, (end - start + 1) * 8, start * 8)
        if len(raw) != (end - start + 1) * 8:
            raise CorruptShuffleFile(f"{self.name}: index shrank while being read")
        self.bytes_read += len(raw)
        offs = array("q", raw)
        if sys.byteorder == "little":
            offs.byteswap()
        if offs[0] != self.last:
            raise CorruptShuffleFile(f"{self.name}: offset of partition {start} is {offs[0]}, expected {self.last}")
        # checked before subtracting: offsets at the int64 limits would overflow a difference
        if any(map(operator.gt, offs[:-1], offs[1:])):
            raise CorruptShuffleFile(f"{self.name}: offsets decrease between partitions {start} and {end}")
        if offs[-1] > self.data_length:
            raise CorruptShuffleFile(f"{self.name}: offset {offs[-1]} of partition {end} does not match data file length {self.data_length}")
        # a compact array, not a list: every input's window is held at once, and a list of ints past the
        # small-int cache costs five times the 8 bytes a partition that memory_needed reserves
        out = array("q", map(operator.sub, offs[1:], offs[:-1]))
        self.last = offs[-1]
        if end == self.partitions and self.last != self.data_length:
            raise CorruptShuffleFile(f"{self.name}: last offset {self.last} does not match data file length {self.data_length}")
        return out


@dataclass(frozen=True)
class Input:
    """One map output, open: its data file's descriptor, its index and the data file's path for messages."""

    data_fd: int
    index: IndexStream
    name: str


@dataclass(frozen=True)
class Output:
    """The merged pair being written (temp files, still unnamed to Spark), with the final paths for messages."""

    data_fd: int
    index_fd: int
    data_path: str
    index_path: str


@dataclass(frozen=True)
class Copied:
    partition_lengths: array
    bytes_written: int
    bytes_read: int  # from the inputs' data and index files


class _Reader:
    """Sequential reads of one input through its own buffer."""

    def __init__(self, fd: int, buffer: memoryview, name: str):
        self.fd, self.buf, self.name = fd, buffer, name
        self.start = self.end = 0
        self.bytes_read = 0

    def copy_to(self, writer: _Writer, length: int) -> None:
        while length > 0:
            if self.start == self.end:
                writer.flush()  # pending writes may still point into this buffer
                got = os.readv(self.fd, [self.buf])
                if got == 0:
                    raise CorruptShuffleFile(f"{self.name}: data file ended before its index said")
                self.start, self.end = 0, got
                self.bytes_read += got
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
                raise as_disk_full(exc, "writing", self.name) from exc
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
            raise as_disk_full(exc, "writing", name) from exc
        view = view[n:]


def _big_endian(values: array) -> bytes:
    if sys.byteorder == "little":
        values = array("q", values)
        values.byteswap()
    return values.tobytes()


def concatenate(inputs: Sequence[Input], output: Output, num_partitions: int, read_buffer: int, write_buffer: int,
                cancel: Cancellable | None = None, progress: Callable[[int], None] | None = None) -> Copied:
    """Write every partition's blocks of ``inputs``, in input order, to ``output``, and its index after them.

    ``cancel`` is checked before each partition; ``progress`` gets the bytes of each non-empty merged partition.
    """
    view = memoryview(bytearray(len(inputs) * read_buffer))
    readers = [_Reader(inp.data_fd, view[i * read_buffer:(i + 1) * read_buffer], inp.name) for i, inp in enumerate(inputs)]
    writer = _Writer(output.data_fd, write_buffer, output.data_path)
    data_name = os.path.basename(output.data_path)
    lengths = array("q")
    _write_all(output.index_fd, _big_endian(array("q", [0])), output.index_path)
    written = 0
    for start in range(0, num_partitions, INDEX_WINDOW):
        end = min(num_partitions, start + INDEX_WINDOW)
        per_input = [inp.index.lengths(start, end) for inp in inputs]
        totals = [0] * (end - start)
        for r in range(end - start):
            if cancel is not None and cancel.is_set():
                raise MergeCancelled(f"merge into {data_name} cancelled at partition {start + r} of {num_partitions}")
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
        _write_all(output.index_fd, _big_endian(cumulative), output.index_path)
    writer.flush()
    return Copied(lengths, written, sum(r.bytes_read + inp.index.bytes_read for r, inp in zip(readers, inputs)))
