"""`riffle bench load`: many concurrent merges under a small memory budget."""

from __future__ import annotations

import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from riffle.bench.daemon_proc import DaemonProcess
from riffle.bench.inputs import executor_dirs, write_inputs
from riffle.merger.cli import parse_size
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE


def bench_load(requests: int, memory: str, fan_in: int = 8, partitions: int = 200, block_kb: float = 32,
               read_buffer: str = "4m", write_buffer: str = "16m", workdir: str | None = None) -> dict:
    root = Path(tempfile.mkdtemp(prefix="riffle-load-", dir=workdir))
    try:
        executors = [executor_dirs(root / f"exec{i}") for i in range(requests)]
        for dirs in executors:
            write_inputs(dirs, 0, fan_in, partitions, int(block_kb * 1024))
        with DaemonProcess([root], "--memory", memory, "--read-buffer", read_buffer, "--write-buffer", write_buffer,
                           "--workers", str(requests + 8), "--log-level", "WARNING") as daemon:
            baseline = daemon.rss_mb()

            def one(i: int) -> str:
                try:
                    daemon.client.merge(f"load-{i}", 0, list(range(fan_in)), executors[i], partitions, SYNTHETIC_MAP_ID_BASE + i)
                    return "ok"
                except grpc.RpcError as exc:
                    return f"{exc.code().name}: {exc.details()}"

            started = time.monotonic()
            with ThreadPoolExecutor(requests) as pool:
                outcomes = list(pool.map(one, range(requests)))
            elapsed = time.monotonic() - started
            status = daemon.client.status()
            peak = daemon.peak_rss_mb()
        budget_mb = parse_size(memory) / (1 << 20)
        failures = [o for o in outcomes if o != "ok"]
        return {
            "requests": requests, "fan_in": fan_in, "memory_budget_mb": budget_mb,
            "per_request_buffer_mb": (fan_in * parse_size(read_buffer) + parse_size(write_buffer)) / (1 << 20),
            "peak_rss_mb": round(peak, 1), "idle_rss_mb": round(baseline, 1),
            "peak_over_budget_mb": round(peak - budget_mb, 1),
            "peak_buffer_reserved_mb": round(status.peak_memory_in_use / (1 << 20), 1),
            "requests_queued": status.requests_queued_total, "failed": len(failures), "failures": failures[:5],
            "completed": status.merges_completed, "seconds": round(elapsed, 2),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
