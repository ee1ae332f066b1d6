"""Task-level replay of a recorded live workload (:mod:`slaq.sim.trace`) on ``C`` executor cores.

What :mod:`slaq.sim.engine` treats as a fluid (cores x seconds), this replays as Spark runs it, so it
can be checked against the live runs the trace came from:

* each job runs its phases in order: its driver time and its Spark jobs' latency (no executor core:
  the driver runs elsewhere), and its stages one after another, the driver time before each where the trace
  places it (``Phase.wait_before``), each ``tasks`` tasks of equal length; a task, once launched, runs
  to its end (Spark never preempts one). Its loss is reported when its phase's last task ends.
* free cores are offered once per event (a task ending, a stage submitted), in one sorted round, the
  first job in the order taking every free core it has tasks for, as Spark's ``resourceOffers`` does.
* where the trace records which executor's cached data a stage's tasks read (``Stage.local``, checked on the
  live run's executors, each an even share of the cores), a job's tasks held for an executor take its cores
  first and refuse the others', as Spark's delay scheduling does (a refused core goes to the next job in the
  order), until the stage has gone ``spark.locality.wait`` without a round that ran a held task and refused no
  core; then they run on any executor (one host: Spark's next level) until one runs on its own again. A
  projection has no such executors.
* ``stock``: Spark's FAIR scheduler with one pool per job, weight 1, min share 0: fewest running tasks
  first, ties to the earlier job (pools named by arrival, ``srlab.slaq_bench.configs.stock_pool_name``).
* any policy of :mod:`slaq.policy` (``slaq``, ``fair``, ...): SLAQ's live path. The epoch loop's
  :class:`~slaq.live.allocation.Allocator` decides on each job's history (losses, core-seconds and wall
  time per iteration, as the pools report them) at every epoch, deposited as ``cores x epoch`` core-second
  tokens (unspent surplus lost, debt carried), and whenever a job arrives or ends, for the rest of the
  epoch only (each pool gains or gives back its change in cores times the seconds left). Running tasks
  draw the tokens down, and the pools are ordered as ``JobsPool`` orders them (pools with tokens first,
  by the fraction of their epoch's grant left; then, work-conserving, the throttled ones).
* ``order``: SLAQ's live path with the ranking policy (:mod:`slaq.live.setup_order`): SLAQ's tokens, the pools
  offered cores by the ranks each decision sets while a job is short of its 90% point, as ``JobsPool`` offers them.
* ``clairvoyant``: the limit of an order, for comparison: each job's future known (its losses, so its 90%
  point, and its work), free cores go first to the job with the fewest executor seconds left to its 90%
  point, then to jobs past that point (fewest seconds left to their end first), then to the Spark jobs
  outside every job; a job that reports no loss has no 90% point and goes with the jobs past theirs. Tasks
  stay unpreempted and driver time and latency stay, as for every policy, so the distance from a policy to
  this order is what the policy does not know.
* Spark jobs outside every job (``TraceJob.outside``: a CrossValidator's evaluations) run in Spark's
  ``default`` pool, first in first out, which no policy allocates: beside each job's pool under ``stock``,
  beside SLAQ's ``slaq`` pool under a policy (Spark's FAIR order at the root: fewer running tasks first,
  a tie to the name sorting first). They are no job of the result.

Left out: the driver's own CPU use on the executors' machine, scheduler delays (a revive every second, offers
of one executor's cores) and the epoch loop's own time. Pure: no Spark, no clock.

Cost, for thousands of jobs: the pools are numpy arrays, so an event's token draw-down and offer order are a
few array operations (the same float64 arithmetic, the same stable order) rather than a Python pass over every
job; jobs replaying the same trace job share its curve fits (a fit is a pure function of the losses); and the
allocator decides without the status's figures. The decisions are those of the plain per-job code, bit for bit.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from slaq.live.allocation import Allocator
from slaq.live.job import LiveJob
from slaq.live.registry import NO_LOSS_EPOCHS
from slaq.metrics import NINETY, THRESHOLDS, time_to_key, time_to_reduction
from slaq.predict.forecast import CurveCache
from slaq.predict.loss_curves import Curve, fit_loss_curve
from slaq.sim.locality import place
from slaq.sim.pools import PoolArrays, first_of, offer_order
from slaq.sim.trace import LOCALITY_WAIT_S, TraceJob, ninety_phase

STOCK = "stock"  # Spark's own FAIR scheduler, SLAQ off
CLAIRVOYANT = "clairvoyant"  # the order that knows each job's future (module docstring)
_PAST_NINETY, _OUTSIDE = 1e9, 2e9  # the clairvoyant order's key: seconds left, plus these past the 90% point / outside every job
_ARRIVE, _DRIVER_DONE, _TASKS_DONE, _STEP, _HELD = 0, 1, 2, 3, 4  # _HELD: a stage's locality wait runs out
_TICK, _WAKE = -1, -2  # a _STEP event's ``who``: the epoch's end, or a decision held back by ``min_step_gap``


@dataclass(eq=False)
class SharedFits(CurveCache):
    """A job's :class:`CurveCache` drawing its fits from ``memo``, shared by the replay's jobs: a fit is a pure
    function of the losses, and a scaled workload repeats its trace's jobs, so thousands of jobs report the
    same few loss histories. Each job still refits exactly when it has new losses, as the live loop does."""

    memo: dict[bytes, Curve] = field(default_factory=dict)

    def fit(self, losses: list[float]) -> Curve:
        key = np.asarray(losses, dtype=float).tobytes()
        curve = self.memo.get(key)
        if curve is None:
            curve = self.memo[key] = fit_loss_curve(losses)
        return curve


@dataclass(eq=False)
class _Job:
    spec: TraceJob
    index: int
    live: LiveJob
    phase: int = 0
    stage: int = -1  # -1: in its phase's driver time
    consumed: float = 0.0  # core-seconds its tasks ran so far
    stage_seconds: float = 0.0  # seconds it had a stage in the scheduler
    stage_started: float = 0.0
    held: list[int] = field(default_factory=list)  # per executor, its stage's tasks waiting for that executor's cached data
    held_since: float = 0.0  # the stage's locality timer: since its submission or its latest round that ran a held task and refused no core
    held_until: float = -1.0  # when its pending _HELD event falls
    anywhere: bool = False  # its held tasks waited out the timer: they run on any executor until one runs on its own again
    last: tuple[float, float, float] | None = None  # (time, consumed, stage seconds) at its latest report
    times: list[float] = field(default_factory=list)
    finished: float | None = None


@dataclass(frozen=True)
class ReplayResult:
    policy: str
    cores: int
    jobs: list[dict]  # per job: arrival, finish and time to each threshold, from its arrival
    makespan: float
    steps: int

    def mean(self, threshold: float = NINETY) -> float:
        values = [j[time_to_key(threshold)] for j in self.jobs if j.get(time_to_key(threshold)) is not None]
        return sum(values) / len(values) if values else math.nan


def replay(jobs: Sequence[TraceJob], policy: str, cores: int, epoch: float = 1.0, work_conserving: bool = True,
           progress: Callable[[float, int, int], None] | None = None, min_step_gap: float = 0.0,
           executors: int = 1, locality_wait: float = LOCALITY_WAIT_S) -> ReplayResult:
    """Run ``jobs`` under ``policy`` (``stock`` or a :mod:`slaq.policy` name) on ``cores`` executor cores.

    ``min_step_gap``: the epoch loop decides again on an arrival or an end at most this often (0: at once,
    as the live loop does when its decision takes no time; at thousands of jobs a decision takes a while).
    ``executors``: the cores split evenly over that many executors, each stage's tasks held for the executor
    caching their data (``Stage.local``) as Spark holds them, for up to ``locality_wait`` seconds; 1: any task on
    any core."""
    if cores < 1 or epoch <= 0 or executors < 1 or cores % executors or locality_wait < 0:
        raise ValueError("cores must be >= 1, epoch > 0, executors a divisor of the cores and the locality wait >= 0")
    allocator = None if policy in (STOCK, CLAIRVOYANT) else Allocator(policy, epoch, status=False)  # the cores, not the status's figures
    order = sorted(range(len(jobs)), key=lambda i: jobs[i].arrival)
    fits: dict[bytes, Curve] = {}
    states = [_Job(jobs[i], n, LiveJob(jobs[i].name, jobs[i].weight, reports=jobs[i].reports, order=float(n), curves=SharedFits(memo=fits),
                                       family=jobs[i].family if jobs[i].reports is not None else "")) for n, i in enumerate(order)]
    pools = PoolArrays([s.spec.weight for s in states], [s.spec.outside for s in states])
    pending, running = pools.pending, pools.running
    futures = [_future(s.spec) for s in states] if policy == CLAIRVOYANT else []

    def clairvoyant_key(s: _Job) -> None:
        ninety, to_ninety, to_end = futures[s.index]
        pools.left[s.index] = (_OUTSIDE + to_end if s.spec.outside else to_ninety if s.phase <= ninety else _PAST_NINETY + to_end) - s.consumed
    events: list[tuple[float, int, int, int, int, int]] = []
    seq = 0

    def push(t: float, kind: int, who: int = -1, count: int = 0, executor: int = 0) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, who, count, executor))

    for s in states:
        push(s.spec.arrival, _ARRIVE, s.index)
    active: dict[int, _Job] = {}  # by index: in arrival order, as the arrivals are popped
    free = [cores // executors] * executors
    steps, epochs, done, said, arrived = 0, 0, 0, 0, 0
    last_step, wake_pending, next_tick = -math.inf, False, -math.inf

    def start_phase(s: _Job, t: float) -> None:
        s.stage = -1
        push(t + s.spec.phases[s.phase].wait_before(0), _DRIVER_DONE, s.index)

    def next_stage(s: _Job, t: float) -> bool:
        """Submit the job's next stage; False when its phase has none left (the phase ends now)."""
        stages = s.spec.phases[s.phase].stages
        s.stage += 1
        if s.stage >= len(stages):
            return False
        pending[s.index], running[s.index] = stages[s.stage].tasks, 0
        s.stage_started = s.held_since = t
        s.anywhere = False
        s.held = list(stages[s.stage].local) if executors > 1 and len(stages[s.stage].local) == executors else []
        if futures:
            clairvoyant_key(s)
        return True

    def end_phase(s: _Job, t: float) -> bool:
        """Report the phase's loss; True when the job is finished."""
        if s.spec.losses:  # a silent job reports none (its one phase is its whole work)
            s.times.append(t)
            if allocator is not None and not s.spec.outside:
                _report(s, s.spec.losses[s.phase], t)
        s.phase += 1
        if s.phase >= len(s.spec.phases):
            s.finished = t
            return True
        start_phase(s, t)
        return False

    def step(t: float, tick: bool) -> None:
        nonlocal steps, epochs, last_step, next_tick
        assert allocator is not None
        last_step = t
        on = [s for s in active.values() if not s.spec.outside]  # SLAQ's jobs; Spark's default pool is not its to allocate
        for s in on if tick else ():  # as JobRegistry.closed_pools counts them: epochs, not decisions
            s.live.silent_epochs = 0 if s.live.history.losses else min(s.live.silent_epochs + 1, NO_LOSS_EPOCHS)
        for s in on:  # what the pools reported at the drain before the decision
            s.live.consumed = s.consumed
        decision = allocator.decide([s.live for s in on], float(cores), [], t)
        alloc, ranks = decision.alloc, decision.ranks
        rows = [s.index for s in on]
        new = np.array([alloc.get(s.live.name, 0.0) for s in on])
        pools.ranked = bool(ranks)
        if ranks:
            pools.rank[rows] = [ranks.get(s.live.name, math.inf) for s in on]
        if tick:
            epochs += 1
            next_tick = t + epoch
            push(next_tick, _STEP, _TICK)  # the only one pending: decisions between epochs keep the epoch's end
        pools.grant(np.array(rows, dtype=np.int64), new, epoch if tick else next_tick - t, epochs)
        steps += 1

    while events:
        t = events[0][0]
        if allocator is not None:
            pools.settle(t, arrived)
        changed = False
        while events and events[0][0] <= t:
            _, _, kind, who, count, executor = heapq.heappop(events)
            if kind == _HELD:
                continue
            if kind == _STEP:
                if who == _WAKE:
                    wake_pending = False
                if active:
                    changed = True
                continue
            s = states[who]
            if kind == _ARRIVE:
                active[who] = s
                arrived = who + 1
                start_phase(s, t)
                changed = True
            elif kind == _DRIVER_DONE:
                if not next_stage(s, t) and end_phase(s, t):
                    del active[who]
                    done += 1
                    changed = True
            elif kind == _TASKS_DONE:
                running[who] -= count
                free[executor] += count
                s.consumed += count * s.spec.phases[s.phase].stages[s.stage].task_seconds
                if futures:
                    clairvoyant_key(s)
                if pending[who] == 0 and running[who] == 0:
                    s.stage_seconds += t - s.stage_started
                    wait = s.spec.phases[s.phase].wait_before(s.stage + 1)
                    if wait > 0:
                        push(t + wait, _DRIVER_DONE, who)
                    elif not next_stage(s, t) and end_phase(s, t):
                        del active[who]
                        done += 1
                        changed = True
        if changed and allocator is not None and active:
            tick = t >= next_tick - 1e-12
            if tick or t - last_step >= min_step_gap - 1e-12:
                step(t, tick)
            elif not wake_pending:
                wake_pending = True
                push(last_step + min_step_gap, _STEP, _WAKE)
        _offer(states, pools, arrived, free, t, push, policy, work_conserving, locality_wait)
        if progress is not None and done >= said + 100:
            said = done
            progress(t, done, len(states))
    finished = [s for s in states if s.finished is not None]
    return ReplayResult(policy, cores, [_record(s) for s in finished if not s.spec.outside],
                        max((s.finished or 0.0) for s in finished) if finished else 0.0, steps)


def _report(s: _Job, loss: float, t: float) -> None:
    """What ``slaq.live.registry.append`` does with a pool's report: cost and wall time since the previous one."""
    if s.last is None:
        s.live.history.report(loss, at=t)
    else:
        wall = max(t - s.last[0], 1e-6)
        used = max(s.consumed - s.last[1], 0.0)
        s.live.history.report(loss, used, wall, used / wall if used > 0 else None, at=t)
        s.live.driver.add(wall, s.stage_seconds - s.last[2], used)
    s.last = (t, s.consumed, s.stage_seconds)
    s.live.last = (t, s.consumed)


def _future(job: TraceJob) -> tuple[int, float, float]:
    """What the clairvoyant order knows of a job: its 90% phase, its executor seconds to that phase and to its end
    (a silent job has no 90% point: it goes with the jobs past theirs)."""
    ninety = -1 if job.silent else ninety_phase(job)
    return ninety, job.work_to(ninety)[0], job.work_to(len(job.phases) - 1)[0]


def _offer(states: Sequence[_Job], pools: PoolArrays, arrived: int, free: list[int], t: float, push: Callable[..., None], policy: str,
           work_conserving: bool, locality_wait: float) -> None:
    """One offer round: the free cores of each executor to the waiting tasks, in the scheduler's order.

    Each job's tasks are placed by :func:`slaq.sim.locality.place`. Once the stage has gone ``locality_wait``
    without a round that ran a held task and refused no core, its held tasks may run anywhere, and stay so until a
    round runs one on its own executor again (Spark's ``resetDelayScheduleTimer``)."""
    if sum(free) <= 0:
        return
    waiting = np.flatnonzero(pools.pending[:arrived] > 0)
    if not waiting.size:
        return
    pending, running = pools.pending, pools.running
    k = sum(free) if len(free) == 1 else waiting.size  # a job refusing a core leaves it to the next
    order = first_of(pools.left[waiting], waiting, k) if policy == CLAIRVOYANT else offer_order(pools, waiting, policy == STOCK, work_conserving, k)
    for i in order.tolist():
        s = states[i]
        held = sum(s.held)
        loose = int(pending[i]) - held  # tasks any executor may run
        if held and not s.anywhere and t >= s.held_since + locality_wait:  # the _HELD event's own sum: no rounding between them
            s.anywhere = True
        took, own, refused = place(free, s.held, loose, s.anywhere)
        seconds = s.spec.phases[s.phase].stages[s.stage].task_seconds
        for e, n in enumerate(took):
            if n:
                pending[i] -= n
                running[i] += n
                free[e] -= n
                push(t + seconds, _TASKS_DONE, i, n, e)
        if own and not refused:
            s.held_since, s.anywhere = t, False
        elif refused and s.held_until != s.held_since + locality_wait:
            s.held_until = s.held_since + locality_wait
            push(s.held_until, _HELD, i)  # an offer round then, as Spark's revive makes one: the tasks may go anywhere
        if not any(free):
            break


def _record(s: _Job) -> dict:
    out = {"job": s.spec.name, "family": s.spec.family, "arrival_s": round(s.spec.arrival, 3),
           "finished_s": round((s.finished or 0.0) - s.spec.arrival, 3)}
    for thr in THRESHOLDS:
        hit = time_to_reduction(s.times, list(s.spec.losses), thr)
        out[time_to_key(thr)] = None if hit is None else round(hit - s.spec.arrival, 3)
    return out
