"""Fetching and timing pages of a running Spark UI or History Server over HTTP, for the benchmarks."""

from __future__ import annotations

import statistics
import time
import urllib.request
from collections.abc import Iterable
from typing import Any


def fetch(url: str, timeout: float = 60.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return str(r.read().decode())


def time_pages(base: str, pages: Iterable[str], repeat: int) -> dict[str, Any]:
    """Per page: median and max milliseconds over ``repeat`` fetches after one warm-up (the first fetch
    also builds what the server caches), and the body's size in bytes."""
    out = {}
    for page in pages:
        body = fetch(base + page)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fetch(base + page)
            times.append((time.perf_counter() - t0) * 1000)
        out[page] = {"median_ms": round(statistics.median(times), 2), "max_ms": round(max(times), 2), "bytes": len(body.encode())}
    return out
