"""The lab's set-up policies in the replay (srlab.slaq_bench.setup_policies): ``order`` hands cores in its keys' order,
and the harness leaves the replay as it found it."""

from __future__ import annotations

import slaq.sim.pools as sim_pools
import slaq.sim.replay as rp
from slaq.sim.trace import Phase, Stage, TraceJob
from srlab.slaq_bench import setup_policies as sp

LOSSES = (1.0, 0.5, 0.2, 0.05, 0.0)


def fit(name: str, family: str, arrival: float, setup_tasks: int, silent: bool = False) -> TraceJob:
    """A fit whose set-up (its first phase) is ``setup_tasks`` one-second tasks, then four cheap iterations."""
    phases = (Phase(0.0, (Stage(setup_tasks, float(setup_tasks)),)), *(Phase(0.0, (Stage(2, 0.2),)) for _ in range(4)))
    return TraceJob(name, family, arrival, () if silent else LOSSES, phases[:1] if silent else phases, reports=not silent)


def test_order_serves_the_fit_whose_siblings_showed_a_cheap_set_up_first_and_the_harness_restores_the_replay():
    # one fit of each family shows its set-up's cost; then an expensive fit arrives just before a cheap one, repeatedly
    jobs = [fit("big-0", "big", 0.0, 16), fit("small-0", "small", 0.1, 2)]
    jobs += [fit(f"{family}-{i}", family, 20.0 + i + (0.1 if family == "small" else 0.0), 16 if family == "big" else 2)
             for i in range(1, 5) for family in ("big", "small")]
    saved = rp.offer_order, sim_pools.offer_order, rp.Allocator
    fair, order = (sp.run(jobs, policy, 2, 1.0, True, 0.0) for policy in ("fair", "order"))
    assert (rp.offer_order, sim_pools.offer_order, rp.Allocator) == saved
    def late_small(result: rp.ReplayResult) -> list[float]:
        return [j["time_to_90pct_s"] for j in result.jobs if j["family"] == "small" and j["arrival_s"] >= 20]

    assert max(late_small(order)) < min(late_small(fair)) and order.mean() < fair.mean()
    assert len(order.jobs) == len(jobs) and order.makespan <= fair.makespan * 1.05


def test_order_puts_a_fit_that_reports_no_loss_after_every_fit_that_does():
    jobs = [fit("gbt-0", "gbt", 0.0, 8, silent=True), fit("lr-0", "lr", 0.5, 4), fit("lr-1", "lr", 0.6, 4)]
    order = {j["job"]: j for j in sp.run(jobs, "order", 2, 1.0, True, 0.0).jobs}
    assert order["gbt-0"]["finished_s"] > max(order[n]["finished_s"] - 0.5 for n in ("lr-0", "lr-1"))
