import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slaq.policy import POLICIES, make_policy
from slaq.policy.base import unit, water_fill
from slaq.policy.convergence import remaining_iterations, remaining_seconds
from slaq.policy.las import queue_of
from slaq.predict.forecast import ForecastTable, forecast
from slaq.stats.history import JobHistory


def job(name, losses, cost=10.0, weight=1.0, cap=np.inf, order=0.0):
    h = JobHistory()
    h.report(losses[0])
    for v in losses[1:]:
        h.report(v, cost, cost, 1.0)
    return forecast(name, h, weight=weight, cap=cap, order=order)


def fast_converging(name, **kw):  # nearly converged: little to gain
    return job(name, [10.0 * 0.5**k + 1.0 for k in range(20)], **kw)


def slow_converging(name, **kw):  # early in a long O(1/k) descent: a lot to gain
    return job(name, [1.0 / (0.05 * k + 0.1) for k in range(5)], **kw)


def table(jobs, epoch=2.0):
    return ForecastTable(jobs, epoch)


@st.composite
def tables(draw):
    n = draw(st.integers(1, 30))
    jobs = []
    for i in range(n):
        kind = draw(st.sampled_from(["new", "fast", "slow"]))
        cap = draw(st.sampled_from([np.inf, 1.0, 4.0, 16.0, 0.5]))
        weight = draw(st.sampled_from([1.0, 2.0, 0.5]))
        cost = draw(st.floats(0.5, 50))
        if kind == "new":
            jobs.append(job(f"j{i}", [5.0], cost=cost, cap=cap, weight=weight, order=i))
        elif kind == "fast":
            jobs.append(fast_converging(f"j{i}", cost=cost, cap=cap, weight=weight, order=i))
        else:
            jobs.append(slow_converging(f"j{i}", cost=cost, cap=cap, weight=weight, order=i))
    return table(jobs)


@settings(max_examples=80, deadline=None)
@given(tables(), st.floats(0.5, 200), st.sampled_from(sorted(POLICIES)))
def test_allocation_invariants(t, capacity, name):
    policy = make_policy(name)
    for _ in range(2):  # the second round sees the state stateful policies (OASiS, MLFS) kept from the first
        check_invariants(policy, t, capacity, name)


def check_invariants(policy, t, capacity, name):
    alloc = policy.allocate(t, capacity)
    assert alloc.shape == (len(t),)
    assert np.all(alloc >= -1e-12)
    assert alloc.sum() <= capacity + 1e-6
    assert np.all(alloc <= t.cap + 1e-9)
    # work conserving: no core idles while a job could use it
    assert np.isclose(alloc.sum(), min(capacity, t.cap.sum()), rtol=1e-6, atol=1e-6)
    if POLICIES[name].minimum_share:  # Algorithm 1 (and Optimus): every active job gets its minimum share
        q = unit(capacity, len(t))
        assert np.all(alloc >= np.minimum(t.cap, q) * (1 - 1e-9) - 1e-9)


def test_fractional_units_when_jobs_outnumber_cores():
    t = table([slow_converging(f"j{i}") for i in range(16)])
    alloc = make_policy("slaq").allocate(t, 4.0)
    assert np.isclose(alloc.sum(), 4.0)
    assert np.all(alloc >= 0.125 - 1e-12)  # half of the even share of 0.25


def test_slaq_gives_more_to_the_job_with_more_to_gain():
    t = table([fast_converging("done"), slow_converging("young")])
    alloc = make_policy("slaq").allocate(t, 32)
    assert alloc[1] > alloc[0] * 4
    assert alloc[0] >= 1.0


def test_new_jobs_are_explored_first():
    t = table([fast_converging("old"), job("new", [3.0])])
    alloc = make_policy("slaq").allocate(t, 16)
    assert alloc[1] > alloc[0]


def test_weight_shifts_allocation_towards_heavier_job():
    same = [slow_converging("a"), slow_converging("b")]
    base = make_policy("slaq").allocate(table(same), 31)
    weighted = make_policy("slaq").allocate(table([slow_converging("a", weight=4.0), slow_converging("b")]), 31)
    assert weighted[0] > base[0] and weighted[1] < base[1]
    fair = make_policy("fair").allocate(table([slow_converging("a", weight=3.0), slow_converging("b")]), 8)
    assert np.allclose(fair, [6.0, 2.0])


def test_maxmin_helps_the_worst_job_first():
    t = table([fast_converging("ahead"), slow_converging("behind")])
    alloc = make_policy("slaq-maxmin").allocate(t, 20)
    assert alloc[1] > alloc[0]
    before = t.normalized_loss_at(np.array([1.0, 1.0]))
    after = t.normalized_loss_at(alloc)
    assert after.max() < before.max()


def test_maxmin_does_not_waste_cores_on_a_job_it_cannot_help():
    stuck = job("stuck", [5.0, 5.0, 5.0, 5.0, 5.0])  # flat: more cores predict nothing
    t = table([stuck, slow_converging("moving", cap=6.0)])
    alloc = make_policy("slaq-maxmin").allocate(t, 10)
    assert alloc[1] == 6.0  # the job that can improve gets all it can use first


def test_fair_is_even_and_respects_caps():
    t = table([slow_converging("a", cap=1.0), slow_converging("b"), slow_converging("c")])
    assert np.allclose(make_policy("fair").allocate(t, 9), [1.0, 4.0, 4.0])


def test_fifo_serves_in_arrival_order():
    t = table([slow_converging("late", order=2.0, cap=8.0), slow_converging("early", order=1.0, cap=8.0)])
    assert np.allclose(make_policy("fifo").allocate(t, 10), [2.0, 8.0])


def test_water_fill_weighted():
    alloc = water_fill(np.array([1.0, np.inf, np.inf]), np.array([1.0, 1.0, 2.0]), 10.0)
    assert np.allclose(alloc, [1.0, 3.0, 6.0])


def test_unknown_policy_has_clear_error():
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        make_policy("nope")


def test_empty_table():
    for name in POLICIES:
        assert make_policy(name).allocate(table([]), 10).shape == (0,)


def test_every_policy_simulates_and_the_live_key_takes_the_ones_measured_live():
    from slaq.live.config import LIVE_POLICIES, ConfigError, SlaqConfig

    assert {"slaq", "slaq-maxmin", "fair", "fifo", "las", "optimus", "oasis", "mlfs", "harmony"} <= set(POLICIES)
    assert set(LIVE_POLICIES) - {"order"} == {"slaq", "fair"} <= set(POLICIES)  # order ranks the pools: the replay's, not the fluid model's
    for name in LIVE_POLICIES:
        assert SlaqConfig.from_conf({"spark.slaq.policy": name}.get).policy == name
    with pytest.raises(ConfigError, match="spark.slaq.policy='oasis': expected one of fair, order, slaq"):
        SlaqConfig.from_conf({"spark.slaq.policy": "oasis"}.get)


def test_las_serves_the_least_served_job_first():
    old = job("old", [1.0 / (0.05 * k + 0.1) for k in range(40)], cap=8.0, order=0.0)  # arrived first, 39 iterations done
    new = slow_converging("new", cap=8.0, order=1.0)  # 4 iterations done
    t = table([old, new])
    assert queue_of(t)[0] > queue_of(t)[1]
    assert np.allclose(make_policy("las").allocate(t, 8), [0.0, 8.0])
    assert np.allclose(make_policy("las").allocate(t, 12), [4.0, 8.0])
    same = table([slow_converging("b", cap=8.0, order=2.0), slow_converging("a", cap=8.0, order=1.0)])
    assert np.allclose(make_policy("las").allocate(same, 8), [0.0, 8.0])  # same queue: FIFO


def test_optimus_gives_cores_by_marginal_time_saved():
    t = table([fast_converging("done"), slow_converging("young"), slow_converging("costly", cost=40.0)])
    alloc = make_policy("optimus").allocate(t, 48)
    assert np.isclose(alloc.sum(), 48) and alloc[1] > alloc[0] and alloc[2] > alloc[0]
    remaining = remaining_iterations(t)
    assert remaining[0] < remaining[1]

    def gain(j, cores):  # predicted remaining seconds one more core saves job j
        before, after = remaining_seconds(t, np.array([cores, cores + 1.0]), np.full(2, remaining[j]), np.array([j, j]))
        return before - after

    # greedy optimality: no core could move from one job to another and save more time
    for i in range(3):
        for j in range(3):
            if i != j and alloc[i] > 1.0:
                assert gain(i, alloc[i] - 1.0) >= gain(j, alloc[j]) - 1e-9


def test_oasis_delays_a_low_utility_job_when_prices_are_high():
    oasis = make_policy("oasis")
    big = slow_converging("big", order=0.0)  # admitted into the empty cluster; commits most of it
    oasis.allocate(table([big]), 100)
    assert "big" in oasis.admitted and oasis.admitted["big"] > 50
    low = slow_converging("low", weight=0.05, cap=20.0, order=1.0)
    high = slow_converging("high", weight=1.0, cap=20.0, order=2.0)
    alloc = oasis.allocate(table([big, low, high]), 100)
    assert oasis.last_decisions["low"]["payoff"] < 0 < oasis.last_decisions["high"]["payoff"]
    assert alloc[1] == 0.0 and alloc[2] > 0 and "low" not in oasis.admitted
    empty = make_policy("oasis")  # the same job is admitted at the low price of an empty cluster
    assert np.allclose(empty.allocate(table([low]), 100), [20.0]) and "low" in empty.admitted


def test_mlfs_priority_stop_and_waiting():
    mlfs = make_policy("mlfs")
    t = table([fast_converging("late", cap=8.0, order=0.0), slow_converging("early", cap=8.0, order=1.0)])
    assert mlfs.priority(t)[1] > mlfs.priority(t)[0]  # early iterations with big reductions first (Eq. 2)
    assert np.allclose(mlfs.allocate(t, 8), [0.0, 8.0])
    # MLF-C: a job that reached its target is stopped under overload even if its priority is the highest
    urgent = table([fast_converging("done", weight=1e6, cap=8.0, order=0.0), slow_converging("young", cap=8.0, order=1.0)])
    assert mlfs.priority(urgent)[0] > mlfs.priority(urgent)[1]
    assert np.allclose(make_policy("mlfs").allocate(urgent, 8), [0.0, 8.0])
    assert np.allclose(make_policy("mlfs").allocate(urgent, 16), [8.0, 8.0])  # not overloaded: runs as asked
    # waiting raises priority (Eq. 4): equal jobs take turns
    rotating = make_policy("mlfs")
    same = table([slow_converging(f"s{i}", cap=8.0, order=float(i)) for i in range(3)])
    served = {int(np.argmax(rotating.allocate(same, 8))) for _ in range(3)}
    assert served == {0, 1, 2}


def test_harmony_groups_complementary_jobs_only():
    from slaq.policy.harmony import complementary_groups

    compute = np.array([9.0, 1.0, 9.0, 9.5])  # core-seconds per iteration
    network = np.array([1.0, 9.0, 1.0, 0.5])  # job 1 is network-heavy, the others CPU-heavy
    groups = complementary_groups(compute, network, np.full(4, 4.0))
    assert groups[1] in (groups[0], groups[2], groups[3])  # the network-heavy job is paired with a CPU-heavy one
    cpu_heavy = [g for j, g in enumerate(groups) if j != 1 and g != groups[1]]
    assert len(set(cpu_heavy)) == len(cpu_heavy)  # two CPU-heavy jobs gain nothing together
    assert np.array_equal(complementary_groups(compute, np.zeros(4), np.full(4, 4.0)), np.arange(4))  # no network: no grouping
