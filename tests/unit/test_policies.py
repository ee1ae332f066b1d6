import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slaq.policy import POLICIES, make_policy
from slaq.policy.base import unit, water_fill
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
    alloc = make_policy(name).allocate(t, capacity)
    assert alloc.shape == (len(t),)
    assert np.all(alloc >= -1e-12)
    assert alloc.sum() <= capacity + 1e-6
    assert np.all(alloc <= t.cap + 1e-9)
    # work conserving: no core idles while a job could use it
    assert np.isclose(alloc.sum(), min(capacity, t.cap.sum()), rtol=1e-6, atol=1e-6)
    if name.startswith("slaq"):  # Algorithm 1: every active job gets its minimum share
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
