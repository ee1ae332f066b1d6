"""Enforcement fidelity: saturating jobs given fixed core shares, achieved core-time measured by the
shim's own pool accounting over the measurement window (strict and work-conserving modes)."""

from __future__ import annotations

import threading
import time
from typing import Any

from slaq.enforce.pools import POOL_PREFIX, PoolBridge, enter_thread
from srsupport.session import DEFAULT_MASTER, spark_session


def _burn(ms: float) -> int:
    end = time.perf_counter() + ms / 1000.0
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def _saturate(sc: Any, pools: PoolBridge, job: str, stop: threading.Event, tasks: int, task_ms: float, window: list[float],
              done: dict[str, int], lock: threading.Lock) -> None:
    enter_thread(sc, job, POOL_PREFIX + job)  # this thread only ever works for ``job``
    while not stop.is_set():
        sc.parallelize(range(tasks), tasks).map(lambda _: _burn(task_ms)).count()
        if window[0] <= time.monotonic() <= window[1]:
            with lock:
                done[job] += tasks


def measure(sc: Any, shares: list[float], seconds: float, work_conserving: bool, epoch: float = 1.0, warmup: float = 3.0,
            tasks: int = 16, task_ms: float = 50.0, submitters: int = 2) -> dict:
    """Run one saturating job per share (``submitters`` threads each, so a job always has tasks
    queued) and return target vs achieved shares of the core-time the jobs used."""
    pools = PoolBridge(sc)
    pools.configure(work_conserving, stale_after=10 * epoch)
    tag = f"{'wc' if work_conserving else 'strict'}-{time.monotonic_ns()}"
    names = [f"enforce-{tag}-{i}" for i in range(len(shares))]
    for name in names:
        pools.register(name, 1.0)
    stop = threading.Event()
    window = [float("inf"), float("inf")]
    done = dict.fromkeys(names, 0)
    lock = threading.Lock()
    threads = [threading.Thread(target=_saturate, args=(sc, pools, n, stop, tasks, task_ms, window, done, lock), daemon=True)
               for n in names for _ in range(submitters)]
    capacity = pools.capacity()

    deposit_s: list[float] = []

    def deposit() -> None:  # one epoch's allocation into the driver's pools, timed (a py4j round trip)
        t0 = time.perf_counter()
        pools.deposit({n: s * capacity for n, s in zip(names, shares)}, epoch)
        deposit_s.append(time.perf_counter() - t0)

    deposit()
    for t in threads:
        t.start()
    begin = time.monotonic()
    start_used: dict[str, float] = {}
    while time.monotonic() - begin < warmup + seconds:
        if not start_used and time.monotonic() - begin >= warmup:
            start_used = {n: s.consumed for n, s in pools.drain()[1].items() if n in names}
            window[:] = [time.monotonic(), time.monotonic() + seconds]
        time.sleep(epoch)
        deposit()
    end_used = {n: s.consumed for n, s in pools.drain()[1].items() if n in names}
    stop.set()
    for name in names:
        pools.close(name)
    for t in threads:
        t.join(60)
    used = [end_used[n] - start_used[n] for n in names]
    total = sum(used)
    achieved = [u / total if total > 0 else 0.0 for u in used]
    errors = [abs(a - s) for a, s in zip(achieved, shares)]
    finished = sum(done.values())
    return {"mode": "work-conserving" if work_conserving else "strict", "target_shares": shares,
            "achieved_shares": [round(a, 4) for a in achieved], "core_seconds": [round(u, 2) for u in used],
            # independent check: fixed-length tasks finished by each job's whole Spark jobs in the window
            "achieved_shares_by_finished_tasks": [round(done[n] / finished, 4) if finished else 0.0 for n in names],
            "utilization": round(total / (capacity * seconds), 4) if capacity else None,
            "max_error_pp": round(100 * max(errors), 2), "within_10pp": max(errors) <= 0.10,
            "deposit_ms_median": round(1000 * sorted(deposit_s)[len(deposit_s) // 2], 3)}


def bench_enforce(shares: list[float], seconds: float, modes: list[str], master: str = DEFAULT_MASTER, epoch: float = 1.0,
                  nodes: int | None = None) -> dict:
    if not shares or any(s <= 0 for s in shares) or abs(sum(shares) - 1.0) > 1e-6:
        raise ValueError(f"--shares must be positive and sum to 1, got {shares}")
    from srlab.cluster import spark_target

    with spark_target(master, nodes) as target, \
            spark_session("slaq-bench-enforce", target.master, target.conf | {"spark.scheduler.mode": "FAIR"}, nodes or 0) as spark:
        master = target.master
        sc = spark.sparkContext
        sc.parallelize(range(4), 4).map(lambda _: _burn(10)).count()  # executors and Python workers up
        runs = [measure(sc, shares, seconds, mode == "work-conserving", epoch) for mode in modes]
        capacity = PoolBridge(sc).capacity()
    return {"master": master, "nodes": nodes, "cores": capacity, "seconds": seconds, "epoch_s": epoch, "runs": runs}
