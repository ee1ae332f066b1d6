"""Policies for a fit's set-up (the work before its loss curve exists), tried in the task-level replay.

A spark.ml fit spends most of its executor work to its 90% point before its second loss (caching, initial
passes), and SLAQ explores every such job evenly. These variants estimate a set-up's cost from its siblings
(same estimator family, same CrossValidator candidate) whose set-ups already finished, and order or bound
set-ups by it; jobs with a loss curve keep SLAQ's allocation unless the variant says otherwise:

* ``srpt``: every job by its estimated executor seconds left to its 90% point (set-up left from siblings plus
  the siblings' work from set-up to 90%; a curve job's from its fitted curve), cores in that order, each job
  up to the widest stage it has shown; set-ups with no estimate share evenly after the others.
  ``srpt-even``: the same, set-ups with no estimate sharing evenly (the brief's fallback) rather than by arrival.
* ``kfifo`` / ``kest``: at most ``k = cores / stage width`` set-ups admitted at once (by arrival / by estimated
  set-up left); SLAQ allocates the curve jobs and the admitted set-ups; the others wait (work conservation
  still hands them idle cores).
* ``gain``: SLAQ's greedy over predicted normalized loss reduction, a set-up's gain being its siblings' first
  reduction (normalized) spread over its estimated set-up left, instead of SLAQ's one unit per iteration.
* ``gain-srpt``: ``gain``'s share for set-ups, handed to them shortest estimated set-up first.

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

import slaq.sim.replay as rp
from slaq.live.allocation import Allocator, Decision, fixed_shares
from slaq.live.job import LiveJob
from slaq.metrics import NINETY, reached
from slaq.policy.base import fill_in_order, water_fill
from slaq.policy.greedy import greedy_allocate
from slaq.policy.slaq_total import SlaqTotal
from slaq.predict.forecast import ForecastTable, job_forecast
from slaq.predict.loss_curves import evaluate
from slaq.sim.check import STEP_GAP, packaged_traces, scaled
from slaq.sim.trace import Trace, TraceJob, load

VARIANTS = ("srpt", "srpt-even", "kfifo", "kest", "gain", "gain-srpt")
RECENT = 3  # siblings an estimate takes the median of, the latest first
BASELINES = ("slaq", "fair", rp.CLAIRVOYANT)
TRUST_POINTS = 0  # losses before a curve job may be taken as past its 90% point
SLACK = 3  # usable(): 0 = grant each job its widest stage
HORIZON = 400  # iterations ahead a curve job's 90% point is looked for


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
    first_drop: float | None = None  # its first reduction over its largest one (SLAQ's normalized units)
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
    """A drop-in for :class:`Allocator` in the replay (``decide(jobs, capacity, closed, now).alloc``)."""

    def __init__(self, variant: str, epoch: float, family_of: Callable[[str], str], tasks_per_stage: float | None = None):
        self.variant, self.epoch = variant, float(epoch)
        self.slaq = Allocator("slaq", epoch, status=False)
        self.family_of = family_of
        self.tasks_per_stage = tasks_per_stage
        self.seen: dict[str, Seen] = {}

    # -- what is known --------------------------------------------------------------------------------------------
    def observe(self, jobs: Sequence[LiveJob], now: float) -> None:
        names = {j.name for j in jobs}
        for j in jobs:
            s = self.seen.get(j.name)
            if s is None:
                s = self.seen[j.name] = Seen(j, now, self.family_of(j.name), candidate_of(j.name))
            if s.setup_cs is None and len(j.history.losses) >= 2:
                s.setup_cs = cumulative_at(j, 1)
                s.first_drop = (j.history.losses[0] - j.history.losses[1]) / j.history.scale()
        for s in self.seen.values():
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
        """Estimated core-seconds left of its set-up: the siblings' median minus what it used; None: no sibling."""
        sib = self.siblings(s, "setup_cs")
        if not sib:
            return None
        est = statistics.median(sib)
        used = s.job.consumed
        return est - used if used < est else 0.25 * used  # past the estimate: assume a quarter more of what it used

    def usable(self, j: LiveJob) -> float:
        """Cores the job keeps busy on average when it runs (its iterations' core-seconds over wall seconds, times
        :data:`SLACK`), at most its widest stage: a grant of its widest stage leaves its driver gaps and narrow
        stages to whichever pool the work-conserving order picks, not to the next job in line."""
        h = j.history
        used = [c for c in h.cores[1:] if math.isfinite(c)]
        if not used:
            return self.width(j)
        return min(self.width(j), SLACK * float(np.median(used)))

    def width(self, j: LiveJob) -> float:
        own = getattr(j, "widest", 0)
        if own:
            return float(own)
        others = [getattr(s.job, "widest", 0) for s in self.seen.values() if getattr(s.job, "widest", 0)]
        return float(statistics.median(others)) if others else math.inf

    def k_setups(self, capacity: float) -> int:
        widths = [getattr(s.job, "widest", 0) for s in self.seen.values() if getattr(s.job, "widest", 0)]
        per = self.tasks_per_stage or (statistics.median(widths) if widths else capacity)
        return max(1, int(capacity // per))

    # -- deciding -------------------------------------------------------------------------------------------------
    def decide(self, jobs: Sequence[LiveJob], capacity: float, closed: Sequence[str], now: float) -> Decision:
        self.observe(jobs, now)
        if not jobs:
            return Decision({})
        setup = [j for j in jobs if len(j.history.losses) < 2]
        curve = [j for j in jobs if len(j.history.losses) >= 2]
        if self.variant in ("srpt", "srpt-even"):  # a job known to report no loss keeps its even share, as in the product
            shares = fixed_shares(list(jobs), [], capacity)
            fixed = {j.name: shares[j.name] for j in jobs if j.reports is False}
            steered = [j for j in jobs if j.name not in fixed]
            rest = self.srpt(steered, [j for j in setup if j.name not in fixed], curve, capacity - sum(fixed.values())) if steered else {}
            return Decision({**fixed, **rest})
        if self.variant in ("kfifo", "kest"):
            k = self.k_setups(capacity)
            if self.variant == "kfifo":
                admitted = sorted(setup, key=lambda j: self.seen[j.name].arrival)[:k]
            else:
                admitted = sorted(setup, key=lambda j: self.setup_key(j))[:k]
            chosen = self.slaq.decide([*curve, *admitted], capacity, [], now).alloc
            return Decision({j.name: chosen.get(j.name, 0.0) for j in jobs})
        return Decision(self.gain(jobs, setup, capacity, now))

    def setup_key(self, j: LiveJob) -> tuple[float, float]:
        left = self.setup_left(self.seen[j.name])
        return (math.inf if left is None else left, self.seen[j.name].arrival)

    def srpt(self, jobs: Sequence[LiveJob], setup: list[LiveJob], curve: list[LiveJob], capacity: float) -> dict[str, float]:
        keys: dict[str, float] = {}
        unknown: list[LiveJob] = []
        for j in setup:
            left = self.setup_left(self.seen[j.name])
            if left is None:
                unknown.append(j)
                continue
            post = self.siblings(self.seen[j.name], "post90_cs")
            keys[j.name] = left + (statistics.median(post) if post else 0.0)
        keys.update(self.curve_left(curve))
        known = sorted(keys, key=lambda n: (keys[n], self.seen[n].arrival))
        by = {j.name: j for j in jobs}
        cap = np.array([self.usable(by[n]) if SLACK else self.width(by[n]) for n in known])
        alloc = fill_in_order(np.arange(len(known)), cap, capacity)
        out = dict(zip(known, alloc.tolist()))
        left = capacity - float(alloc.sum())
        if unknown:  # no finished set-up anywhere yet: by arrival (srpt) or evenly (srpt-even)
            width = np.array([self.width(j) for j in unknown])
            if self.variant == "srpt":
                unknown.sort(key=lambda j: self.seen[j.name].arrival)
                width = np.array([self.width(j) for j in unknown])
                share = fill_in_order(np.arange(len(unknown)), width, left)
            else:
                share = water_fill(width, np.ones(len(unknown)), left)
            out.update({j.name: float(c) for j, c in zip(unknown, share)})
            left -= float(share.sum())
        if left > 1e-9:  # work conservation: what nobody was ordered to take, evenly
            names = list(out)
            room = np.array([max(self.width(by[n]) - out[n], 0.0) for n in names])
            extra = water_fill(room, np.ones(len(names)), left)
            out = {n: out[n] + float(e) for n, e in zip(names, extra)}
        return out

    def curve_left(self, curve: list[LiveJob]) -> dict[str, float]:
        """Executor seconds left to each curve job's predicted 90% point: iterations to it on its fitted curve
        (floor, span) times its cost per iteration after its set-up (the set-up's cost is no iteration's).
        A job is taken as past that point (1e9 plus its cost: after every job still short of it) only once
        its curve rests on :data:`TRUST_POINTS` losses: a curve from 2-3 losses puts the floor too close."""
        if not curve:
            return {}
        table = ForecastTable([job_forecast(j.name, j.history, j.curves, j.weight, math.inf, j.order) for j in curve], self.epoch)
        ahead = np.arange(1, HORIZON + 1, dtype=float)
        loss = evaluate(table.family[:, None], table.params[:, None, :], table.k_now[:, None] + ahead[None, :])
        norm = (np.minimum(loss, table.loss_now[:, None]) - table.floor[:, None]) / table.span[:, None]
        hit = norm <= 1 - NINETY + 1e-12
        steps = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, HORIZON)
        now_norm = table.normalized_now()
        out = {}
        for i, j in enumerate(curve):
            after = j.history.core_seconds[1:]
            cost = float(np.median(after)) if after else float(table.cost[i])
            past = now_norm[i] <= 1 - NINETY + 1e-12 and len(j.history.losses) >= TRUST_POINTS
            out[j.name] = 1e9 + cost if past else max(int(steps[i]), 1) * cost
        return out

    def gain(self, jobs: Sequence[LiveJob], setup: list[LiveJob], capacity: float, now: float) -> dict[str, float]:
        synth: dict[int, tuple[float, float]] = {}  # row -> (first reduction, core-seconds left of its set-up)
        for i, j in enumerate(jobs):
            if len(j.history.losses) >= 2:
                continue
            s = self.seen[j.name]
            left, drop = self.setup_left(s), self.siblings(s, "first_drop")
            if left is not None and drop:
                synth[i] = (statistics.median(drop), max(left, 1e-3))
        if not synth:
            return self.slaq.decide(jobs, capacity, [], now).alloc
        table = ForecastTable([job_forecast(j.name, j.history, j.curves, j.weight, math.inf, j.order) for j in jobs], self.epoch)
        epoch = self.epoch

        def score(t: ForecastTable, rows: np.ndarray, alloc: np.ndarray, quantum: float) -> tuple[np.ndarray, np.ndarray]:
            gain, ok = SlaqTotal.score(t, rows, alloc, quantum)
            for r, row in enumerate(rows.tolist()):
                if row in synth:
                    drop, left = synth[row]
                    done = np.minimum(epoch * np.concatenate([alloc[r], alloc[r, -1:] + quantum]) / left, 1.0)
                    gain[r] = drop * (done[1:] - done[:-1]) * t.weight[row]
                    ok[r] = gain[r] > 1e-12
            return gain, ok

        alloc = greedy_allocate(table, capacity, score)
        out = {j.name: float(c) for j, c in zip(jobs, alloc)}
        if self.variant == "gain-srpt":
            rows = sorted(synth, key=lambda r: (synth[r][1], self.seen[jobs[r].name].arrival))
            total = sum(out[jobs[r].name] for r in rows)
            cap = np.array([self.width(jobs[r]) for r in rows])
            again = fill_in_order(np.arange(len(rows)), cap, total)
            if again.sum() < total - 1e-9:  # the widths could not take it all: keep the rest where gain put it
                again += water_fill(np.maximum(cap - again, 0.0), np.ones(len(rows)), total - float(again.sum()))
            out.update({jobs[r].name: float(c) for r, c in zip(rows, again)})
        return out


@contextlib.contextmanager
def harness(jobs: Sequence[TraceJob]) -> Iterator[None]:
    """The replay with :class:`Mirrored` jobs and, for a variant's name, a :class:`SetupAllocator`; restored after."""
    family = {j.name: j.family for j in jobs}
    saved_job, saved_alloc = rp._Job, rp.Allocator

    def make(policy: str, epoch: float, status: bool = True) -> object:
        if policy in VARIANTS:
            return SetupAllocator(policy, epoch, lambda n: family.get(n, ""))
        return saved_alloc(policy, epoch, status=status)

    rp._Job, rp.Allocator = Mirrored, make  # type: ignore[misc, assignment]
    try:
        yield
    finally:
        rp._Job, rp.Allocator = saved_job, saved_alloc  # type: ignore[misc]


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
