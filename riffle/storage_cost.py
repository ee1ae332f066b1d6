"""A node's storage as the merge cost model prices it, and its one measurement: shared by the driver's cost model
(:mod:`riffle.driver.cost`), ``riffle storage`` and the merger daemon, which measures its node at start-up and reports
it in its Status (:mod:`riffle.merger.storage`). Imports nothing but the standard library, so a merger node has it."""

from __future__ import annotations

import itertools
import math
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

SECONDS_RANGE = (1e-6, 60.0)  # a storage's times (per read request, per merge): a microsecond to a minute
BANDWIDTH_RANGE = (1 << 10, 1 << 40)  # its bytes per second: 1 KiB/s to 1 TiB/s
UNKNOWN = "unknown"
PROBE_PREFIX = ".riffle-cost-probe-"
STALE_PROBE_SECONDS = 600.0  # a probe takes seconds; a probe file older than this was left by one killed mid-probe
STALE_PROBES_REMOVED = 64  # at most this many per probe, so a directory stuffed with such names cannot stall one


@dataclass(frozen=True)
class StorageCost:
    """A node's storage, in seconds: per read request (seek, open, the fetch's round trip) and per byte moved.

    The defaults are those ``riffle bench spark --nodes 3`` measured on a two-core machine with a fast local
    disk: 150,596 fewer blocks fetched saved 1.77 s of a reduce stage on three cores (35 us a block), and
    merging the same 400 outputs in 81, 42 and 21 merges (N = 5, 10, 20) added 1.83, 1.22 and 1.44 s to the
    map stage: a least-squares fit gives 7.5 ms a merge plus 2.8 ms an output merged (a fixed 70 ms a merge,
    fitted to N=20 alone, overpriced small groups 3-fold). On spinning disks a request costs ms."""

    request_seconds: float = 35e-6
    byte_seconds: float = 1 / 500e6
    merge_seconds: float = 7.5e-3  # fixed per merge: its RPCs, the merged index, the commit
    input_seconds: float = 2.8e-3  # per output merged: opening it, reading its index, its segments' copy setup
    buffer_bytes: int = 4 << 20  # the merger's I/O buffer: a sequential pass costs one request per buffer


@dataclass(frozen=True)
class NodeStorage:
    """A node's storage as its merger reports it: time per read request and bytes per second, each None when
    unknown, and where they came from (``flags``, ``measured``, ``flags and measured``, or ``unknown``)."""

    request_seconds: float | None = None
    bytes_per_second: float | None = None
    source: str = UNKNOWN

    def __str__(self) -> str:
        if self.request_seconds is None and self.bytes_per_second is None:
            return UNKNOWN
        ms = self.request_seconds * 1e3 if self.request_seconds is not None else None
        request = "?" if ms is None else f"{ms:,.0f} ms" if ms >= 100 else f"{ms:.3g} ms"  # 5,000 ms, not 5e+03
        bandwidth = "?" if self.bytes_per_second is None else f"{self.bytes_per_second / (1 << 20):,.0f} MiB/s"
        return f"{request} a read request, {bandwidth} ({self.source})"


def probe(directory: str | os.PathLike[str], file_bytes: int = 8 << 20, requests: int = 64, seconds: float = math.inf) -> StorageCost:
    """Measures ``directory``'s storage once: one sequential write and read of ``file_bytes`` (per byte), then
    ``requests`` small reads at spread offsets of a reopened file (per request). Page cache included, as the
    shuffle sees it. Takes well under a second on a local disk; past ``seconds`` it writes no more and makes no
    more requests (at least one MiB and one request), so a slow disk cannot hold its caller up. The file is created
    afresh (never one planted there) and reopened only as that same file."""
    started = time.perf_counter()
    _remove_stale_probes(Path(directory))
    chunk, mib = os.urandom(1 << 20), 0
    fd, name = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=directory)
    path = Path(name)
    try:
        t = time.perf_counter()
        with os.fdopen(fd, "wb") as f:
            made = os.fstat(f.fileno())
            while mib < max(file_bytes >> 20, 1) and (mib == 0 or time.perf_counter() - started < seconds / 2):
                f.write(chunk)
                mib += 1
        with _reopen(path, made) as f:
            while f.read(1 << 20):
                pass
        per_byte = (time.perf_counter() - t) / (2 * mib * (1 << 20))
        size, done = mib << 20, 0
        t = time.perf_counter()
        while done < requests and (done == 0 or time.perf_counter() - started < seconds):
            with _reopen(path, made) as f:
                f.seek((done * 7919 * 4096) % max(size - 4096, 1))
                f.read(4096)
            done += 1
        per_request = (time.perf_counter() - t) / done
    finally:
        path.unlink(missing_ok=True)
    return StorageCost(request_seconds=per_request, byte_seconds=per_byte)


def _remove_stale_probes(directory: Path) -> None:
    """Removes the files of probes killed mid-measurement (up to ``file_bytes`` each) from ``directory``: entries with
    the probe's prefix, unchanged for :data:`STALE_PROBE_SECONDS` (a probe running now is never one). A link is
    removed, never followed."""
    now = time.time()
    for entry in itertools.islice(directory.glob(PROBE_PREFIX + "*"), STALE_PROBES_REMOVED):
        try:
            found = entry.lstat()
            if not stat.S_ISDIR(found.st_mode) and now - found.st_mtime > STALE_PROBE_SECONDS:
                entry.unlink()
        except OSError:  # gone meanwhile, or not ours to remove: the probe goes on
            continue


def _reopen(path: Path, made: os.stat_result) -> BinaryIO:
    """``path`` opened for reading if it is still the regular file the probe made (no symlink, FIFO or swapped file)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode) or (found.st_dev, found.st_ino) != (made.st_dev, made.st_ino):
        os.close(fd)
        raise OSError(f"{path} was replaced while the storage was measured")
    return os.fdopen(fd, "rb")
