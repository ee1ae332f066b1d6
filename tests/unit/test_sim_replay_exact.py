"""The replay's shortcuts for thousands of jobs (slaq.sim.replay) change no decision: the offer order is a full
stable sort's, shared curve fits, reused forecasts and an allocator without status figures
give the replay of the plain per-job code bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from slaq.live.allocation import Allocator
from slaq.live.job import LiveJob
from slaq.predict.forecast import CurveCache, forecast, job_forecast
from slaq.predict.loss_curves import fit_loss_curve
from slaq.sim import check, replay
from slaq.sim.pools import PoolArrays, offer_order
from slaq.sim.trace import Phase, Stage, Trace, TraceJob
from slaq.stats.history import JobHistory


def reference_order(pools: PoolArrays, stock: bool, work_conserving: bool) -> list[int]:
    """The waiting pools in the order one Python sort over every job gives (the replay's order before numpy)."""
    tokens, deposit, running, weight = (a.tolist() for a in (pools.tokens, pools.deposit, pools.running, pools.weight))
    waiting = [i for i, p in enumerate(pools.pending.tolist()) if p > 0]
    if stock:
        return sorted(waiting, key=lambda i: (running[i] / weight[i], i))

    def rank(i: int) -> tuple[int, float]:
        fraction = tokens[i] / deposit[i] if deposit[i] > 0 else (1.0 if tokens[i] > 0 else -1e9 + tokens[i])
        return (0 if tokens[i] > 0 else 1, -fraction)

    ranked = sorted(waiting, key=rank)  # stable: ties to the earlier job
    return ranked if work_conserving else [i for i in ranked if tokens[i] > 0]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("stock, work_conserving", [(True, True), (False, True), (False, False)])
def test_the_offer_order_is_what_a_full_stable_sort_puts_first_ties_included(seed, stock, work_conserving):
    rng = np.random.default_rng(seed)
    n = 60
    pools = PoolArrays(rng.choice([1.0, 2.0], n).tolist())
    pools.pending[:] = rng.choice([0, 1, 3], n)
    pools.running[:] = rng.choice([0, 1, 2], n)
    pools.tokens[:] = rng.choice([-1.5, -0.0, 0.0, 0.5, 1.0, 2.0], n)  # many ties, both zeros
    pools.deposit[:] = rng.choice([0.0, 1.0, 2.0], n)
    expected = reference_order(pools, stock, work_conserving)
    waiting = np.flatnonzero(pools.pending > 0)
    for k in (1, 2, 3, 7, n):
        assert offer_order(pools, waiting, stock, work_conserving, k).tolist() == expected[:k]


def test_a_reused_forecast_is_the_one_a_fresh_fit_would_give_and_a_report_renews_it():
    history, curves = JobHistory(), CurveCache()
    for k, loss in enumerate((1.0, 0.6, 0.4, 0.3, 0.25)):
        history.report(loss, 2.0 + k, 1.0, 2.0, at=float(k))
        made = job_forecast("j", history, curves, 1.0, math.inf, 3.0)
        assert job_forecast("j", history, curves, 1.0, math.inf, 3.0) is made  # nothing changed: reused
        assert made == forecast("j", history, 1.0, math.inf, 3.0, fit_loss_curve(history.losses) if k >= 1 else None)
        assert job_forecast("j", history, curves, 2.0, math.inf, 3.0).weight == 2.0  # other arguments: made anew


def test_jobs_replaying_one_trace_job_share_its_fits_and_refit_on_each_new_loss_as_the_live_cache_does(monkeypatch):
    calls = []
    monkeypatch.setattr(replay, "fit_loss_curve", lambda losses: calls.append(list(losses)) or fit_loss_curve(losses))
    memo: dict = {}
    a, b, plain = replay.SharedFits(memo=memo), replay.SharedFits(memo=memo), CurveCache()
    losses = [1.0, 0.5, 0.3, 0.2, 0.15]
    for n in range(2, len(losses) + 1):
        assert a.current(losses[:n]) == b.current(losses[:n]) == plain.current(losses[:n])
        assert a.fitted[0] == b.fitted[0] == n
    assert calls == [losses[:n] for n in range(2, len(losses) + 1)]  # one fit per history, not one per job


def test_an_allocator_without_status_figures_decides_the_same_cores():
    def jobs() -> list[LiveJob]:
        out = []
        for i in range(6):
            j = LiveJob(f"j{i}", order=float(i))
            for k, loss in enumerate((1.0, 0.5, 0.3, 0.2)[: i % 4 + 1]):
                j.history.report(loss / (i + 1), 1.0 + i, 1.0, 1.0, at=float(k))
            out.append(j)
        return out

    for policy in ("slaq", "fair"):
        full, bare = Allocator(policy, 1.0).decide(jobs(), 4.0, [], 0.0), Allocator(policy, 1.0, status=False).decide(jobs(), 4.0, [], 0.0)
        assert bare.alloc == full.alloc and full.figures and not bare.figures and bare.table is None


def _plain_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay as it was before its shortcuts: per-job fits, status figures, full sorts."""
    monkeypatch.setattr(replay, "SharedFits", lambda memo: CurveCache())
    monkeypatch.setattr(replay, "Allocator", lambda policy, epoch, status: Allocator(policy, epoch))
    monkeypatch.setattr(replay, "first_of", lambda keys, rows, k: rows[np.argsort(keys, kind="stable")[:k]])


@pytest.mark.parametrize("policy", ["slaq", "fair", replay.STOCK])
def test_a_projection_replays_bit_for_bit_as_the_plain_code_does(monkeypatch, policy):
    base = [TraceJob(f"j{i}", "t", 0.3 * i, (1.0, 0.6, 0.4, 0.3, 0.25, 0.22),
                     tuple(Phase(0.05 * (i % 3), (Stage(2 + i % 3, 0.8 + 0.3 * i),), 0.02) for _ in range(6))) for i in range(4)]
    jobs = check.scaled(Trace(tuple(base), 2, 1.0, {"arrival_mean_s": 0.5}), 8, seed=3)  # 16 jobs, each base job 4 times
    fast = replay.replay(jobs, policy, 8, 1.0, min_step_gap=check.STEP_GAP)
    _plain_replay(monkeypatch)
    plain = replay.replay(jobs, policy, 8, 1.0, min_step_gap=check.STEP_GAP)
    assert (fast.jobs, fast.makespan, fast.steps) == (plain.jobs, plain.makespan, plain.steps)
