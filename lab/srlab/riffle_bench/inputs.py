"""Generate Spark-format map outputs (data + index at the block manager's paths) for benchmarks."""

from __future__ import annotations

import os
from pathlib import Path

from riffle.shuffle.layout import DEFAULT_SUB_DIRS, block_file_path, data_file_name, encode_index, index_file_name

_POOL = os.urandom(1 << 24)


def executor_dirs(root: Path, count: int = 2) -> list[str]:
    """``count`` executor dirs with every sub dir Spark creates as its tasks write blocks (a merger creates none)."""
    dirs = [root / f"blockmgr-{i:04d}" for i in range(count)]
    for d in dirs:
        for k in range(DEFAULT_SUB_DIRS):
            (d / f"{k:02x}").mkdir(parents=True, exist_ok=True)
    return [str(d) for d in dirs]


def write_inputs(dirs: list[str], shuffle_id: int, maps: int, partitions: int, block_bytes: int) -> int:
    """``maps`` outputs of ``partitions`` blocks of ``block_bytes`` each (incompressible bytes); returns bytes written."""
    total = 0
    chunk = partitions * block_bytes
    for m in range(maps):
        data = block_file_path(dirs, data_file_name(shuffle_id, m))
        index = block_file_path(dirs, index_file_name(shuffle_id, m))
        data.parent.mkdir(parents=True, exist_ok=True)
        index.parent.mkdir(parents=True, exist_ok=True)
        with open(data, "wb", buffering=0) as fh:
            left, at = chunk, (m * 7919) % len(_POOL)
            while left:
                piece = memoryview(_POOL)[at:at + min(left, len(_POOL) - at)]
                fh.write(piece)
                left -= len(piece)
                at = 0
        index.write_bytes(encode_index([block_bytes] * partitions))
        total += chunk
    return total


def input_paths(dirs: list[str], shuffle_id: int, maps: int) -> list[Path]:
    return [block_file_path(dirs, data_file_name(shuffle_id, m)) for m in range(maps)]
