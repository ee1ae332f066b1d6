"""An application's own run as a trace (spark.slaq.recordTrace): the pure split of its Spark jobs by pool into
each job's phases, the cuts to a trace's bounds, the measured run, and the file written once, never over another."""

from __future__ import annotations

import gzip
import json

import pytest

from slaq.live.config import ConfigError, SlaqConfig
from slaq.live.status_store import Lost
from slaq.live.trace_out import has_room, lost_note, target_names, write_new
from slaq.messages import POOL_PREFIX
from slaq.sim import trace as bounds
from slaq.sim.app_trace import RanJob, app_trace, measured_run
from slaq.sim.check import check_trace
from slaq.sim.record import SparkJob
from slaq.sim.trace import Stage, from_dict, to_dict

A = RanJob("a", 0.0, (1.0, 2.0, 3.0), (1.0, 0.5, 0.1))
B = RanJob("b", 0.5, (1.5, 2.5), (2.0, 1.0))


def spark_job(at: float, seconds: float = 0.4) -> SparkJob:
    return SparkJob(at, at + 0.5, (Stage(2, seconds),), at + 0.05, at + 0.45)


def test_spark_jobs_go_to_the_job_whose_pool_ran_them_and_the_rest_outside():
    spark = [(POOL_PREFIX + "a", spark_job(0.2)), (POOL_PREFIX + "a", spark_job(1.2)), (POOL_PREFIX + "b", spark_job(0.6)),
             ("default", spark_job(0.3)), ("default", spark_job(-1.0))]  # before the first arrival: the app's set-up, left out
    trace, notes = app_trace([B, A], spark, [], 2, 1.0, "slaq", {"work_conserving": True})
    assert [j.name for j in trace.jobs] == ["a", "b"] and notes == []
    a, b = trace.jobs
    assert [len(p.stages) for p in a.phases] == [1, 1, 0] and [len(p.stages) for p in b.phases] == [1, 0]
    assert a.phases[0].driver_s == pytest.approx(1.0 - 0.5)  # its wall time outside its Spark job
    assert [o.arrival for o in trace.outside] == [0.3]
    run = trace.measured["slaq"][0]
    assert run["time_to_90pct_s"] == {"a": 3.0, "b": 2.0} and run["mean_time_to_90pct_s"] == 2.5 and run["makespan_s"] == 3.0
    again = from_dict(json.loads(json.dumps(to_dict(trace))), "own.json")  # within every bound a reader checks
    (checked,) = check_trace(again)
    assert checked.config == "slaq" and checked.measured_s == 2.5


def test_a_name_used_again_is_a_second_job_and_a_silent_job_keeps_its_work_and_no_loss():
    later = RanJob("a", 5.0, (6.0, 7.0), (1.0, 0.2))
    silent = RanJob("quiet", 1.0, (), (), reports=False)
    once = RanJob("once", 1.2, (2.0,), (3.0,))
    idle = RanJob("idle", 1.3, (), ())  # ran no Spark job: nothing to replay
    spark = [(POOL_PREFIX + "a", spark_job(0.2)), (POOL_PREFIX + "a", spark_job(5.5)), (POOL_PREFIX + "quiet", spark_job(1.5)),
             (POOL_PREFIX + "quiet", spark_job(2.5)), (POOL_PREFIX + "once", spark_job(1.4))]
    trace, notes = app_trace([A, later, silent, once, idle], spark, [], 2, 1.0, "fair", {})
    assert [j.name for j in trace.jobs] == ["a", "quiet", "once", "a (2)"] and trace.outside == ()
    assert trace.jobs[3].phases[0].stages == (Stage(2, 0.4),)  # submitted after the second "a" arrived
    quiet = trace.jobs[1]
    assert quiet.silent and quiet.reports is False and len(quiet.phases) == 1
    assert quiet.phases[0].stages == (Stage(2, 0.4), Stage(2, 0.4))  # from its arrival to its last Spark job's end
    assert quiet.phases[0].driver_s == pytest.approx(3.0 - 1.0 - 1.0)
    assert trace.jobs[2].silent and notes == ["the losses of 1 job with one loss or a loss past ±1e+15 (kept as reporting none)"]
    assert set(trace.measured["fair"][0]["time_to_90pct_s"]) == {"a", "a (2)"}  # a silent job has no time to 90%
    again = from_dict(json.loads(json.dumps(to_dict(trace))), "own.json")
    assert again.jobs[1].silent and again.jobs[1].phases[0].stages == quiet.phases[0].stages
    assert check_trace(again)[0].measured_s == trace.measured["fair"][0]["mean_time_to_90pct_s"]


def test_what_a_trace_may_not_hold_is_cut_and_said(monkeypatch):
    monkeypatch.setattr(bounds, "MAX_JOBS", 1)
    monkeypatch.setattr(bounds, "MAX_PHASES", 2)
    monkeypatch.setattr(bounds, "MAX_STAGES", 1)
    monkeypatch.setattr(bounds, "MAX_TASKS", 1)
    two_stages = SparkJob(0.2, 0.7, (Stage(2, 0.4), Stage(3, 0.3)), 0.25, 0.65)
    trace, notes = app_trace([A, B], [(POOL_PREFIX + "a", two_stages)], [], 2, 1.0, "slaq", {})
    assert [j.name for j in trace.jobs] == ["a"] and len(trace.jobs[0].losses) == 2
    assert trace.jobs[0].phases[0].stages == (Stage(1, 0.4),)
    said = " | ".join(notes)
    assert "its losses after the first 2" in said and "1 job (Spark jobs outside every job counted) past a replay's bounds" in said
    assert "1 stage past a phase's first 1" in said and "clipped to 1 tasks" in said
    assert set(trace.measured["slaq"][0]["time_to_90pct_s"]) == {"a"}  # the measured run is the jobs the trace kept


def test_a_phases_gaps_clipped_with_its_driver_time_still_fit_in_it(monkeypatch):
    monkeypatch.setattr(bounds, "MAX_SECONDS", 0.3)  # a's first phase: 0.2 s before each of its two Spark jobs, 0.4 s of driver time
    trace, _ = app_trace([A], [(POOL_PREFIX + "a", spark_job(0.2)), (POOL_PREFIX + "a", spark_job(0.9))], [], 2, 1.0, "slaq", {})
    (phase, *_) = trace.jobs[0].phases
    assert phase.driver_s == pytest.approx(0.3) and phase.gaps == pytest.approx((0.15, 0.15))
    assert from_dict(json.loads(json.dumps(to_dict(trace))), "own.json").jobs[0].phases[0].gaps == pytest.approx((0.15, 0.15))


def test_a_run_past_what_a_replay_holding_tasks_runs_keeps_its_work_and_drops_which_executor_held_it(monkeypatch):
    held = [(POOL_PREFIX + "a", SparkJob(at, at + 0.5, (Stage(2, 0.4, (1, 1)),), at + 0.05, at + 0.45)) for at in (0.2, 1.2, 2.2)]
    trace, notes = app_trace([A], held, [], 2, 1.0, "slaq", {})
    assert trace.executors == 2 and notes == []
    monkeypatch.setattr(bounds, "MAX_HELD_WORK", 17)  # 1 job x (3 phases + 6 tasks) x 2 executors
    trace, notes = app_trace([A], held, [], 2, 1.0, "slaq", {})
    assert trace.executors == 1 and [s.tasks for p in trace.jobs[0].phases for s in p.stages] == [2, 2, 2]
    assert notes == ["which executor's cached data each task read (1 jobs x 9 phases and tasks x 2 executors = 18, more than a "
                     "replay holding tasks for executors runs: 17)"]
    assert from_dict(json.loads(json.dumps(to_dict(trace))), "own.json").executors == 1


def test_a_run_whose_losses_never_fell_has_no_measured_run():
    flat = RanJob("flat", 0.0, (1.0, 2.0), (1.0, 1.0))
    assert measured_run([flat]) is None
    trace, notes = app_trace([flat], [], [], 2, 1.0, "slaq", {})
    assert trace.measured == {} and "no measured run" in notes[-1]


def test_a_directory_gets_the_app_id_and_a_file_is_never_overwritten(tmp_path):
    names = target_names(str(tmp_path), "app-1/x")
    assert names[0] == tmp_path / "app-1_x.json.gz" and names[1] == tmp_path / "app-1_x-2.json.gz"
    assert target_names(str(tmp_path / "new") + "/", "a")[0] == tmp_path / "new" / "a.json.gz"
    assert write_new(b"one", names) == names[0] and write_new(b"two", names) == names[1]
    assert names[0].read_bytes() == b"one"
    file = tmp_path / "t.json"
    assert target_names(str(file), "a") == (file,)
    assert write_new(b"x", (file,)) == file and write_new(b"y", (file,)) is None and file.read_bytes() == b"x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app-1_x-2.json.gz", "app-1_x.json.gz", "t.json"]  # no temporary left


def test_the_conf_is_a_bounded_path_and_a_known_key():
    assert SlaqConfig.from_conf({"spark.slaq.recordTrace": " /t/x.json.gz "}.get).record_trace == "/t/x.json.gz"
    assert SlaqConfig.from_conf({}.get).record_trace is None
    for bad in ("", "  ", "a\nb", "x" * 4097):
        with pytest.raises(ConfigError, match="spark.slaq.recordTrace"):
            SlaqConfig.from_conf({"spark.slaq.recordTrace": bad}.get)
    from slaq.runtime import runtimes

    assert "spark.slaq.recordTrace" in runtimes.known_keys


def test_the_recorder_keeps_at_most_a_traces_jobs_and_losses(monkeypatch):
    monkeypatch.setattr(bounds, "MAX_JOBS", 2)
    monkeypatch.setattr(bounds, "MAX_EVENTS", len(A.losses) + len(B.losses))
    assert has_room(0, 0, A) and has_room(1, len(A.losses), B)
    assert not has_room(2, 0, A)  # jobs
    assert not has_room(1, len(A.losses) + len(B.losses), A)  # losses
    assert "2 Spark jobs and tasks of 1 stages that Spark's status store no longer held" in lost_note(Lost(2, 0, 1))
    assert "spark.ui.retainedTasks" in lost_note(Lost(1))


def test_a_gz_target_is_gzip(tmp_path):
    path = write_new(gzip.compress(b"{}"), (tmp_path / "t.json.gz",))
    assert path is not None and gzip.decompress(path.read_bytes()) == b"{}"
