"""The ``order`` policy's ranks (slaq.live.setup_order) on jobs whose reports are made by hand through the registry's
one path (:func:`slaq.live.registry.append`), and their way into the allocation the JVM receives."""

from __future__ import annotations

from collections.abc import Callable

from slaq import messages
from slaq.enforce.pools import allocation_message
from slaq.live.allocation import Allocator
from slaq.live.config import ORDER
from slaq.live.job import LiveJob
from slaq.live.registry import append
from slaq.live.setup_order import NO_ESTIMATE, NO_LOSS, PAST
from slaq.live.status import RANKED
from slaq.messages import Iteration


def reported(job: LiveJob, losses: list[float], core_seconds: list[float]) -> LiveJob:
    """``job`` having reported ``losses``, its pool at ``core_seconds`` (cumulative) at each report."""
    t0 = len(job.history.losses)
    append(job, [Iteration(job.name, loss, float(t0 + i), cs, 0.0, "mllib") for i, (loss, cs) in enumerate(zip(losses, core_seconds))])
    job.consumed = core_seconds[-1] if core_seconds else job.consumed
    return job


def fit(name: str, family: str, order: float, reports: bool | None = True) -> LiveJob:
    return LiveJob(name, family=family, order=order, reports=reports)


def ranker() -> Callable[[list[LiveJob]], dict[str, float]]:
    """One application's decisions under the order policy: each call decides once and gives the ranks."""
    allocator = Allocator(ORDER, 1.0, status=False)
    return lambda jobs: allocator.decide(jobs, 2.0, [], 0.0).ranks or {}


def test_before_anything_finished_set_ups_go_by_arrival_and_silent_fits_go_last():
    rank = ranker()
    jobs = [fit("b", "B", 1.0), fit("a", "A", 0.0), fit("kmeans", "KMeans", 2.0, reports=False)]
    ranks = rank(jobs)
    assert ranks == {"a": NO_ESTIMATE + 0.0, "b": NO_ESTIMATE + 1.0, "kmeans": NO_LOSS + 2.0}


def test_a_set_up_is_estimated_from_its_familys_and_the_cheaper_family_goes_first():
    rank = ranker()
    cheap, dear = reported(fit("cheap-0", "Cheap", 0.0), [1.0, 0.5], [2.0, 4.0]), reported(fit("dear-0", "Dear", 1.0), [1.0, 0.5], [30.0, 40.0])
    rank([cheap, dear])  # each reported its second loss: its set-up cost 4 and 40 core-seconds
    new_cheap, new_dear, stranger = fit("cheap-1", "Cheap", 2.0), fit("dear-1", "Dear", 3.0), fit("other", "", 4.0)
    new_dear.consumed = 10.0
    ranks = rank([cheap, dear, new_dear, new_cheap, stranger])
    assert ranks["cheap-1"] == 4.0 and ranks["dear-1"] == 30.0  # its family's set-up less what it used
    assert ranks["other"] == 22.0  # no family: the median of every set-up seen
    assert ranks["cheap-1"] < ranks["other"] < ranks["dear-1"] < NO_ESTIMATE


def test_a_finished_siblings_work_from_set_up_to_its_90_percent_point_is_added():
    rank = ranker()
    done = reported(fit("a-0", "A", 0.0), [1.0, 0.6, 0.3, 0.1, 0.05, 0.0], [1.0, 4.0, 6.0, 8.0, 10.0, 12.0])
    rank([done])
    ranks = rank([fit("a-1", "A", 1.0)])  # a-0 ended: 90% of its reduction at its 4th loss, 4 core-seconds after its set-up
    assert ranks == {"a-1": 4.0 + 4.0}


def test_a_job_with_a_curve_is_three_iterations_from_its_90_percent_point_until_it_stops_falling():
    rank = ranker()
    falling = reported(fit("falling", "A", 0.0), [1.0, 0.5, 0.3, 0.2], [5.0, 6.0, 7.0, 8.0])
    flat = reported(fit("flat", "A", 1.0), [1.0, 0.1, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01], [5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0, 19.0])
    ranks = rank([falling, flat])
    assert ranks["falling"] == 3 * 1.0
    assert ranks["flat"] == PAST + 2.0  # past its 90% point: after every job short of it
    flat.satisfied = True
    assert rank([falling, flat])["flat"] >= PAST


def test_once_no_job_is_short_of_its_90_percent_point_slaqs_allocation_shares_the_cores():
    def past() -> list[LiveJob]:  # a job past its 90% point, one that reached its target, a fit that reports no loss
        flat = reported(fit("flat", "A", 0.0), [1.0, 0.1, 0.01, 0.01, 0.01, 0.01], [5.0, 7.0, 9.0, 11.0, 13.0, 15.0])
        done = reported(fit("done", "A", 1.0), [1.0, 0.5, 0.2], [2.0, 3.0, 4.0])
        done.satisfied = True
        return [flat, done, fit("kmeans", "KMeans", 2.0, reports=False)]

    decision = Allocator(ORDER, 1.0).decide(past(), 4.0, [], 0.0)
    assert decision.ranks is None and RANKED not in {f.why for f in decision.figures}
    assert decision.alloc == Allocator("slaq", 1.0).decide(past(), 4.0, [], 0.0).alloc
    with_a_new_fit = [*past(), fit("new", "B", 3.0)]  # short of its 90% point: ranked again, its set-up the median of any seen
    assert Allocator(ORDER, 1.0).decide(with_a_new_fit, 4.0, [], 0.0).ranks == {
        "flat": PAST + 2.0, "done": PAST + 1.0, "kmeans": NO_LOSS + 2.0, "new": (7.0 + 3.0) / 2}


def test_the_allocator_deposits_slaqs_shares_and_hands_the_ranks_to_the_jvm():
    jobs = [fit("a", "A", 0.0), fit("b", "B", 1.0)]
    decision = Allocator("order", 1.0, status=False).decide(jobs, 4.0, ["closed"], 0.0)
    assert decision.alloc == Allocator("slaq", 1.0, status=False).decide(jobs, 4.0, ["closed"], 0.0).alloc
    assert decision.ranks == {"a": NO_ESTIMATE, "b": NO_ESTIMATE + 1.0}
    assert Allocator("slaq", 1.0, status=False).decide(jobs, 4.0, [], 0.0).ranks is None
    assert {f.why for f in Allocator("order", 1.0).decide(jobs, 4.0, [], 0.0).figures} == {RANKED}  # what the tab says decided
    sent = messages.decode(allocation_message(decision.alloc, 1.0, True, {**decision.ranks, "nan": float("nan")}))
    assert isinstance(sent, messages.Allocation) and sent.ranks == decision.ranks  # no rank that JSON cannot carry
