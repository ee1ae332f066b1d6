"""``slaq simulate --check`` and ``--project``: the task-level replay (:mod:`slaq.sim.replay`) against the live
runs a trace was recorded from, and the same workloads projected to larger clusters with a lower bound.

The check replays each recorded workload on its live configuration (its executor cores, its epoch, the
policy code of :mod:`slaq.policy`, stock Spark FAIR as Spark orders its pools) and compares the predicted
mean time to 90% with the median of the live runs; a prediction within :data:`TOLERANCE` passes. Nothing
here is fitted to the measured times: the trace's inputs are each job's arrival, losses and recorded work.
Projections are trusted only as far as the check passed.
"""

from __future__ import annotations

import heapq
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from slaq.live.config import DEFAULT_POLICY
from slaq.metrics import NINETY, change_vs
from slaq.sim.replay import CLAIRVOYANT, STOCK, ReplayResult, replay
from slaq.sim.trace import Trace, TraceError, TraceJob, check_workload, ninety_phase

TOLERANCE = 0.15  # |predicted / measured - 1| at most this for a configuration's mean time to 90%
CONFIG_POLICIES = {"slaq": "slaq", "fair": "fair", "order": "order", "stock": STOCK}  # the live configurations (srlab.slaq_bench.configs) -> replay policy
POLICIES = ("slaq", "fair", "order", STOCK)  # what a projection replays, beside the clairvoyant order
PROJECT_CORES = (16, 64)  # the default projections, a few minutes; larger (640: the paper's cluster) on request
STEP_GAP = 0.1  # projections: the loop decides on arrivals and ends at most every 0.1 s (one allocation of 4,000 jobs: ~50 ms)
LIVE_TRACES = Path(__file__).parents[1] / "traces" / "data"  # the recorded live workloads shipped with the package: live_*.json.gz
Progress = Callable[[str], None]


def packaged_traces() -> list[Path]:
    return sorted(LIVE_TRACES.glob("live_*.json.gz"))


@dataclass(frozen=True)
class ConfigCheck:
    trace: str
    config: str
    predicted_s: float
    measured_s: float  # median of the live runs' mean time to 90%
    measured_runs: tuple[float, ...]
    predicted_makespan_s: float
    measured_makespan_s: float
    job_error_s: float  # mean absolute per-job error of time to 90%

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1 if self.measured_s else math.inf

    @property
    def ok(self) -> bool:
        return abs(self.error) <= TOLERANCE

    def as_dict(self) -> dict:
        return {"trace": self.trace, "config": self.config, "predicted_mean_time_to_90pct_s": round(self.predicted_s, 2),
                "measured_mean_time_to_90pct_s": round(self.measured_s, 2), "measured_runs": list(self.measured_runs),
                "error": round(self.error, 4), "within_tolerance": self.ok,
                "predicted_makespan_s": round(self.predicted_makespan_s, 1), "measured_makespan_s": round(self.measured_makespan_s, 1),
                "mean_abs_job_error_s": round(self.job_error_s, 2) if math.isfinite(self.job_error_s) else None}


def check_trace(trace: Trace, progress: Progress | None = None) -> list[ConfigCheck]:
    """One :class:`ConfigCheck` per configuration the trace has live runs of; :class:`TraceError` when it has
    none of a configuration the check knows: a check that compared nothing has not passed."""
    work_conserving = bool(trace.setting.get("work_conserving", True))
    compared = {config: runs for config, runs in trace.measured.items() if config in CONFIG_POLICIES and runs}
    if not compared:
        raise TraceError(f"{trace.name or 'trace'}: no measured runs of {', '.join(CONFIG_POLICIES)} to check the replay against "
                         f"(measured: {', '.join(map(repr, trace.measured)) or 'none'})")
    out = []
    for config, runs in compared.items():
        if progress:
            progress(f"checking {trace.name or 'trace'}: replaying {config} on {trace.cores} cores")
        result = replay(trace.replayed, CONFIG_POLICIES[config], trace.cores, trace.epoch, work_conserving,
                        executors=trace.executors, locality_wait=trace.locality_wait)
        measured = [float(r["mean_time_to_90pct_s"]) for r in runs]
        per_job = _job_errors(result, runs)
        out.append(ConfigCheck(trace.name, config, result.mean(NINETY), statistics.median(measured), tuple(measured),
                               result.makespan, statistics.median(float(r["makespan_s"]) for r in runs), per_job))
    return out


def check_verdict(traces: int, checks: Sequence[ConfigCheck]) -> str:
    """The check's one-line verdict: what it compared, whether every prediction is within :data:`TOLERANCE`, the worst."""
    worst = max(checks, key=lambda c: abs(c.error))
    missed = sum(not c.ok for c in checks)
    head = f"all within {TOLERANCE:.0%}" if not missed else f"{missed} off by more than {TOLERANCE:.0%}"
    return (f"check: {traces} trace{'s' * (traces != 1)}, {len(checks)} configuration{'s' * (len(checks) != 1)}, {head} "
            f"(worst: {Path(worst.trace).name} {worst.config} {worst.error:+.1%})")


def _job_errors(result: ReplayResult, runs: list[dict]) -> float:
    """Mean over jobs of |predicted - median measured| time to 90%."""
    errors = []
    for j in result.jobs:
        seen = [r["time_to_90pct_s"][j["job"]] for r in runs if r.get("time_to_90pct_s", {}).get(j["job"]) is not None]
        if seen and j["time_to_90pct_s"] is not None:
            errors.append(abs(j["time_to_90pct_s"] - statistics.median(seen)))
    return float(np.mean(errors)) if errors else math.nan


# -- projections -------------------------------------------------------------------------------------------

def scaled(trace: Trace, cores: int, seed: int = 1) -> list[TraceJob]:
    """The trace's workload for ``cores`` cores: ``cores / trace.cores`` times as many jobs (its jobs in turn; not the Spark jobs outside them),
    arriving that many times as often (Poisson, the trace's mean gap divided by the factor)."""
    factor = cores / trace.cores
    n = max(int(round(len(trace.jobs) * factor)), 1)
    gap = float(trace.setting.get("arrival_mean_s") or _mean_gap(trace.jobs)) / factor
    gaps = np.random.default_rng(seed).exponential(gap, size=n)
    gaps[0] = 0.0
    arrivals = np.cumsum(gaps)
    base = trace.jobs
    return [replace(base[i % len(base)], name=f"{base[i % len(base)].name}#{i // len(base)}", arrival=float(arrivals[i])) for i in range(n)]


def _mean_gap(jobs: Sequence[TraceJob]) -> float:
    arrivals = sorted(j.arrival for j in jobs)
    return (arrivals[-1] - arrivals[0]) / (len(arrivals) - 1) if len(arrivals) > 1 else 1.0


def alone_seconds(job: TraceJob, cores: int, upto: int) -> float:
    """The job's phases 0..``upto`` on an otherwise empty cluster of ``cores`` cores: its driver time and
    Spark latency plus each stage's waves of tasks (its critical path; no schedule can do better)."""
    return sum(p.waits + sum(math.ceil(s.tasks / cores) * s.task_seconds for s in p.stages) for p in job.phases[: upto + 1])


def srpt_flow(releases: Sequence[float], sizes: Sequence[float], speed: float) -> list[float]:
    """Flow times (completion - release) of preemptive shortest-remaining-work-first on one machine of
    ``speed`` (optimal for total flow time there, and a relaxation of ``speed`` cores)."""
    order = sorted(range(len(sizes)), key=lambda i: releases[i])
    flows = [0.0] * len(sizes)
    heap: list[tuple[float, int]] = []
    t, k = 0.0, 0
    while k < len(order) or heap:
        if not heap:
            t = max(t, releases[order[k]])
        while k < len(order) and releases[order[k]] <= t:
            heapq.heappush(heap, (sizes[order[k]], order[k]))
            k += 1
        left, i = heapq.heappop(heap)
        next_release = releases[order[k]] if k < len(order) else math.inf
        if t + left / speed <= next_release:
            t += left / speed
            flows[i] = t - releases[i]
        else:
            heapq.heappush(heap, (left - (next_release - t) * speed, i))
            t = next_release
    return flows


def clairvoyant_bound(jobs: Sequence[TraceJob], cores: int) -> dict:
    """A lower bound on the mean time to 90% of ``jobs`` on ``cores`` cores under any scheduler that knows
    each job's future: the larger of (a) shortest-remaining-work-first over each job's executor work to its
    90% point with the work perfectly divisible across cores and preempted at no cost, driver time left
    out, and (b) the mean of each job's time to 90% alone on the cluster (driver time plus its stages'
    waves of tasks)."""
    jobs = [j for j in jobs if not j.silent]  # a job with no loss has no time to 90%
    upto = [ninety_phase(j) for j in jobs]
    flows = srpt_flow([j.arrival for j in jobs], [j.work_to(k)[0] for j, k in zip(jobs, upto)], float(cores))
    srpt = float(np.mean(flows))
    alone = float(np.mean([alone_seconds(j, cores, k) for j, k in zip(jobs, upto)]))
    return {"mean_time_to_90pct_s": round(max(srpt, alone), 3), "srpt_fluid_s": round(srpt, 3), "alone_s": round(alone, 3),
            "assumptions": "knows each job's work to its 90% point; (a) executor work divisible over cores, preemption free, "
                           "no driver time; (b) each job alone; the bound is the larger"}


@dataclass(frozen=True)
class Projection:
    trace: Trace
    cores: int
    jobs: list[TraceJob]  # the trace's workload scaled to ``cores`` (:func:`scaled`)

    @property
    def label(self) -> str:
        return f"{Path(self.trace.name).name or 'trace'} at {self.cores} cores ({len(self.jobs)} jobs)"


def plan_projections(traces: Sequence[Trace], cores_list: Sequence[int], seed: int = 1) -> list[Projection]:
    """Every trace scaled to every core count, each within the replay's bounds (:func:`slaq.sim.trace.check_workload`)
    before any of them runs: a projection too large is refused at once, not after the others have run."""
    plan = [Projection(t, cores, scaled(t, cores, seed)) for t in traces for cores in cores_list]
    for p in plan:
        check_workload(p.jobs, p.trace.epoch, f"{p.trace.name or 'trace'} at {p.cores} cores")
    return plan


def against_clairvoyant(means: Mapping[str, float], clairvoyant: float) -> dict:
    """Each policy's mean time to 90%, its ratio to the clairvoyant order's (:data:`CLAIRVOYANT`) and its share of
    the gain over fair that the clairvoyant order achieves, (fair - policy) / (fair - clairvoyant) (None when that
    order gains nothing over fair, or fair was not replayed); SLAQ's default policy's share also on its own."""
    gain = means["fair"] - clairvoyant if "fair" in means else 0.0

    def share(mean: float) -> float | None:
        return round((means["fair"] - mean) / gain, 3) if gain > 0 else None
    return {"clairvoyant_mean_time_to_90pct_s": round(clairvoyant, 3),
            "policies": {policy: {"mean_time_to_90pct_s": round(mean, 3), "ratio_to_clairvoyant": round(mean / clairvoyant, 3),
                                  "share_of_gain_over_fair": share(mean)} for policy, mean in means.items()},
            "default_policy": DEFAULT_POLICY,
            "default_share_of_gain_over_fair": share(means[DEFAULT_POLICY]) if DEFAULT_POLICY in means else None}


def check_against_clairvoyant(trace: Trace, checks: Sequence[ConfigCheck]) -> dict:
    """:func:`against_clairvoyant` on the check's own replays (the trace on its live cores), each policy of :data:`POLICIES`
    the trace has no live run of replayed the same way, and the clairvoyant order's."""
    def mean(policy: str) -> float:
        return replay(trace.replayed, policy, trace.cores, trace.epoch, bool(trace.setting.get("work_conserving", True)),
                      executors=trace.executors, locality_wait=trace.locality_wait).mean(NINETY)
    means = {c.config: c.predicted_s for c in checks}
    return against_clairvoyant({**means, **{p: mean(p) for p in POLICIES if p not in means}}, mean(CLAIRVOYANT))


def project_row(p: Projection, policies: Sequence[str] = POLICIES, announce: Progress | None = None,
                progress: Progress | None = None) -> dict:
    """The scaled workload's mean time to 90% under each policy and the clairvoyant order (``announce`` called before
    each replay), SLAQ's change against fair and stock (negative: less time), the clairvoyant bound and each one's
    ratio to it, and :func:`against_clairvoyant`."""
    row: dict = {"cores": p.cores, "jobs": len(p.jobs), "policies": {}}
    for policy in (*policies, CLAIRVOYANT):
        if announce:
            announce(policy)

        def said(t: float, done: int, total: int, policy: str = policy) -> None:
            if progress:
                progress(f"  {policy}: {done}/{total} jobs done at {t:.0f} s simulated")

        result = replay(p.jobs, policy, p.cores, p.trace.epoch, progress=said, min_step_gap=STEP_GAP)
        row["policies"][policy] = {"mean_time_to_90pct_s": round(result.mean(NINETY), 3), "makespan_s": round(result.makespan, 1)}
    bound = clairvoyant_bound(p.jobs, p.cores)
    row["clairvoyant_bound"] = bound
    by = row["policies"]
    for figures in by.values():
        figures["ratio_to_bound"] = round(figures["mean_time_to_90pct_s"] / bound["mean_time_to_90pct_s"], 3)
    for base in ("fair", STOCK):
        if "slaq" in by and base in by:
            row[f"slaq_vs_{base}"] = change_vs(by["slaq"], by[base])
    means = {policy: figures["mean_time_to_90pct_s"] for policy, figures in by.items() if policy != CLAIRVOYANT}
    row["vs_clairvoyant"] = against_clairvoyant(means, by[CLAIRVOYANT]["mean_time_to_90pct_s"])
    return row


def project(trace: Trace, cores_list: Sequence[int] = PROJECT_CORES, policies: Sequence[str] = POLICIES,
            seed: int = 1, progress: Progress | None = None) -> list[dict]:
    """:func:`project_row` for each core count."""
    return [project_row(p, policies, progress=progress) for p in plan_projections([trace], cores_list, seed)]
