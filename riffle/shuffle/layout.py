"""Spark's sort-shuffle on-disk layout: file names, where the block manager puts them, index format.

Matches Spark 4's ``DiskBlockManager.getFile`` and ``IndexShuffleBlockResolver``: a file named
``n`` lives in ``localDirs[h % len] / "%02x" % ((h // len) % subDirs)`` with
``h = nonNegativeHash(n)``, and an index is ``R + 1`` big-endian int64 cumulative offsets.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

SYNTHETIC_MAP_ID_BASE = 1 << 62  # merged outputs use map ids no real task attempt id reaches
DEFAULT_SUB_DIRS = 64
MAX_SUB_DIRS = 1 << 16  # a merge request's sub dirs per local dir
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


MAX_ID_TRIES = 4096  # merged map ids tried for one merge: at 20 inputs the first few fit, at 2 inputs in one local dir 1 in ~1,000


def id_beside_inputs(shuffle_id: int, inputs: Iterable[tuple[int, bool]], num_dirs: int, ids: Iterator[int],
                     sub_dirs: int = DEFAULT_SUB_DIRS) -> int | None:
    """The first id of ``ids`` whose merged data and index files both hash to a sub dir holding a file of the merge's
    ``inputs`` (map id, whether it wrote a data file; its index is always there), so the merger writes only into sub
    dirs that exist: Spark creates one on first use by checking and then creating, unlocked against other processes,
    and fails the task whose check a merger's creation fell between. None within :data:`MAX_ID_TRIES` ids."""
    held = {block_location(num_dirs, name, sub_dirs) for m, data in inputs
            for name in ((index_file_name(shuffle_id, m), data_file_name(shuffle_id, m)) if data else (index_file_name(shuffle_id, m),))}
    if (len(held) / (num_dirs * sub_dirs)) ** 2 * MAX_ID_TRIES < 1:  # not one fit expected: spare the driver the hashing
        return None
    for merged in itertools.islice(ids, MAX_ID_TRIES):
        if (block_location(num_dirs, data_file_name(shuffle_id, merged), sub_dirs) in held
                and block_location(num_dirs, index_file_name(shuffle_id, merged), sub_dirs) in held):
            return merged
    return None


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


def read_partition(data_path: Path, index_path: Path, num_partitions: int, partition: int) -> bytes:
    """One reduce partition's block, read the way a reducer would (through the index)."""
    offsets = decode_index(index_path.read_bytes(), num_partitions, os.path.getsize(data_path), str(index_path))
    with open(data_path, "rb") as fh:
        fh.seek(offsets[partition])
        return fh.read(offsets[partition + 1] - offsets[partition])
