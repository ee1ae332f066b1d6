"""`riffle bench merge`: merge throughput against a sequential copy of the same bytes on the same disk."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from srlab.riffle_bench.inputs import executor_dirs, input_paths, write_inputs
from srsupport.daemons import DaemonProcess


def sequential_copy(sources: list[Path], target: Path, buffer_bytes: int) -> int:
    """Read every source front to back and append it to ``target`` through one buffer, then fsync."""
    buf = bytearray(buffer_bytes)
    view = memoryview(buf)
    total = 0
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for src in sources:
            fd = os.open(src, os.O_RDONLY)
            try:
                while n := os.readv(fd, [view]):
                    chunk = view[:n]
                    while len(chunk):
                        chunk = chunk[os.write(out, chunk):]
                    total += n
            finally:
                os.close(fd)
        os.fsync(out)
    finally:
        os.close(out)
    return total


def bench_merge(inputs: int, partitions: int, block_kb: float, memory: str = "2g", read_buffer: str = "4m",
                write_buffer: str = "16m", repeat: int = 3, workdir: str | None = None) -> dict:
    root = Path(tempfile.mkdtemp(prefix="riffle-bench-", dir=workdir))
    try:
        dirs = executor_dirs(root)
        block = int(block_kb * 1024)
        started = time.monotonic()
        total = write_inputs(dirs, 0, inputs, partitions, block)
        os.sync()
        generate_s = time.monotonic() - started
        copy_times, merge_times = [], []
        with DaemonProcess([root], "--memory", memory, "--read-buffer", read_buffer, "--write-buffer", write_buffer,
                           "--log-level", "WARNING") as daemon:
            from riffle.units import parse_size

            warm = root / "warmup.out"  # untimed: settles writeback of the generated inputs before measuring
            sequential_copy(input_paths(dirs, 0, inputs), warm, parse_size(write_buffer))
            warm.unlink()
            for attempt in range(repeat):
                target = root / "copy.out"
                t0 = time.monotonic()
                sequential_copy(input_paths(dirs, 0, inputs), target, parse_size(write_buffer))
                copy_times.append(time.monotonic() - t0)
                target.unlink()
                t0 = time.monotonic()
                resp = daemon.client.merge(f"bench-{attempt}", 0, list(range(inputs)), dirs, partitions,
                                           SYNTHETIC_MAP_ID_BASE + attempt, app_id="bench-merge")
                merge_times.append(time.monotonic() - t0)
                assert resp.bytes_written == total, (resp.bytes_written, total)
                daemon.client.cleanup(dirs, "bench-merge", 0)
            peak = daemon.peak_rss_mb()
        mb = total / 1e6
        merge_rate = mb / statistics.median(merge_times)
        copy_rate = mb / statistics.median(copy_times)
        return {
            "inputs": inputs, "partitions": partitions, "block_kb": block_kb, "bytes": total, "repeat": repeat,
            "MB_per_s": round(merge_rate, 1), "copy_MB_per_s": round(copy_rate, 1), "ratio": round(merge_rate / copy_rate, 3),
            "merge_seconds": [round(t, 3) for t in merge_times], "copy_seconds": [round(t, 3) for t in copy_times],
            "peak_rss_mb": round(peak, 1), "memory_budget": memory, "read_buffer": read_buffer, "write_buffer": write_buffer,
            "generate_seconds": round(generate_s, 1),
            "method": "merge = real daemon over loopback gRPC (fsync included); copy = same bytes read sequentially "
                      "and appended to one file through one write-buffer-sized buffer, fsync included; one untimed warm-up copy, then runs alternate; medians",
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
