"""What a mounted disk really costs, measured through the file system: small reads at spread offsets (each
one a seek, as the shuffle's scattered reads are) and one sequential read (the transfer rate).

The model says what it charges; this says what a reader sees, the Python layer's own time and the
machine's other load included. Benches record it next to the profile so a report shows both.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from srlab.storage.model import MB

SMALL_READ = 4096
CHUNK = 1 << 20


@dataclass(frozen=True)
class MeasuredCost:
    """In the units of the driver's storage cost model (``riffle.driver.cost.StorageCost``), so the two compare."""

    request_seconds: float  # the mean time of one small read at a new place (a seek and its read-ahead)
    byte_seconds: float     # per byte of a sequential read, its first request's time left out

    @property
    def read_mbps(self) -> float:
        return 1.0 / self.byte_seconds / MB

    def to_json(self) -> dict[str, float]:
        return {"request_seconds": float(f"{self.request_seconds:.4g}"), "byte_seconds": float(f"{self.byte_seconds:.4g}"),
                "read_mbps": round(self.read_mbps, 1)}


def probe(directory: str | os.PathLike[str], file_bytes: int = 8 << 20, requests: int = 16) -> MeasuredCost:
    """Writes a ``file_bytes`` file in ``directory`` (writes are not charged), reads ``requests`` small pieces of
    it, each far from the last (back to front, so none continues where the previous one ended), then reads it
    whole front to back through a new handle; removes it."""
    path = Path(directory) / f".srlab-disk-probe-{os.getpid()}"
    chunk = os.urandom(CHUNK)
    try:
        with open(path, "wb") as f:
            for _ in range(max(file_bytes // CHUNK, 1)):
                f.write(chunk)
        size = path.stat().st_size
        stride = size // requests
        fd = os.open(path, os.O_RDONLY)
        try:
            t = time.perf_counter()
            for i in reversed(range(requests)):
                os.pread(fd, SMALL_READ, i * stride)
            per_request = (time.perf_counter() - t) / requests
        finally:
            os.close(fd)
        t = time.perf_counter()
        with open(path, "rb", buffering=0) as f:
            while f.read(CHUNK):
                pass
        sequential = max(time.perf_counter() - t - per_request, 1e-9)
    finally:
        path.unlink(missing_ok=True)
    return MeasuredCost(request_seconds=per_request, byte_seconds=sequential / size)
