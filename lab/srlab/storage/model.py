"""What a read costs on a spinning disk: the pure model behind the ``hdd`` storage profile.

One disk serves one request at a time. A read that does not start where the disk's head is pays a seek;
every byte the disk reads pays the transfer rate. A read that has to reach the disk reads ahead into a
small buffer of its stream (one open file handle), so the stream's next small reads inside that buffer
cost nothing more: concurrent readers of small pieces of one file (reducers of one map output, or of one
merged file) then pay one seek per piece, not one per request, as they would on a real disk. Writes are
not modelled (a node's buffered writes land in its page cache and reach the disk later). Nor, by default,
are reads of Spark's shuffle index files: a few KiB per map output, written just before and read at every
fetch of one of its blocks, a node keeps them in memory (Spark's external shuffle service even caches
them itself), so charging each a seek would double the seeks of every fetch, vanilla and merged alike.

No clock and no I/O here: :class:`SeekModel` says how long each read takes; the FUSE layer
(:mod:`srlab.storage.passthrough`) sleeps that long.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

MB = 1_000_000  # disks are rated in decimal megabytes per second


@dataclass(frozen=True)
class DiskProfile:
    """One simulated disk's parameters (defaults: a 7,200 rpm SATA disk)."""

    name: str = "hdd"
    seek_ms: float = 8.0          # average seek plus rotational delay
    read_mbps: float = 150.0      # sustained transfer rate, MB/s
    readahead_kib: int = 128      # what a seek reads into its stream's buffer (0: no read-ahead)
    index_files_cached: bool = True  # Spark's shuffle .index files read as if cached (see the module's docstring)

    def __post_init__(self) -> None:
        if self.seek_ms < 0 or self.read_mbps <= 0 or self.readahead_kib < 0:
            raise ValueError(f"a disk needs seek_ms >= 0, read_mbps > 0 and readahead_kib >= 0: {self}")

    @property
    def seek_seconds(self) -> float:
        return self.seek_ms / 1000.0

    @property
    def readahead_bytes(self) -> int:
        return self.readahead_kib * 1024

    def transfer_seconds(self, nbytes: int) -> float:
        return nbytes / (self.read_mbps * MB)


@dataclass
class DiskCounters:
    """What one disk has done so far (for reports and tests)."""

    requests: int = 0       # reads asked of the disk layer
    buffer_hits: int = 0    # served entirely from their stream's read-ahead buffer
    seeks: int = 0
    bytes_transferred: int = 0  # read from the platter, read-ahead included
    busy_seconds: float = 0.0   # the sum of all costs charged


class SeekModel:
    """The cost of each read of one disk: a head position shared by every stream, and a read-ahead buffer
    per stream. Not thread-safe: the disk serves one request at a time, so its caller holds a lock."""

    def __init__(self, profile: DiskProfile):
        self.profile = profile
        self.head: tuple[Hashable, int] | None = None  # (file, offset) the next read continues from without a seek
        self.buffers: dict[Hashable, tuple[Hashable, int, int]] = {}  # stream -> (file, start, end) read ahead
        self.counters = DiskCounters()

    def read(self, stream: Hashable, file: Hashable, offset: int, size: int, file_size: int) -> float:
        """Seconds the read of ``size`` bytes at ``offset`` of ``file`` (``file_size`` bytes long) by ``stream`` takes."""
        self.counters.requests += 1
        end = min(offset + size, file_size)
        if end <= offset:  # at or past the end of the file: nothing reaches the disk
            return 0.0
        buffered = self.buffers.get(stream)
        if buffered is not None and buffered[0] == file and buffered[1] <= offset < buffered[2]:
            if end <= buffered[2]:
                self.counters.buffer_hits += 1
                return 0.0
            offset = buffered[2]  # the rest of the read continues after what was read ahead
        cost = 0.0
        if self.head != (file, offset):
            cost += self.profile.seek_seconds
            self.counters.seeks += 1
        filled = min(max(end, offset + self.profile.readahead_bytes), file_size)
        cost += self.profile.transfer_seconds(filled - offset)
        self.head = (file, filled)
        self.buffers[stream] = (file, max(offset, filled - self.profile.readahead_bytes), filled)
        self.counters.bytes_transferred += filled - offset
        self.counters.busy_seconds += cost
        return cost

    def close(self, stream: Hashable) -> None:
        """The stream's handle was closed: its buffer goes (a reused handle number starts afresh)."""
        self.buffers.pop(stream, None)
