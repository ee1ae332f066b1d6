"""`riffle bench load`: many concurrent merges under a small memory budget (and, with --max-queue, a bounded queue).

Reports the daemon's real peak RSS (the kernel's VmHWM), how many merges queued or were refused,
how fast refusals came back, and how long Status took while the merges were in the daemon.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import grpc

from riffle.merger.concat import memory_needed
from riffle.protocol import pb
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from riffle.units import parse_size
from srlab.riffle_bench.inputs import executor_dirs, write_inputs
from srsupport.daemons import DaemonProcess


def bench_load(requests: int, memory: str, fan_in: int = 8, partitions: int = 200, block_kb: float = 32,
               read_buffer: str = "4m", write_buffer: str = "16m", workdir: str | None = None, max_queue: int | None = None) -> dict:
    root = Path(tempfile.mkdtemp(prefix="riffle-load-", dir=workdir))
    try:
        executors = [executor_dirs(root / f"exec{i}") for i in range(requests)]
        for dirs in executors:
            write_inputs(dirs, 0, fan_in, partitions, int(block_kb * 1024))
        extra = ["--max-queue", str(max_queue)] if max_queue is not None else []
        with DaemonProcess([root], "--memory", memory, "--read-buffer", read_buffer, "--write-buffer", write_buffer,
                           "--log-level", "WARNING", *extra) as daemon:
            baseline = daemon.rss_mb()
            client = daemon.client
            ended: dict[int, float] = {}
            lock = threading.Lock()

            def done(i: int):
                def record(_f) -> None:
                    with lock:
                        ended[i] = time.monotonic()
                return record

            started = time.monotonic()
            futures = []
            for i in range(requests):
                req = pb.MergeRequest(request_id=f"load-{i}", app_id="bench-load", shuffle_id=0, map_ids=list(range(fan_in)),
                                      local_dirs=executors[i], num_partitions=partitions, merged_map_id=SYNTHETIC_MAP_ID_BASE + i)
                f = client.stub.Merge.future(req, timeout=600, metadata=client.metadata)
                f.add_done_callback(done(i))
                futures.append(f)
            status_ms = []
            while not all(f.done() for f in futures):
                t0 = time.monotonic()
                client.status(timeout=5)
                status_ms.append((time.monotonic() - t0) * 1000)
                time.sleep(0.05)
            elapsed = time.monotonic() - started
            outcomes = []
            for f in futures:
                try:
                    f.result()
                    outcomes.append("ok")
                except grpc.RpcError as exc:
                    outcomes.append(f"{exc.code().name}: {exc.details()}")
            status = client.status()
            peak = daemon.peak_rss_mb()
        budget_mb = parse_size(memory) / (1 << 20)
        refused = [i for i, o in enumerate(outcomes) if o.startswith("RESOURCE_EXHAUSTED")]
        failures = [o for o in outcomes if o != "ok" and not o.startswith("RESOURCE_EXHAUSTED")]
        refusal_ms = [(ended[i] - started) * 1000 for i in refused]
        return {
            "requests": requests, "fan_in": fan_in, "memory_budget_mb": budget_mb, "max_queue": status.max_queue,
            "per_request_reserved_mb": round(memory_needed(fan_in, partitions, parse_size(read_buffer), parse_size(write_buffer)) / (1 << 20), 1),
            "peak_rss_mb": round(peak, 1), "idle_rss_mb": round(baseline, 1), "peak_over_budget_mb": round(peak - budget_mb, 1),
            "peak_buffer_reserved_mb": round(status.peak_memory_in_use / (1 << 20), 1),
            "completed": status.merges_completed, "requests_queued": status.requests_queued_total,
            "refused": len(refused), "refused_within_ms_max": round(max(refusal_ms), 1) if refusal_ms else None,
            "failed": len(failures), "failures": failures[:5],
            "status_calls": len(status_ms), "status_ms_median": round(statistics.median(status_ms), 1) if status_ms else None,
            "status_ms_max": round(max(status_ms), 1) if status_ms else None, "seconds": round(elapsed, 2),
            "method": "all requests sent at once as async RPCs to a real daemon; Status polled every 50 ms meanwhile; "
                      "peak RSS = the daemon's VmHWM from /proc",
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
