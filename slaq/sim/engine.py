"""Discrete-event simulation of a cluster of ``C`` cores shared by training jobs.

Events are job arrivals, epoch boundaries, iteration completions and job completions. Between two
events every job's allocation is fixed and it turns ``cores × seconds`` into progress through its
trace's iterations; each finished iteration is reported to that job's :class:`JobHistory` exactly
as a live job reports it (loss, core-seconds, wall time, cores). At every epoch boundary, and when
a job arrives or leaves, the policy is re-run on forecasts built from those histories alone: the
simulated scheduler never sees a trace's future. The prediction and policy code is the same the
live scheduler runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from slaq.metrics import THRESHOLDS, mean_times, reached, time_to_key
from slaq.policy import Policy, make_policy
from slaq.predict.forecast import CurveCache, ForecastTable, JobForecast, job_forecast
from slaq.sim.network import effective_cores
from slaq.sim.workload import SimJob, Workload
from slaq.stats.history import JobHistory


@dataclass
class _State:
    job: SimJob
    history: JobHistory = field(default_factory=JobHistory)
    k: int = 0
    progress: float = 0.0
    iteration_started: float = 0.0
    reached: dict[float, float] = field(default_factory=dict)
    finished: float | None = None
    curves: CurveCache = field(default_factory=CurveCache)

    def remaining_core_seconds(self) -> float:
        return float(self.job.costs[self.k:].sum()) - self.progress


@dataclass
class Interval:
    start: float
    duration: float
    mean_loss: float
    active: int
    group_cores: tuple[float, float, float]  # high/medium/low normalized-loss groups


@dataclass
class SimResult:
    policy: str
    capacity: float
    epoch: float
    jobs: list[dict]
    intervals: list[Interval]
    allocations: int

    def summary(self, bucket: float = 10.0) -> dict:
        """The figures of the paper's §6.2: mean normalized loss, time to 90/95%, group shares."""
        total = sum(i.duration for i in self.intervals)
        mean_loss = sum(i.mean_loss * i.duration for i in self.intervals) / total if total else 0.0
        grouped = [i for i in self.intervals if i.active >= 4]
        cores = np.array([i.group_cores for i in grouped]) if grouped else np.zeros((0, 3))
        weights = np.array([i.duration for i in grouped])
        shares = (cores * weights[:, None]).sum(0)
        shares = shares / shares.sum() if shares.sum() > 0 else shares
        out: dict = {
            "policy": self.policy,
            "jobs": len(self.jobs),
            "mean_normalized_loss": round(mean_loss, 4),
            "mean_active_jobs": round(sum(i.active * i.duration for i in self.intervals) / total, 2) if total else 0,
            "makespan_s": round(max(j["finished_s"] + j["arrival_s"] for j in self.jobs), 1) if self.jobs else 0,
            "allocations_run": self.allocations,
            "core_share_by_loss_group": dict(zip(("high_25pct", "medium_25pct", "low_50pct"),
                                                 (round(float(s), 3) for s in shares))),
        }
        out.update(mean_times(self.jobs, 2))
        out["mean_completion_s"] = round(float(np.mean([j["finished_s"] for j in self.jobs])), 2) if self.jobs else None
        out["loss_over_time"] = _bucketed(self.intervals, bucket)
        return out


def _bucketed(intervals: list[Interval], bucket: float) -> dict:
    if not intervals:
        return {"bucket_s": bucket, "mean_normalized_loss": []}
    end = intervals[-1].start + intervals[-1].duration
    sums = np.zeros(int(math.ceil(end / bucket)) + 1)
    weights = np.zeros_like(sums)
    for i in intervals:
        b = int(i.start // bucket)
        sums[b] += i.mean_loss * i.duration
        weights[b] += i.duration
    series = np.where(weights > 0, sums / np.maximum(weights, 1e-12), np.nan)
    return {"bucket_s": bucket, "mean_normalized_loss": [None if np.isnan(v) else round(float(v), 4) for v in series]}


def _groups(states: list[_State], alloc: np.ndarray) -> tuple[float, float, float]:
    """Cores held by the 25% highest-loss, next 25%, and 50% lowest-loss active jobs (Fig. 8)."""
    losses = np.array([s.job.normalized(s.k) for s in states])
    order = np.argsort(-losses, kind="stable")
    quarter = max(1, int(round(len(states) * 0.25)))
    high, medium, low = order[:quarter], order[quarter:2 * quarter], order[2 * quarter:]
    return float(alloc[high].sum()), float(alloc[medium].sum()), float(alloc[low].sum())


def _forecasts(states: list[_State], predictive: bool) -> list[JobForecast]:
    return [job_forecast(s.job.job_id, s.history, s.curves, s.job.weight, s.job.cap, s.job.arrival, predictive) for s in states]


def _advance(s: _State, cores: float, start: float, dt: float, allocated: float | None = None) -> None:
    """Run job ``s`` on ``cores`` cores from ``start`` for ``dt`` seconds, reporting finished iterations.

    ``allocated`` (network mode) is the job's allocation when its effective ``cores`` are fewer; it is
    what the job reports, so the runtime model sees the network time as per-iteration overhead.
    """
    if cores <= 0 or s.finished is not None:
        return
    budget = cores * dt
    used = 0.0
    job = s.job
    while s.k < job.iterations:
        need = job.costs[s.k] - s.progress
        if need > budget - used + 1e-9:
            s.progress += budget - used
            return
        used += need
        now = start + used / cores
        s.k += 1
        s.progress = 0.0
        wall = max(now - s.iteration_started, 1e-9)
        s.history.report(job.losses[s.k], job.costs[s.k - 1], wall, job.costs[s.k - 1] / wall if allocated is None else allocated)
        s.iteration_started = now
        loss = job.normalized(s.k)
        for thr in THRESHOLDS:
            if thr not in s.reached and reached(loss, thr):
                s.reached[thr] = now
    s.finished = start + used / cores


def simulate(workload: Workload, policy_name: str, capacity: float, epoch: float = 2.0, reserve: float = 0.0) -> SimResult:
    """Replay ``workload`` on ``capacity`` cores (``reserve`` of them kept for non-ML work)."""
    if capacity - reserve <= 0:
        raise ValueError("capacity minus reserve must be positive")
    if epoch <= 0:
        raise ValueError("epoch must be positive")
    policy = make_policy(policy_name)
    predictive = policy.fitted_curves
    network = any(j.network > 0 for j in workload.jobs)
    pending = sorted(workload.jobs, key=lambda j: j.arrival)
    active: list[_State] = []
    done: list[_State] = []
    intervals: list[Interval] = []
    t, next_epoch, allocations = 0.0, 0.0, 0
    alloc = np.zeros(0)
    stale = True
    while pending or active:
        while pending and pending[0].arrival <= t + 1e-9:
            job = pending.pop(0)
            state = _State(job, iteration_started=t)
            state.history.report(job.losses[0])
            active.append(state)
            stale = True
        if not active:
            t = pending[0].arrival
            continue
        if stale or t >= next_epoch - 1e-9:
            table = ForecastTable(_forecasts(active, predictive), epoch)
            alloc = policy.allocate(table, capacity - reserve)
            allocations += 1
            stale = False
            while next_epoch <= t + 1e-9:
                next_epoch += epoch
        rate = _network_rates(active, alloc, policy) if network else alloc
        end = min(next_epoch, pending[0].arrival if pending else math.inf)
        for s, a in zip(active, rate):
            if a > 0:
                end = min(end, t + s.remaining_core_seconds() / a)
        dt = max(end - t, 0.0)
        mean_loss = float(np.mean([s.job.normalized(s.k) for s in active]))
        intervals.append(Interval(t, dt, mean_loss, len(active), _groups(active, alloc)))
        for s, a, r in zip(active, alloc, rate):
            _advance(s, float(r), t, dt, float(a) if network else None)
        t = end
        finished = [s for s in active if s.finished is not None]
        if finished:
            done.extend(finished)
            active = [s for s in active if s.finished is None]
            stale = True
    jobs = [_job_record(s) for s in sorted(done, key=lambda s: s.job.arrival)]
    return SimResult(policy_name, capacity, epoch, jobs, intervals, allocations)


def _network_rates(active: list[_State], alloc: np.ndarray, policy: Policy) -> np.ndarray:
    """Effective cores of each job given its current iteration's compute and network time."""
    compute = np.array([s.job.costs[min(s.k, s.job.iterations - 1)] for s in active])
    work = np.array([s.job.network for s in active])
    return effective_cores(compute, work, np.asarray(alloc, dtype=float), policy.co_location())


def _job_record(s: _State) -> dict:
    record = {"job": s.job.job_id, "family": s.job.family, "trace": s.job.trace_name,
              "arrival_s": round(s.job.arrival, 3), "iterations": s.job.iterations,
              "finished_s": round((s.finished or 0.0) - s.job.arrival, 3)}
    for thr in THRESHOLDS:
        reached = s.reached.get(thr, s.finished or 0.0)
        record[time_to_key(thr)] = round(reached - s.job.arrival, 3)
    return record
