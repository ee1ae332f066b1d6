"""Spark's sort-shuffle on-disk layout: file names, where the block manager puts them, index format.

Matches Spark 4's ``DiskBlockManager.getFile`` and ``IndexShuffleBlockResolver``: a file named
``n`` lives in ``localDirs[h % len] / "%02x" % ((h // len) % subDirs)`` with
``h = nonNegativeHash(n)``, and an index is ``R + 1`` big-endian int64 cumulative offsets.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

SYNTHETIC_MAP_ID_BASE = 1 << 62  # merged outputs use map ids no real task attempt id reaches
DEFAULT_SUB_DIRS = 64
INT64_MAX = (1 << 63) - 1


class CorruptShuffleFile(ValueError):
    """An index or data file that is not a consistent Spark sort-shuffle output."""


def java_string_hash(text: str) -> int:
    """``java.lang.String.hashCode`` (UTF-16 code units, 32-bit wrap-around)."""
    encoded = text.encode("utf-16-be")
    h = 0
    for unit in struct.unpack(f">{len(encoded) // 2}H", encoded):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def non_negative_hash(text: str) -> int:
    """Spark's ``Utils.nonNegativeHash``: ``abs(hashCode)``, with ``Integer.MIN_VALUE`` mapped to 0."""
    h = java_string_hash(text)
    return 0 if h == -(1 << 31) else abs(h)


def data_file_name(shuffle_id: int, map_id: int) -> str:
    return f"shuffle_{shuffle_id}_{map_id}_0.data"


def index_file_name(shuffle_id: int, map_id: int) -> str:
    return f"shuffle_{shuffle_id}_{map_id}_0.index"


def block_location(num_dirs: int, name: str, sub_dirs: int = DEFAULT_SUB_DIRS) -> tuple[int, str]:
    """(index of the local dir, sub-dir name) where Spark keeps file ``name``."""
    if num_dirs <= 0:
        raise ValueError("an executor has at least one local dir")
    h = non_negative_hash(name)
    return h % num_dirs, f"{(h // num_dirs) % sub_dirs:02x}"


def block_file_path(local_dirs: list[str] | list[Path], name: str, sub_dirs: int = DEFAULT_SUB_DIRS) -> Path:
    """Where an executor whose ordered block-manager dirs are ``local_dirs`` keeps file ``name``."""
    index, sub = block_location(len(local_dirs), name, sub_dirs)
    return Path(local_dirs[index]) / sub / name


def encode_index(lengths: list[int]) -> bytes:
    """Index bytes for partitions of the given lengths (first offset 0)."""
    offsets = [0]
    for length in lengths:
        offsets.append(offsets[-1] + length)
    return struct.pack(f">{len(offsets)}q", *offsets)


def decode_index(raw: bytes, num_partitions: int, data_length: int, where: str = "index") -> list[int]:
    """Validated cumulative offsets: R+1 of them, starting at 0, non-decreasing, ending at the data length."""
    expected = (num_partitions + 1) * 8
    if len(raw) != expected:
        raise CorruptShuffleFile(f"{where}: {len(raw)} bytes, expected {expected} for {num_partitions} partitions")
    offsets = list(struct.unpack(f">{num_partitions + 1}q", raw))
    if offsets[0] != 0:
        raise CorruptShuffleFile(f"{where}: first offset is {offsets[0]}, expected 0")
    for i in range(num_partitions):
        if offsets[i + 1] < offsets[i]:
            raise CorruptShuffleFile(f"{where}: offset of partition {i + 1} ({offsets[i + 1]}) is below partition {i}'s ({offsets[i]})")
    if offsets[-1] != data_length:
        raise CorruptShuffleFile(f"{where}: last offset {offsets[-1]} does not match data file length {data_length}")
    return offsets


def write_map_output(local_dirs: list[str], shuffle_id: int, map_id: int, blocks: list[bytes], sub_dirs: int = DEFAULT_SUB_DIRS) -> tuple[Path, Path]:
    """Write a map output in Spark's format at Spark's path (for tests and benchmarks)."""
    data = block_file_path(local_dirs, data_file_name(shuffle_id, map_id), sub_dirs)
    index = block_file_path(local_dirs, index_file_name(shuffle_id, map_id), sub_dirs)
    for path in (data, index):
        path.parent.mkdir(parents=True, exist_ok=True)
    with open(data, "wb") as fh:
        for block in blocks:
            fh.write(block)
    index.write_bytes(encode_index([len(b) for b in blocks]))
    return data, index


def read_partition(data_path: Path, index_path: Path, num_partitions: int, partition: int) -> bytes:
    """One reduce partition's block, read the way a reducer would (through the index)."""
    offsets = decode_index(index_path.read_bytes(), num_partitions, os.path.getsize(data_path), str(index_path))
    with open(data_path, "rb") as fh:
        fh.seek(offsets[partition])
        return fh.read(offsets[partition + 1] - offsets[partition])
