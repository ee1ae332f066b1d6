"""The JVM's store behind the SLAQ UI tab (SlaqStatus), driven through py4j with real messages: finished
jobs, a bounded window, idle epochs, and strict decoding. Runs in the shared session's driver JVM."""

from __future__ import annotations

import pytest

from slaq import messages
from sparkshim.bridge import new_instance


def job(name, iterations=3, cores=1.0, state="running", why="predicted gain per core"):
    return messages.JobStatus(name, state, iterations, 0.5, 0.4, 0.05, cores, cores * 0.9, why, 2.0, 3.0, -1.0, "", -1, -1, False, 0.25)


def epoch(n, *jobs, finished=()):
    return messages.EpochStatus(n, n * 0.5, "slaq", 2.0, list(jobs), list(finished))


@pytest.fixture
def store(gateway):
    status = new_instance(gateway, "slaq.SlaqStatus")

    def publish(e):
        status.publish(messages.encode(e))

    def report():
        return messages.decode(status.reportJson())

    return publish, report


def test_jobs_that_leave_are_listed_as_finished_until_their_name_runs_again(store):
    publish, report = store
    publish(epoch(1, job("a"), job("b", 5)))
    publish(epoch(2, job("a")))
    r = report()
    assert [e.epoch for e in r.history] == [1, 2]
    (b,) = r.finished  # without final figures from the loop: its last epoch's, no cores once it left
    assert (b.job, b.state, b.iterations, b.cores, b.used_cores, b.why, b.core_seconds) == ("b", "finished", 5, 0.0, 0.0, "ended", 3.0)
    publish(epoch(3, job("a"), job("b", 1)))
    assert report().finished == ()


def test_the_loops_final_figures_replace_the_last_epochs_row(store):
    publish, report = store
    publish(epoch(1, job("a"), job("b", 5)))
    final = messages.JobStatus("b", "finished", 9, 0.1, 0.0, 0.0, 0.0, 0.0, "target reached", 4.0, 6.5, 3.5, "CrossValidator_x", 1, -1, True, -1.0)
    publish(epoch(2, job("a"), finished=[final]))
    assert report().finished == (final,)
    publish(epoch(3, finished=[job("c", 2, 0.0, "finished", "ended")]))  # a job that came and went between two epochs
    assert [j.job for j in report().finished] == ["b", "a", "c"]


def test_window_is_bounded_and_idle_epochs_are_kept_once(store):
    publish, report = store
    for n in range(1, 606):
        publish(epoch(n, job("a", n)))
    r = report()
    assert len(r.history) == 600 and r.history[0].epoch == 6 and r.history[-1].epoch == 605
    for n in range(606, 616):
        publish(epoch(n))
    r = report()
    assert r.history[-1].epoch == 606 and len(r.history) == 600  # one idle epoch marks the end; the busy ones stay
    assert [j.job for j in r.finished] == ["a"]


def test_a_message_that_drifts_from_the_schema_is_refused(gateway):
    status = new_instance(gateway, "slaq.SlaqStatus")
    with pytest.raises(Exception, match="bad EpochStatus message: Missing creator property 'jobs'"):  # pyspark re-raises it as its own
        status.publish('{"type": "epoch_status", "epoch": 1, "t": 0.5, "policy": "slaq", "capacity": 2.0}')
    assert messages.decode(status.reportJson()).history == ()
