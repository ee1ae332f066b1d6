"""The task-level replay of recorded live workloads (slaq.sim.trace, slaq.sim.replay, slaq.sim.check): the trace
format, Spark's FAIR order and SLAQ's token order on hand-made jobs whose timeline is known, the lower bound,
the projections' scaling, the recorder's split of a run into phases, and ``slaq simulate --check/--project``."""

from __future__ import annotations

import gzip
import itertools
import json

import pytest

from slaq.cli import main
from slaq.live.config import SlaqConfig
from slaq.sim import check, replay, trace
from slaq.sim.trace import Phase, Stage, Trace, TraceError, TraceJob

LOSSES = (1.0, 0.5, 0.2, 0.05, 0.0)  # 90% of the reduction at loss 3


def job(name: str, arrival: float = 0.0, tasks: int = 2, seconds: float = 1.0, driver: float = 0.0, phases: int = 5,
        latency: float = 0.0) -> TraceJob:
    """A job whose every phase is ``driver`` + ``latency`` seconds off the cores, then one stage of ``tasks`` tasks."""
    return TraceJob(name, "test", arrival, LOSSES[:phases], tuple(Phase(driver, (Stage(tasks, seconds),), latency) for _ in range(phases)))


def make_trace(jobs: list[TraceJob], measured: dict | None = None) -> Trace:
    return Trace(tuple(jobs), 2, 1.0, {"source": "test", "arrival_mean_s": 1.0}, measured or {})


def test_a_trace_survives_its_json_and_gzip(tmp_path):
    t = make_trace([job("a", driver=0.1, latency=0.05), job("b", 1.5)], {"stock": [{"mean_time_to_90pct_s": 3.0, "makespan_s": 9.0}]})
    for name in ("t.json", "t.json.gz"):
        back = trace.load(trace.save(t, tmp_path / name))
        assert back.jobs == t.jobs and back.cores == 2 and back.epoch == 1.0 and back.measured == t.measured
    assert gzip.decompress((tmp_path / "t.json.gz").read_bytes()).startswith(b"{")
    evaluation = trace.outside_job(0, 0.5, (Stage(2, 1.0),))
    back = trace.load(trace.save(Trace(t.jobs, 2, 1.0, outside=(evaluation,)), tmp_path / "o.json"))
    assert back.outside == (evaluation,) and [j.name for j in back.replayed] == ["a", "outside-0", "b"]


@pytest.mark.parametrize("policy, first", [(replay.STOCK, "fit"), ("slaq", "outside-0")])
def test_a_spark_job_outside_every_job_runs_in_the_default_pool_beside_the_jobs_and_is_no_job_of_the_result(policy, first):
    # one core, a fit and an evaluation (one 1 s task each) submitted at 0: a tie at the root, which goes to the pool
    # whose name sorts first: the fit's "arrival-0000" under stock, "default" before SLAQ's "slaq" pool under a policy
    fit = job("fit", tasks=1, seconds=1.0, phases=2)
    result = replay.replay([fit, trace.outside_job(0, 0.0, (Stage(1, 1.0),))], policy, 1)
    assert [j["job"] for j in result.jobs] == ["fit"] and result.makespan == pytest.approx(3.0)
    assert result.jobs[0]["time_to_90pct_s"] == pytest.approx(2.0 if first == "fit" else 3.0)  # two 1 s stages, the evaluation's before or after


@pytest.mark.parametrize("content, reason", [(None, "no such trace file"), (b"garbage", "not a readable trace"),
                                             (b'{"format": "other"}', "not a slaq-trace/1"),
                                             (b'{"format": "slaq-trace/1", "jobs": []}', "setting must be a JSON object, got NoneType"),
                                             (b'{"format": "slaq-trace/1", "setting": {"executor_cores": 2, "epoch_s": 1}, "jobs": [{"name": "a", '
                                              b'"arrival_s": 0, "losses": [1, 0], "phases": [{"driver_s": 0}, {"driver_s": 0}]}], '
                                              b'"outside_spark_jobs": [{"submitted_s": 0, "stages": [[0, 1.0]]}]}',
                                              r"outside_spark_jobs\[0\].stages\[0\] tasks must be in \[1, 100000\], got 0")])
def test_a_bad_trace_file_is_one_line_naming_it(tmp_path, content, reason):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(TraceError, match=reason) as err:
        trace.load(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_a_job_alone_runs_its_phases_back_to_back_in_waves_of_tasks():
    # 3 tasks of 0.5 s on 2 cores: two waves, 1 s; plus 0.2 s of driver and latency per phase
    result = replay.replay([job("a", tasks=3, seconds=1.5, driver=0.15, latency=0.05)], replay.STOCK, 2)
    (a,) = result.jobs
    assert a["time_to_90pct_s"] == pytest.approx(4 * 1.2)  # loss 3 ends phase 3, the fourth phase
    assert result.makespan == pytest.approx(5 * 1.2)


def test_stock_fair_gives_a_free_core_to_the_pool_with_fewest_running_tasks_ties_to_the_earlier_job():
    # both arrive at 0 with 0.1 s of driver and two 1 s tasks per stage: the earlier job's pool sorts first and takes
    # both cores; while its driver prepares the next stage the second takes them, and so on: no task is preempted
    jobs = [job("first", 0.0, seconds=2.0, phases=2, driver=0.1), job("second", 0.0, seconds=2.0, phases=2, driver=0.1)]
    result = {j["job"]: j for j in replay.replay(jobs, replay.STOCK, 2).jobs}
    assert result["first"]["finished_s"] == pytest.approx(3.1)  # 0.1 + 1, waits 1.2..2.1 for the second's wave, then 1
    assert result["second"]["finished_s"] == pytest.approx(4.1)


def test_fair_policy_interleaves_jobs_through_the_token_buckets_where_stock_runs_them_in_turn():
    # one stage of 8 tasks of 0.5 s each: stock gives every freed core to the earlier job (fewest running tasks, ties
    # by arrival); under fair the later job's tokens rank it first once the earlier one has spent its deposit
    jobs = [job("a", 0.0, tasks=8, seconds=4.0, phases=2, driver=0.05), job("b", 0.1, tasks=8, seconds=4.0, phases=2, driver=0.05)]
    stock = {j["job"]: j["finished_s"] + j["arrival_s"] for j in replay.replay(jobs, replay.STOCK, 2).jobs}
    fair = {j["job"]: j["finished_s"] + j["arrival_s"] for j in replay.replay(jobs, "fair", 2).jobs}
    assert stock["a"] < stock["b"] - 3.0  # in turn
    assert abs(fair["a"] - fair["b"]) < 1.5 and fair["a"] > stock["a"] and fair["b"] <= stock["b"] + 1e-9


@pytest.mark.parametrize("policy", ["slaq", "fair", "order", replay.STOCK])
def test_every_policy_finishes_every_job_and_never_beats_the_clairvoyant_bound(policy):
    jobs = [job(f"j{i}", arrival=0.7 * i, tasks=4, seconds=0.4 * (1 + i % 3), driver=0.1 * (i % 2)) for i in range(8)]
    result = replay.replay(jobs, policy, 2)
    assert len(result.jobs) == 8
    assert all(0 < j["time_to_90pct_s"] <= j["time_to_95pct_s"] <= j["finished_s"] + 1e-9 for j in result.jobs)
    assert result.mean() >= check.clairvoyant_bound(jobs, 2)["mean_time_to_90pct_s"] - 1e-9


def test_the_clairvoyant_order_reaches_90_percent_no_later_on_average_than_any_policy_and_the_defaults_share_is_as_defined():
    # staggered jobs of unequal work: the order that knows each job's work to its 90% point runs the shortest first
    jobs = [job(f"j{i}", arrival=0.3 * i, tasks=4, seconds=0.4 * (1 + i % 3), driver=0.05 * (i % 2)) for i in range(8)]
    means = {policy: replay.replay(jobs, policy, 2).mean() for policy in ("order", "slaq", "fair", replay.STOCK)}
    clairvoyant = replay.replay(jobs, replay.CLAIRVOYANT, 2).mean()
    assert all(clairvoyant <= mean + 1e-9 for mean in means.values()) and clairvoyant < means["fair"]
    limit = check.against_clairvoyant(means, clairvoyant)
    assert limit["default_policy"] == SlaqConfig().policy == "order"
    assert limit["default_share_of_gain_over_fair"] == pytest.approx((means["fair"] - means["order"]) / (means["fair"] - clairvoyant), abs=1e-3)
    assert limit["policies"]["slaq"]["share_of_gain_over_fair"] == pytest.approx((means["fair"] - means["slaq"]) / (means["fair"] - clairvoyant), abs=1e-3)
    assert limit["policies"]["fair"]["ratio_to_clairvoyant"] == pytest.approx(means["fair"] / clairvoyant, abs=1e-3)
    assert check.against_clairvoyant({"order": 5.0, "fair": 9.0}, 4.0)["default_share_of_gain_over_fair"] == 0.8
    assert check.against_clairvoyant({"order": 5.0, "fair": 4.0}, 4.0)["default_share_of_gain_over_fair"] is None  # no gain to share


@pytest.mark.parametrize("path", check.packaged_traces(), ids=lambda p: p.name)
def test_the_order_policy_captures_most_of_the_gain_over_fair_that_the_clairvoyant_order_achieves(path):
    t = trace.load(path)
    means = {p: replay.replay(t.replayed, p, t.cores, t.epoch).mean() for p in ("fair", "order", replay.CLAIRVOYANT)}
    limit = check.against_clairvoyant({p: means[p] for p in ("fair", "order")}, means[replay.CLAIRVOYANT])
    assert limit["policies"]["order"]["share_of_gain_over_fair"] >= 0.6, limit


def test_the_cores_never_run_more_than_the_recorded_work():
    jobs = [job(f"j{i}", arrival=0.5 * i, tasks=3, seconds=0.9) for i in range(5)]
    result = replay.replay(jobs, "slaq", 2)
    work = sum(p.executor_s for j in jobs for p in j.phases)
    assert result.makespan >= work / 2 - 1e-9


def test_srpt_on_one_fast_machine_is_exact_on_a_small_case():
    # sizes 4 and 1 on speed 2: the short one arrives at 1 and preempts: done at 1.5; the long one at 2.5
    assert check.srpt_flow([0.0, 1.0], [4.0, 1.0], 2.0) == pytest.approx([2.5, 0.5])


def test_the_bound_is_the_larger_of_srpt_and_each_job_alone():
    jobs = [job("a", tasks=2, seconds=2.0, driver=0.5)]
    b = check.clairvoyant_bound(jobs, 2)
    assert b["alone_s"] == pytest.approx(4 * 1.5) and b["srpt_fluid_s"] == pytest.approx(4 * 1.0)
    assert b["mean_time_to_90pct_s"] == b["alone_s"]


def test_projections_scale_jobs_and_arrival_rate_with_the_cores():
    t = make_trace([job(f"j{i}", arrival=float(i)) for i in range(4)])
    jobs = check.scaled(t, 16)
    assert len(jobs) == 32 and len({j.name for j in jobs}) == 32
    assert jobs[-1].arrival < 32 * 1.0 / 8 * 2  # mean gap 1 s / 8
    rows = check.project(t, (4,))
    assert rows[0]["jobs"] == 8 and set(rows[0]["policies"]) == {"slaq", "fair", "order", "stock", "clairvoyant"}
    assert all(p["ratio_to_bound"] >= 1.0 for p in rows[0]["policies"].values())


def test_the_check_compares_each_configuration_with_the_median_of_its_runs():
    jobs = [job("a", tasks=2, seconds=1.0), job("b", arrival=0.5, tasks=2, seconds=1.0)]
    predicted = replay.replay(jobs, replay.STOCK, 2).mean()
    t = make_trace(jobs, {"stock": [{"mean_time_to_90pct_s": predicted * f, "makespan_s": 6.0} for f in (0.5, 1.0, 3.0)]})
    (c,) = check.check_trace(t)
    assert c.config == "stock" and c.measured_s == pytest.approx(predicted) and c.ok and c.error == pytest.approx(0.0)


def test_the_recorder_splits_a_run_into_phases_by_submission():
    from slaq.sim.record import RunJob, SparkJob, busy_cores, combine, phases_of, slot_split

    sj = [SparkJob(0.1, 0.5, (Stage(4, 0.8),), 0.15, 0.45), SparkJob(0.7, 1.0, (Stage(4, 0.6),), 0.75, 0.95)]
    phases = phases_of(0.0, [0.6, 1.1], sj, busy_cores([]), 2)
    assert [p.phase.stages for p in phases] == [(Stage(4, 0.8),), (Stage(4, 0.6),)]
    assert phases[0].phase.driver_s == pytest.approx(0.6 - 0.4) and phases[0].latency == pytest.approx(0.05 + 0.05)
    assert phases[0].phase.gaps == pytest.approx((0.1,)) and phases[1].phase.gaps == pytest.approx((0.1,))  # 0.1 s each after the job
    busy = phases_of(0.0, [0.6, 1.1], sj, busy_cores([(0.0, 2.0), (0.0, 2.0)]), 2)
    assert busy[0].latency is None  # submitted with every core busy: its wait is not latency
    run = RunJob("a", "f", 0.0, (1.0, 0.5), tuple(phases))
    t = combine([[run], [run]], 2, 1.0, {}, {})
    assert t.jobs[0].phases[0].latency_s == pytest.approx(0.1) and t.jobs[0].phases[1].stages == (Stage(4, 0.6),)
    refit = RunJob("cv-p1-2", "f", 5.0, (1.0, 0.5), tuple(phases))  # a later run's refit of another best entry
    assert [j.name for j in combine([[run], [run, refit]], 2, 1.0, {}, {}).jobs] == ["a"]  # the first run's jobs only
    tasks = [(-3.0, -1.0), *[(0.15, 0.35)] * 4, *[(0.75, 0.9)] * 4, (1.0, 1.5)]  # an earlier variant's task; an evaluation's
    assert slot_split({"a": sj}, tasks) == {"in_recorded_jobs": 1.4, "outside": 0.5}


def test_the_recorder_places_a_phases_driver_time_between_its_spark_jobs_and_the_replay_keeps_it_there():
    from slaq.sim.record import RunJob, RunPhase, SparkJob, busy_cores, combine, phases_of

    # one phase of three Spark jobs (a GBT fit's trees): 0.5 s of driver first, 1 s between the first two (the second has
    # two stages), the third submitted while the second runs, then 0.25 s until the loss
    sj = [SparkJob(0.5, 1.0, (Stage(1, 0.5),), 0.5, 1.0), SparkJob(2.0, 3.0, (Stage(1, 0.5), Stage(1, 0.5)), 2.0, 3.0),
          SparkJob(2.5, 3.25, (Stage(1, 0.5),), 2.75, 3.25)]
    run = phases_of(0.0, [3.5], sj, busy_cores([]), 1)
    phase = run[0].phase
    assert phase.driver_s == pytest.approx(1.75) and phase.gaps == pytest.approx((0.5, 1.0, 0.0, 0.0))
    assert [phase.wait_before(k) for k in range(5)] == pytest.approx([0.5, 1.0, 0.0, 0.0, 0.25])
    t = combine([[RunJob("gbt", "f", 0.0, (), tuple(run))]] * 2, 1, 1.0, {}, {})
    assert t.jobs[0].phases[0].gaps == pytest.approx((0.5, 1.0, 0.0, 0.0))
    two = (Stage(1, 0.5), Stage(1, 0.5))  # the medians of the parts (1, 1) do not fit in the median driver time (1): scaled to it
    runs = [[RunJob("j", "f", 0.0, (), (RunPhase(Phase(d, two, gaps=g), None),))] for d, g in ((1.0, (1.0, 0.0)), (1.0, (0.0, 1.0)), (2.0, (1.0, 1.0)))]
    assert combine(runs, 1, 1.0, {}, {}).jobs[0].phases[0].gaps == pytest.approx((0.5, 0.5))
    # replayed on one core beside a job with one 1.5 s task arriving at 0.6 s: with the gaps it waits for the first
    # tree (to 1.0) and runs in the driver's second (to 2.5), the other trees after it; with all of the driver time
    # first it runs at once (to 2.1), every tree after it
    other = TraceJob("other", "f", 0.6, (), (Phase(0.0, (Stage(1, 1.5),)),), reports=False)
    for gaps, other_ends, gbt_ends in (((0.5, 1.0, 0.0, 0.0), 2.5, 2.5 + 1.5 + 0.25), (None, 2.1, 2.1 + 2.0)):
        gbt = TraceJob("gbt", "f", 0.0, (), (Phase(1.75, (Stage(1, 0.5),) * 4, gaps=gaps),), reports=False)
        result = {j["job"]: j for j in replay.replay([gbt, other], replay.STOCK, 1).jobs}
        assert result["other"]["finished_s"] + 0.6 == pytest.approx(other_ends)
        assert result["gbt"]["finished_s"] == pytest.approx(gbt_ends)


def test_a_traces_gaps_fit_its_stages_and_its_driver_time(tmp_path):
    base = {"format": "slaq-trace/1", "setting": {"executor_cores": 2, "epoch_s": 1}}
    for gaps, reason in (([0.1], "gaps_s must hold 2 to 2 entries"), ([0.3, 0.3], "gaps_s add up to 0.600 s, more than the phase's driver_s 0.500")):
        phase = {"driver_s": 0.5, "stages": [[1, 1.0], [1, 1.0]], "gaps_s": gaps}
        (tmp_path / "t.json").write_text(json.dumps({**base, "jobs": [{"name": "a", "arrival_s": 0, "losses": [], "phases": [phase]}]}))
        with pytest.raises(TraceError, match=reason):
            trace.load(tmp_path / "t.json")
    t = make_trace([TraceJob("a", "f", 0.0, (), (Phase(0.5, (Stage(1, 1.0), Stage(1, 1.0)), gaps=(0.2, 0.1)),), reports=False)])
    assert trace.load(trace.save(t, tmp_path / "g.json")).jobs == t.jobs


def test_a_task_held_for_its_executors_cached_data_leaves_the_other_core_to_the_next_job_until_the_wait_runs_out():
    # two single-core executors; "cached" holds its 2 tasks (1 s each) for executor 0, "any" arrives with it and
    # has one task: Spark gives "any" executor 1 at once, where a replay without executors runs it after both
    cached = TraceJob("cached", "f", 0.0, (), (Phase(0.0, (Stage(2, 2.0, (2, 0)),)),), reports=False)
    other = TraceJob("other", "f", 0.0, (), (Phase(0.0, (Stage(1, 1.0),)),), reports=False)
    for executors, ends in ((2, {"cached": 2.0, "other": 1.0}), (1, {"cached": 1.0, "other": 2.0})):
        result = replay.replay([cached, other], replay.STOCK, 2, executors=executors)
        assert {j["job"]: j["finished_s"] for j in result.jobs} == pytest.approx(ends)
    # alone, 4 tasks of 5 s held for executor 0: executor 1 idles for the locality wait (3 s), then takes one; the
    # wait starts again at each round the stage takes without refusing (at 3 and at 5: the last task goes at 8)
    alone = TraceJob("alone", "f", 0.0, (), (Phase(0.0, (Stage(4, 20.0, (4, 0)),)),), reports=False)
    for executors, wait, end in ((2, 3.0, 13.0), (2, 0.0, 10.0), (1, 3.0, 10.0)):
        (j,) = replay.replay([alone], replay.STOCK, 2, executors=executors, locality_wait=wait).jobs
        assert j["finished_s"] == pytest.approx(end), (executors, wait)
    with pytest.raises(ValueError, match="executors a divisor"):
        replay.replay([alone], replay.STOCK, 3, executors=2)


def test_held_tasks_that_waited_out_the_timer_take_their_own_executor_first_and_stay_free_until_one_runs_there():
    def held(name: str, arrival: float, tasks: int, seconds: float, local: tuple[int, ...] = ()) -> TraceJob:
        return TraceJob(name, "f", arrival, (), (Phase(0.0, (Stage(tasks, tasks * seconds, local),)),), reports=False)

    def ends(jobs: list[TraceJob], cores: int) -> dict[str, float]:
        return {j["job"]: j["arrival_s"] + j["finished_s"] for j in replay.replay(jobs, replay.STOCK, cores, executors=2).jobs}
    # "x" holds executor 0 for 10 s; "a"'s four 1 s tasks, held for it, wait 3 s, then run one after another on
    # executor 1: each round runs none on its own executor, so the timer stays run out (Spark's level: node-local)
    assert ends([held("x", 0.0, 1, 10.0, (1, 0)), held("a", 0.0, 4, 1.0, (4, 0))], 2) == pytest.approx({"x": 10.0, "a": 7.0})
    # two executors of 2 cores, both busy until 5 s; "a" (held for executor 1, its timer run out) comes first in
    # the order and takes its own executor before any other: "b", arriving at 5 and held for executor 0, runs at once
    jobs = [held("c", 0.0, 4, 5.0), held("a", 0.0, 2, 1.0, (0, 2)), held("b", 5.0, 2, 1.0, (2, 0))]
    assert ends(jobs, 4) == pytest.approx({"c": 5.0, "a": 6.0, "b": 6.0})


def test_a_traces_locality_names_the_same_executors_within_its_stages_and_cores(tmp_path, monkeypatch):
    base = {"format": "slaq-trace/1", "setting": {"executor_cores": 2, "epoch_s": 1}}
    for stages, setting, reason in (
            ([[2, 1.0, [2, 1]]], {}, r"local: 3 tasks held for executors, more than the stage's 2"),
            ([[2, 1.0, [1, 1]], [2, 1.0, [1, 0, 0]]], {}, r"must all name the same executors, a divisor of the 2 executor cores, got \[2, 3\]"),
            ([[2, 1.0, [0, 0, 1]]], {}, r"got \[3\]"),
            ([[2, 1.0, [-1, 1]]], {}, r"local\[0\] must be in \[0, 2\]"),
            ([[2, 1.0, [1, 1]]], {"locality_wait_s": -1}, r"setting.locality_wait_s must be in \[0, 86400\]"),
            ([[2, 1.0, [1, 1]]], {"locality_wait_s": None}, r"setting.locality_wait_s")):
        raw = {"name": "a", "arrival_s": 0, "losses": [], "phases": [{"driver_s": 0, "stages": stages}]}
        doc = {**base, "setting": {**base["setting"], **setting}, "jobs": [raw]}
        (tmp_path / "t.json").write_text(json.dumps(doc))
        with pytest.raises(TraceError, match=reason):
            trace.load(tmp_path / "t.json")
    t = make_trace([TraceJob("a", "f", 0.0, (), (Phase(0.5, (Stage(2, 1.0, (1, 1)), Stage(1, 1.0))),), reports=False)])
    back = trace.load(trace.save(t, tmp_path / "l.json"))
    assert back.jobs == t.jobs and back.executors == 2 and back.locality_wait == 3.0 and t.executors == 2
    assert make_trace([job("b")]).executors == 1
    # held tasks may refuse a free core, so every offer round visits every waiting job: jobs x events is bounded
    monkeypatch.setattr(trace, "MAX_HELD_WORK", 8)  # 1 job x (1 phase + 3 tasks) x 2 executors
    assert trace.load(tmp_path / "l.json").executors == 2
    monkeypatch.setattr(trace, "MAX_HELD_WORK", 7)
    with pytest.raises(TraceError, match=r"held for 2 executors, and 1 jobs x 4 phases and tasks x 2 = 8, more than a replay holding them runs \(7\)"):
        trace.load(tmp_path / "l.json")


def test_the_recorder_takes_each_executors_median_of_the_tasks_run_on_its_cached_data():
    from slaq.sim.record import RunJob, RunPhase, combine

    def run(*local: tuple[int, ...]) -> list[RunJob]:
        return [RunJob("j", "f", 0.0, (), (RunPhase(Phase(0.0, tuple(Stage(4, 1.0, loc) for loc in local)), None),))]
    # per executor (by id) over three runs, a run without counts as 0: runs that cached a stage's data on different
    # executors cancel out; medians that add up past the stage's tasks are cut to them
    t = combine([run((4, 0), (3, 1)), run((0, 4), (3, 1)), run((), (1, 3))], 2, 1.0, {}, {})
    assert [s.local for s in t.jobs[0].phases[0].stages] == [(), (3, 1)]
    assert combine([run((3, 1)), run((1, 3)), run((4, 4))], 2, 1.0, {}, {}).jobs[0].phases[0].stages[0].local == (3, 1)
    assert trace.local_within((3, 3), 4) == (3, 1)


def test_simulate_check_and_project_print_json_and_exit_1_on_a_miss(tmp_path, capsys):
    jobs = [job("a"), job("b", arrival=1.0)]
    path = trace.save(make_trace(jobs, {"stock": [{"mean_time_to_90pct_s": 100.0, "makespan_s": 9.0}]}), tmp_path / "t.json.gz")
    assert main(["simulate", "--check", str(path), "--project", str(path), "--project-cores", "4,8"]) == 1
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["check"]["configs"][0]["within_tolerance"] is False
    assert [row["cores"] for row in out["projection"]["traces"][0]["rows"]] == [4, 8]
    # one key per trace and core count, each policy against the clairvoyant order
    assert set(out["check"]["vs_clairvoyant"]) == {f"{path}@2"} and set(out["projection"]["vs_clairvoyant"]) == {f"{path}@4", f"{path}@8"}
    assert set(out["projection"]["vs_clairvoyant"][f"{path}@4"]["policies"]) == {"slaq", "fair", "order", "stock"}
    assert out["projection"]["traces"][0]["rows"][0]["slaq_vs_fair"]["time_to_90pct_change"] is not None
    # stderr: the check's verdict first, then each projection's replays counted
    lines = captured.err.splitlines()
    assert lines[0].startswith("check: 1 trace, 1 configuration, 1 off by more than 15% (worst: t.json.gz stock ")
    assert [line.split(":")[0] for line in lines if line.startswith("projection")] == [f"projection {k}/10" for k in range(1, 11)]
    assert "projection 10/10: t.json.gz at 8 cores (8 jobs) under clairvoyant" in lines
    assert main(["simulate", "--check", str(tmp_path / "missing.json")]) == 2
    assert "no such trace file" in capsys.readouterr().err


def test_the_demo_reports_changes_negative_for_less_time_with_median_spread_and_noise():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("sweep_demo", Path(__file__).parents[2] / "lab" / "demos" / "sweep.py")
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    key = "mean_time_to_90pct_s"
    runs = {"slaq": [{key: 7.0}, {key: 9.0}, {key: 12.0}], "fair": [{key: 10.0}, {key: 10.0}, {key: 10.0}]}
    m = demo.margins(runs, "slaq", "fair")[key]
    assert m["median"] == pytest.approx(-0.1) and m["min"] == pytest.approx(-0.3) and m["max"] == pytest.approx(0.2)
    assert m["inside_noise"] is True
    assert demo.margins({"slaq": [{key: 5.0}], "fair": [{key: 10.0}]}, "slaq", "fair")[key]["inside_noise"] is False


def test_a_recorded_live_trace_is_packaged_and_small():
    paths = check.packaged_traces()
    assert paths and all(p.stat().st_size < 200_000 for p in paths)
    t = trace.load(check.LIVE_TRACES / "live_sweep_16jobs.json.gz")
    assert t.cores == 2 and t.epoch == 1.0 and set(t.measured) == {"slaq", "fair", "stock"}
    assert all(len(j.phases) == len(j.losses) and j.phases[0].stages for j in t.jobs)


@pytest.mark.parametrize("path", check.packaged_traces(), ids=lambda p: p.name)
def test_the_replay_predicts_each_recorded_configuration_within_15_percent(path):
    rows = check.check_trace(trace.load(path))
    assert {c.config for c in rows} == {"slaq", "fair", "stock"}
    for c in rows:
        assert c.ok, f"{c.config}: predicted {c.predicted_s:.1f} s vs measured {c.measured_s:.1f} s ({c.error:+.1%})"
    for a, b in itertools.combinations(rows, 2):  # the order the live runs measured, where their runs did not overlap
        if max(a.measured_runs) < min(b.measured_runs) or max(b.measured_runs) < min(a.measured_runs):
            assert (a.predicted_s < b.predicted_s) == (a.measured_s < b.measured_s), (a, b)


def test_the_mllib_sweep_writes_one_trace_per_variant(tmp_path):
    from slaq.sim.record import RunJob, RunPhase
    from srlab.slaq_bench.mllib import record_traces

    fit = RunJob("lr-00", "logreg", 0.0, (1.0, 0.4, 0.1), tuple(RunPhase(Phase(0.2, (Stage(8, 1.6),)), 0.05) for _ in range(3)), True)
    summary = {"trace_jobs": [fit], "executor_cores": 2, "locality_wait_s": 3.0, "mean_time_to_90pct_s": 4.0, "mean_time_to_95pct_s": 5.0, "makespan_s": 6.0,
               "fits": {"lr-00": {"time_to_90pct_s": 4.0}}, "raw_run": {"cores": 2, "tasks": [], "fits": [], "spark_jobs": []}}
    runs = [{"slaq": {"fits": summary, "cv": summary}, "stock": {"fits": summary, "cv": summary}}]
    paths = record_traces(str(tmp_path / "mllib.json.gz"), runs, ["slaq", "stock"], ["fits", "cv"], 1.0, {"rows": 10})
    assert [p.rsplit("/", 1)[1] for p in paths] == ["mllib-fits.json.gz", "mllib-cv.json.gz"]
    assert sorted(p.name for p in tmp_path.glob("*.runs.json.gz")) == ["mllib-cv.runs.json.gz", "mllib-fits.runs.json.gz"]  # each beside its trace
    t = trace.load(paths[1])
    assert t.jobs[0].reports is True and t.jobs[0].phases[1].latency_s == pytest.approx(0.05) and set(t.measured) == {"slaq", "stock"}
    assert t.setting["source"] == "slaq bench mllib (cv)"


def test_a_job_that_reports_no_loss_takes_its_share_of_the_cores_and_no_part_in_the_figures(tmp_path):
    # a fit (two phases of two 0.5 s tasks) beside a silent job (eight 1 s tasks) on 2 cores, both at 0: the
    # clairvoyant order runs the fit first (no 90% point to reach for the silent one); a policy gives the silent
    # job, known to report none, its even share from the start, as the live loop does
    fit = job("fit", tasks=2, seconds=1.0, phases=2)
    quiet = TraceJob("quiet", "kmeans", 0.0, (), (Phase(0.0, (Stage(8, 8.0),)),), reports=False)
    back = trace.load(trace.save(make_trace([fit, quiet]), tmp_path / "t.json"))
    assert back.jobs[1] == quiet and quiet.silent
    times = {}
    for policy in ("slaq", "fair", replay.STOCK, replay.CLAIRVOYANT):
        result = replay.replay(back.jobs, policy, 2)
        rows = {j["job"]: j for j in result.jobs}
        assert rows["quiet"]["time_to_90pct_s"] is None and rows["quiet"]["finished_s"] >= 4.0 - 1e-9
        assert result.mean() == rows["fit"]["time_to_90pct_s"] and result.makespan == pytest.approx(5.0)
        times[policy] = result.mean()
    assert times[replay.CLAIRVOYANT] == pytest.approx(1.0)  # alone: two phases of one 0.5 s wave
    assert times["slaq"] == times["fair"] == pytest.approx(2.0)  # the silent job's even share: one core while the fit runs
    assert times[replay.STOCK] == pytest.approx(1.0)  # stock: a tie at no running tasks goes to the earlier pool, the fit's
    assert check.clairvoyant_bound(back.jobs, 2)["mean_time_to_90pct_s"] == pytest.approx(1.0)


def fit(name: str, family: str, arrival: float, setup_tasks: int, silent: bool = False) -> TraceJob:
    """A spark.ml fit whose set-up (its first phase) is ``setup_tasks`` one-second tasks, then four cheap iterations."""
    phases = (Phase(0.0, (Stage(setup_tasks, float(setup_tasks)),)), *(Phase(0.0, (Stage(2, 0.2),)) for _ in range(4)))
    return TraceJob(name, family, arrival, () if silent else LOSSES, phases[:1] if silent else phases, reports=not silent)


def test_order_serves_the_fit_whose_family_showed_a_cheap_set_up_first():
    # one fit of each family shows its set-up's cost; then an expensive fit arrives just before a cheap one, repeatedly
    jobs = [fit("big-0", "big", 0.0, 16), fit("small-0", "small", 0.1, 2)]
    jobs += [fit(f"{family}-{i}", family, 20.0 + i + (0.1 if family == "small" else 0.0), 16 if family == "big" else 2)
             for i in range(1, 5) for family in ("big", "small")]
    fair, order = (replay.replay(jobs, policy, 2) for policy in ("fair", "order"))

    def late_small(result: replay.ReplayResult) -> list[float]:
        return [j["time_to_90pct_s"] for j in result.jobs if j["family"] == "small" and j["arrival_s"] >= 20]

    assert max(late_small(order)) < min(late_small(fair)) and order.mean() < fair.mean()
    assert len(order.jobs) == len(jobs) and order.makespan <= fair.makespan * 1.05


def test_order_puts_a_fit_that_reports_no_loss_after_every_fit_that_does():
    jobs = [fit("gbt-0", "gbt", 0.0, 8, silent=True), fit("lr-0", "lr", 0.5, 4), fit("lr-1", "lr", 0.6, 4)]
    order = {j["job"]: j for j in replay.replay(jobs, "order", 2).jobs}
    assert order["gbt-0"]["finished_s"] > max(order[n]["finished_s"] - 0.5 for n in ("lr-0", "lr-1"))
