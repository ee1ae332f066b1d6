import numpy as np
import pytest

from slaq.policy import POLICIES, greedy
from slaq.sim.engine import simulate
from slaq.sim.workload import make_workload
from slaq.traces.catalog import load


@pytest.fixture(scope="module")
def small():
    return make_workload(30, 15, 7, cost_scale=60)


def test_slaq_beats_fair_on_fixed_seed(small):
    slaq = simulate(small, "slaq", 128).summary()
    fair = simulate(small, "fair", 128).summary()
    assert slaq["mean_normalized_loss"] < fair["mean_normalized_loss"] * 0.8
    assert slaq["mean_time_to_90pct_s"] < fair["mean_time_to_90pct_s"] * 0.8
    assert slaq["core_share_by_loss_group"]["high_25pct"] > fair["core_share_by_loss_group"]["high_25pct"]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_job_finishes_with_consistent_times(small, policy):
    result = simulate(small, policy, 128)
    assert len(result.jobs) == 30
    for j in result.jobs:
        assert 0 <= j["time_to_90pct_s"] <= j["time_to_95pct_s"] <= j["finished_s"] + 1e-6


def test_core_time_matches_work_done(small):
    """Every core-second handed out is either spent on iterations or on nothing, never invented."""
    result = simulate(small, "fair", 128)
    total_work = sum(float(j.costs.sum()) for j in small.jobs)
    busy = sum(i.duration * sum(i.group_cores) for i in result.intervals)
    assert busy >= total_work * (1 - 1e-6)
    assert busy <= 128 * sum(i.duration for i in result.intervals) + 1e-6


def test_scheduler_only_sees_reported_history(small, monkeypatch):
    seen = []
    real = greedy.greedy_allocate

    def spy(table, capacity, score):
        seen.append([(j.job_id, j.k_now, j.loss_now) for j in table.jobs])
        return real(table, capacity, score)

    monkeypatch.setattr(greedy, "greedy_allocate", spy)
    simulate(small, "slaq", 128)
    by_id = {j.job_id: j for j in small.jobs}
    assert seen
    for snapshot in seen:
        for job_id, k, loss in snapshot:
            assert loss == by_id[job_id].losses[int(k)]  # the latest reported loss, nothing beyond


def test_reserve_shrinks_capacity(small):
    full = simulate(small, "fair", 128).summary()
    reserved = simulate(small, "fair", 128, reserve=64).summary()
    assert reserved["mean_time_to_90pct_s"] > full["mean_time_to_90pct_s"]


def test_workload_is_deterministic_and_validated():
    a, b = make_workload(5, 10, 3), make_workload(5, 10, 3)
    assert [j.arrival for j in a.jobs] == [j.arrival for j in b.jobs]
    assert all(np.array_equal(x.costs, y.costs) for x, y in zip(a.jobs, b.jobs))
    with pytest.raises(ValueError):
        make_workload(0, 10, 3)


def test_recorded_traces_cover_the_paper_families():
    families = {t.family for t in load()}
    assert {"logreg", "svm", "linreg", "kmeans", "mlp", "gbt", "topic_em"} <= families


def test_network_model_is_off_by_default_and_pipelines_complementary_groups():
    from slaq.sim.network import effective_cores

    assert all(j.network == 0 for j in make_workload(20, 10, 3).jobs)
    assert [j.arrival for j in make_workload(20, 10, 3).jobs] == [j.arrival for j in make_workload(20, 10, 3, network_ratio=1.0).jobs]
    compute, network, alloc = np.array([9.0, 1.0]), np.array([1.0, 9.0]), np.array([4.0, 4.0])
    alone = effective_cores(compute, network, alloc, None)
    assert np.allclose(alone, alloc * compute / (compute + network))  # dedicated: cores idle while sending
    together = effective_cores(compute, network, alloc, np.array([0, 0]))
    assert np.allclose(together, 2 * alone)  # pipelined: each iteration takes half as long


def test_harmony_beats_dedicated_allocation_with_a_network_phase():
    w = make_workload(30, 15, 7, cost_scale=60, network_ratio=1.0)
    fair = simulate(w, "fair", 128).summary()
    harmony = simulate(w, "harmony", 128).summary()
    assert harmony["mean_completion_s"] < fair["mean_completion_s"] * 0.9
    assert harmony["makespan_s"] < fair["makespan_s"]
    plain = make_workload(30, 15, 7, cost_scale=60)
    assert simulate(plain, "harmony", 128).jobs == simulate(plain, "fair", 128).jobs  # no network: exactly fair
