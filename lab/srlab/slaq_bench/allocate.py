"""`slaq bench allocate`: wall time of one full allocation for J jobs on C cores (paper §6.4)."""

from __future__ import annotations

import statistics
import time

import numpy as np

from slaq.policy import make_policy
from slaq.predict.forecast import ForecastTable, JobForecast, forecast
from slaq.predict.loss_curves import fit_loss_curve
from slaq.stats.history import JobHistory
from slaq.traces.catalog import load


def synthetic_forecasts(jobs: int, seed: int = 0) -> tuple[list[JobForecast], float]:
    """Forecasts for ``jobs`` jobs part-way through recorded traces; returns them and the mean fit ms."""
    rng = np.random.default_rng(seed)
    traces = load()
    out, fit_seconds = [], 0.0
    for i in range(jobs):
        trace = traces[int(rng.integers(len(traces)))]
        seen = int(rng.integers(1, len(trace.losses) + 1))
        size = float(np.clip(rng.lognormal(0, 0.5), 0.25, 4))
        history = JobHistory()
        history.report(trace.losses[0])
        for k in range(1, seen):
            history.report(trace.losses[k], 100 * size, 1.0, 100 * size)
        started = time.perf_counter()
        curve = fit_loss_curve(history.losses) if seen >= 2 else None
        fit_seconds += time.perf_counter() - started
        out.append(forecast(f"job{i}", history, cap=round(128 * size), order=float(i), curve=curve))
    return out, fit_seconds / jobs * 1000


def bench_allocate(jobs: int, cores: float, policy: str = "slaq", repeat: int = 7, epoch: float = 2.0, seed: int = 0) -> dict:
    """Median over ``repeat`` runs of building the forecast table and running ``policy`` once."""
    forecasts, fit_ms = synthetic_forecasts(jobs, seed)
    chooser = make_policy(policy)
    times, alloc = [], np.zeros(0)
    for _ in range(repeat):
        started = time.perf_counter()
        table = ForecastTable(forecasts, epoch)
        alloc = chooser.allocate(table, cores)
        times.append((time.perf_counter() - started) * 1000)
    return {
        "policy": policy, "jobs": jobs, "cores": cores, "repeat": repeat,
        "median_ms": round(statistics.median(times), 2), "min_ms": round(min(times), 2), "max_ms": round(max(times), 2),
        "allocated_cores": round(float(alloc.sum()), 3), "min_job_cores": round(float(alloc.min()), 4) if jobs else 0,
        "curve_fit_ms_per_job": round(fit_ms, 3),
        "note": "curve fits run when a job reports iterations, not per allocation; their cost is shown per job",
    }
