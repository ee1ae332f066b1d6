"""Policies for a fit's set-up (the work before its loss curve exists), tried in the task-level replay.

A spark.ml fit spends most of its executor work to its 90% point before its second loss (caching, initial
passes), and SLAQ explores every such job evenly. These variants estimate each job's executor seconds left to
its 90% point and serve the least first; they differ only in how the scheduler is told:

* ``srpt``: as token grants, SLAQ's live mechanism: cores in key order, each job up to the cores it keeps busy
  (at most the widest stage it has shown), the rest evenly; a job known to report no loss keeps its even share.
* ``order``: as the order in which the pools are offered cores (the clairvoyant order's mechanism, with estimates
  in place of the future): free cores go to the least key with tasks waiting, re-ranked at every decision;
  jobs known to report no loss last, by arrival.

The key: a set-up's left is its siblings' set-up cost (same CrossValidator candidate, else same estimator family,
else any job; the median of the latest :data:`RECENT`) less what it used, plus the siblings' work from set-up to
90%; a set-up with no finished sibling anywhere comes after those, by arrival. A job with a loss curve is taken
as :data:`CAP_ITERATIONS` iterations from its 90% point (most of a spark.ml fit's work to 90% is its set-up; the
fitted curve's count of iterations to it was 16-35x too many on the plain fits); it is past that point where its
fitted curve says so and its latest drop is under :data:`FALLING` of its drop so far (a curve from two or three
losses puts the floor too close), and then goes after every job short of it.

The harness gives a policy only what the live loop has (:class:`Mirrored`): arrivals so far, each job's losses
with times, its pool's core-seconds (``LiveJob.consumed``, ``LiveJob.last``), the width of stages it submitted,
its family (the trace's, known at arrival), and finished jobs' histories. Nothing here is in the product.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import statistics
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import slaq.sim.pools as sim_pools
import slaq.sim.replay as rp
from slaq.live.allocation import Decision, fixed_shares
from slaq.live.job import LiveJob
from slaq.metrics import NINETY, reached
from slaq.policy.base import fill_in_order, water_fill
from slaq.predict.forecast import ForecastTable, job_forecast
from slaq.sim.check import STEP_GAP, packaged_traces, scaled
from slaq.sim.trace import Trace, TraceJob, load

VARIANTS = ("srpt", "order")
RECENT = 3  # siblings an estimate takes the median of, the latest first
BASELINES = ("slaq", "fair", rp.CLAIRVOYANT)
SLACK = 3  # usable(): 0 = grant each job its widest stage
CAP_ITERATIONS = 3  # a curve job short of its 90% point is taken as this many iterations from it
FALLING = 0.02  # a latest drop at least this share of the drop so far: not past the 90% point
PAST, NO_ESTIMATE, NO_LOSS = 1e9, 2e9, 3e9  # order's tiers: past the 90% point, a set-up with no estimate, no loss reported


class Mirrored(rp._Job):
    """The replay's job, also keeping on its ``LiveJob`` what the live pool reports: core-seconds so far, the
    (time, core-seconds) of its latest report, and the widest stage it has submitted (Spark knows a stage's tasks
    at submission). Nothing of its future."""

    def __setattr__(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)
        live = self.__dict__.get("live")
        if live is None:
            return
        if name == "consumed":
            live.consumed = value
        elif name == "last" and value is not None:
            live.last = (value[0], value[1])  # type: ignore[index]
        elif name == "stage" and isinstance(value, int) and 0 <= value and self.phase < len(self.spec.phases):
            stages = self.spec.phases[self.phase].stages
            if value < len(stages):
                object.__setattr__(live, "widest", max(getattr(live, "widest", 0), stages[value].tasks))


@dataclass
class Seen:
    """What the allocator remembers of a job it has seen (kept after the job ends: finished jobs' histories)."""

    job: LiveJob
    arrival: float
    family: str
    candidate: str
    setup_cs: float | None = None  # core-seconds to its second loss (its set-up)
    post90_cs: float | None = None  # core-seconds from its set-up's end to its 90% point, once it finished


def candidate_of(name: str) -> str:
    """A CrossValidator candidate's folds share a name but for the fold (``cv-lr-l2-p0-1``); projections add ``#n``."""
    base = name.split("#")[0]
    return re.sub(r"-\d+$", "", base)


def cumulative_at(job: LiveJob, report: int) -> float | None:
    """The job's pool core-seconds when it made report ``report`` (0-based), from its latest report's and the costs since."""
    last, cs = job.last, job.history.core_seconds
    n = len(job.history.losses)
    if last is None or report >= n or len(cs) != n - 1 or report < 1:
        return None
    return last[1] - float(sum(cs[report:]))


class SetupAllocator:
    """A drop-in for :class:`Allocator` in the replay (``decide(jobs, capacity, closed, now).alloc``); ``order``'s
    variant also leaves ``ranks``, each job's key, for the harness's offer order."""

    def __init__(self, variant: str, epoch: float, family_of: Callable[[str], str]):
        self.variant, self.epoch = variant, float(epoch)
        self.family_of = family_of
        self.seen: dict[str, Seen] = {}
        self.ranks: dict[str, float] | None = None

    # -- what is known --------------------------------------------------------------------------------------------
    def observe(self, jobs: Sequence[LiveJob], now: float) -> None:
        names = {j.name for j in jobs}
        for j in jobs:
            if j.name not in self.seen:
                self.seen[j.name] = Seen(j, now, self.family_of(j.name), candidate_of(j.name))
        for s in self.seen.values():  # a job that ended since the last decision is read too: it may have run all its losses in between
            if s.setup_cs is None and len(s.job.history.losses) >= 2:
                s.setup_cs = cumulative_at(s.job, 1)
            if s.job.name not in names and s.post90_cs is None and s.setup_cs is not None:
                losses = s.job.history.losses  # ended: its whole history is known
                first, low = losses[0], min(losses)
                k = next((i for i, v in enumerate(losses) if first > low and reached((v - low) / (first - low), NINETY)), len(losses) - 1)
                at = cumulative_at(s.job, max(k, 1))
                s.post90_cs = max(at - s.setup_cs, 0.0) if at is not None else None

    def siblings(self, s: Seen, attr: str) -> list[float]:
        """The figure ``attr`` of the closest finished siblings: same candidate, else same family, else any job."""
        for same in (lambda o: o.candidate == s.candidate, lambda o: o.family == s.family, lambda o: True):
            got = [v for o in self.seen.values() if o is not s and same(o) and (v := getattr(o, attr)) is not None]
            if got:
                return got[-RECENT:]  # the latest: a warm cache makes later set-ups cheaper
        return []

    def setup_left(self, s: Seen) -> float | None:
        """Estimated core-seconds left to its 90% point: the siblings' median set-up minus what it used, plus their
        median work from set-up to 90%; None: no sibling."""
        sib = self.siblings(s, "setup_cs")
        if not sib:
            return None
        est, used = statistics.median(sib), s.job.consumed
        post = self.siblings(s, "post90_cs")
        return (est - used if used < est else 0.25 * used) + (statistics.median(post) if post else 0.0)  # past the estimate: a quarter more

    def usable(self, j: LiveJob) -> float:
        """Cores the job keeps busy on average when it runs (its iterations' core-seconds over wall seconds, times
        :data:`SLACK`), at most its widest stage: a grant of its widest stage leaves its driver gaps and narrow
        stages to whichever pool the work-conserving order picks, not to the next job in line."""
        used = [c for c in j.history.cores[1:] if math.isfinite(c)]
        return min(self.width(j), SLACK * float(np.median(used))) if used else self.width(j)

    def width(self, j: LiveJob) -> float:
        own = getattr(j, "widest", 0)
        if own:
            return float(own)
        others = [getattr(s.job, "widest", 0) for s in self.seen.values() if getattr(s.job, "widest", 0)]
        return float(statistics.median(others)) if others else math.inf

    # -- deciding -------------------------------------------------------------------------------------------------
    def decide(self, jobs: Sequence[LiveJob], capacity: float, closed: Sequence[str], now: float) -> Decision:
        self.observe(jobs, now)
        if not jobs:
            return Decision({})
        silent = [j for j in jobs if j.reports is False]
        steered = [j for j in jobs if j.reports is not False]
        keys = self.keys(steered)
        if self.variant == "order":
            self.ranks = {**keys, **{j.name: NO_LOSS + self.seen[j.name].arrival for j in silent}}
            return Decision({j.name: capacity / len(jobs) for j in jobs})  # the tokens are not what orders the pools
        shares = fixed_shares(list(jobs), [], capacity)
        fixed = {j.name: shares[j.name] for j in silent}
        return Decision({**fixed, **(self.srpt(steered, keys, capacity - sum(fixed.values())) if steered else {})})

    def keys(self, jobs: Sequence[LiveJob]) -> dict[str, float]:
        """Each job's estimated executor seconds left to its 90% point; :data:`PAST` and :data:`NO_ESTIMATE` added
        for a job past it and a set-up with no finished sibling (then by arrival)."""
        curve = [j for j in jobs if len(j.history.losses) >= 2]
        out = self.curve_left(curve)
        for j in jobs:
            if j.name not in out:
                left = self.setup_left(self.seen[j.name])
                out[j.name] = NO_ESTIMATE + self.seen[j.name].arrival if left is None else left
        return out

    def srpt(self, jobs: Sequence[LiveJob], keys: Mapping[str, float], capacity: float) -> dict[str, float]:
        known = sorted((j for j in jobs if keys[j.name] < NO_ESTIMATE), key=lambda j: (keys[j.name], self.seen[j.name].arrival))
        unknown = sorted((j for j in jobs if keys[j.name] >= NO_ESTIMATE), key=lambda j: self.seen[j.name].arrival)
        alloc = fill_in_order(np.arange(len(known)), np.array([self.usable(j) for j in known]), capacity)
        out = {j.name: float(c) for j, c in zip(known, alloc)}
        left = capacity - float(alloc.sum())
        if unknown:  # no finished set-up anywhere yet: by arrival
            share = fill_in_order(np.arange(len(unknown)), np.array([self.width(j) for j in unknown]), left)
            out.update({j.name: float(c) for j, c in zip(unknown, share)})
            left -= float(share.sum())
        if left > 1e-9:  # work conservation: what nobody was ordered to take, evenly
            room = np.array([max(self.width(j) - out[j.name], 0.0) for j in jobs])
            extra = water_fill(room, np.ones(len(jobs)), left)
            out = {j.name: out[j.name] + float(e) for j, e in zip(jobs, extra)}
        return out

    def curve_left(self, curve: list[LiveJob]) -> dict[str, float]:
        """Executor seconds left to each curve job's 90% point: :data:`CAP_ITERATIONS` times its cost per iteration
        after its set-up (the set-up's cost is no iteration's); :data:`PAST` plus that cost once its fitted curve
        puts it past the point and its latest drop is under :data:`FALLING` of its drop so far."""
        if not curve:
            return {}
        table = ForecastTable([job_forecast(j.name, j.history, j.curves, j.weight, math.inf, j.order) for j in curve], self.epoch)
        now_norm = table.normalized_now()
        out = {}
        for i, j in enumerate(curve):
            after, losses = j.history.core_seconds[1:], j.history.losses
            cost = float(np.median(after)) if after else float(table.cost[i])
            falling = losses[-2] - losses[-1] >= FALLING * max(losses[0] - losses[-1], 1e-12)
            past = now_norm[i] <= 1 - NINETY + 1e-12 and not falling
            out[j.name] = PAST + cost if past else CAP_ITERATIONS * cost
        return out


@contextlib.contextmanager
def harness(jobs: Sequence[TraceJob]) -> Iterator[None]:
    """The replay with :class:`Mirrored` jobs, for a variant's name a :class:`SetupAllocator`, and, for ``order``, its
    ranks as the order SLAQ's pools are offered cores (Spark's ``default`` pool still beside them as in
    :func:`slaq.sim.pools.offer_order`); restored after."""
    family = {j.name: j.family for j in jobs}
    names = [jobs[i].name for i in sorted(range(len(jobs)), key=lambda i: jobs[i].arrival)]  # the replay's rows
    saved_job, saved_alloc, saved_order = rp._Job, rp.Allocator, sim_pools.offer_order
    made: list[SetupAllocator] = []

    def make(policy: str, epoch: float, status: bool = True) -> object:
        if policy in VARIANTS:
            made.append(SetupAllocator(policy, epoch, lambda n: family.get(n, "")))
            return made[-1]
        return saved_alloc(policy, epoch, status=status)

    def offer_order(pools: sim_pools.PoolArrays, waiting: np.ndarray, stock: bool, work_conserving: bool, k: int) -> np.ndarray:
        ranks = made[-1].ranks if made else None
        if stock or ranks is None or (pools.has_outside and pools.outside[waiting].any()):
            return saved_order(pools, waiting, stock, work_conserving, k)  # which calls this again for SLAQ's pools alone
        return sim_pools.first_of(np.array([ranks.get(names[i], math.inf) for i in waiting.tolist()]), waiting, k)

    rp._Job, rp.Allocator = Mirrored, make  # type: ignore[misc, assignment]
    rp.offer_order = sim_pools.offer_order = offer_order  # type: ignore[assignment]
    try:
        yield
    finally:
        rp._Job, rp.Allocator = saved_job, saved_alloc  # type: ignore[misc]
        rp.offer_order = sim_pools.offer_order = saved_order  # type: ignore[assignment]


def run(jobs: Sequence[TraceJob], policy: str, cores: int, epoch: float, work_conserving: bool, gap: float) -> rp.ReplayResult:
    with harness(jobs):
        return rp.replay(jobs, policy, cores, epoch, work_conserving, min_step_gap=gap)


def compare(jobs: Sequence[TraceJob], cores: int, epoch: float, work_conserving: bool, gap: float,
            policies: Sequence[str]) -> dict:
    """Mean time to 90% and makespan per policy; each one's ratio to clairvoyant, share of the gain over fair,
    and makespan change vs fair."""
    res = {p: run(jobs, p, cores, epoch, work_conserving, gap) for p in (*BASELINES, *policies)}
    fair, clair = res["fair"].mean(NINETY), res[rp.CLAIRVOYANT].mean(NINETY)
    out = {}
    for p, r in res.items():
        m = r.mean(NINETY)
        out[p] = {"mean_time_to_90pct_s": round(m, 3), "ratio_to_clairvoyant": round(m / clair, 3),
                  "share_of_gain_over_fair": round((fair - m) / (fair - clair), 3) if fair > clair else None,
                  "makespan_s": round(r.makespan, 1), "makespan_change_vs_fair": round(r.makespan / res["fair"].makespan - 1, 4)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m srlab.slaq_bench.setup_policies", description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="*", help="slaq-trace/1 files (default: the packaged live_*.json.gz)")
    ap.add_argument("--cores", default="2,16,64", help="comma list; the trace's own cores replays it as the check does, "
                                                       "others project it (slaq.sim.check.scaled)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma list of {', '.join(VARIANTS)}")
    args = ap.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if bad := [v for v in variants if v not in VARIANTS]:
        ap.error(f"unknown variant(s) {bad}")
    paths = [Path(p) for p in args.traces] or packaged_traces()
    report: dict[str, Mapping] = {}
    for path in paths:
        trace: Trace = load(path)
        for cores in (int(c) for c in args.cores.split(",")):
            if cores == trace.cores:
                jobs, gap = list(trace.replayed), 0.0
            else:
                jobs, gap = scaled(trace, cores), STEP_GAP
            print(f"{path.name}@{cores}: {len(jobs)} jobs", file=sys.stderr, flush=True)
            report[f"{path.name}@{cores}"] = compare(jobs, cores, trace.epoch, bool(trace.setting.get("work_conserving", True)), gap, variants)
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
