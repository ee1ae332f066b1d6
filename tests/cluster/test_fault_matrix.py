"""The fault matrix on the three-node cluster (token + TLS; the cases live in ``srlab.riffle_bench.faults``,
which ``riffle bench faults`` times; the cluster is the package's, as ``faults.fault_cluster`` makes it plus the
shuffle services, and the cases run in its shared application before test_riffle_cluster.py's tests): every case
returns vanilla's rows, and after the application's cleanup nothing of Riffle's (merged files, temps, merge records)
is left on any node.

- a merger SIGSTOPped for longer than ``spark.riffle.rpcTimeout`` from node 2's first map output on,
  and another from the end of the map stage (the reducers' gate): its merges time out and stay unmerged;
- a merger SIGKILLed and restarted while a merge stalls between writing the merged pair and publishing
  it (fault injection holds it at the publish step "recorded"): recovery undoes it, the driver falls back;
- the mergers restarted with a new token once the map stage is submitted: one WARN line, no merge;
- node 3's local dir (a 64 MB tmpfs) filled when that node reports its second map output: its merges fail
  with disk full, Spark retries its failing map tasks on the other nodes. Mounting needs root; without it
  node 3's merger fails its writes with ENOSPC by fault injection instead (the outcome's detail says which ran);
- the driver SIGKILLed while merges are in flight (published and recorded, the replies held back by fault
  injection; its own process, first, while the cluster's cores are free): the worker deletes the
  application's dirs, and within the mergers' application lease (4 s here) plus its check interval they
  delete its merge records and whatever merged files are left: nothing of Riffle's or of the
  application is left on any node.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from srlab.cluster import Cluster
from srlab.riffle_bench import faults
from srsupport.riffle_watch import set_merging

PAUSE = 2.0


@pytest.fixture(scope="module", autouse=True)
def mergers_restored(cluster) -> Iterator[Cluster]:
    """The cases restart the mergers with the fault matrix's flags (``faults.restart_merger``: no fsync, a 4 s
    application lease); after them every merger runs with the cluster's own flags again."""
    yield cluster
    for node in cluster.layout.nodes:
        cluster.restart_merger(node)


def test_driver_killed_with_merges_in_flight(cluster, shared_app, tmp_path):
    shared_app.stop()  # not started yet when the tests run in their order: the killed driver's spark-submit gets the cores
    out = faults.run_driver_killed(cluster, tmp_path, pause=PAUSE)
    assert out["files_at_kill"] > 0, out  # merged files and their records were on disk when the driver died
    assert not out["left"], out
    # the lease and its check interval, the held merge's pause, and the master noticing the dead driver
    assert out["clean_seconds"] <= faults.APP_LEASE * 1.25 + PAUSE + 5, out
    # the mergers deleted the application's records and files when its lease ran out: at least the one holding the
    # merge held at "committed" (published and recorded when the driver died) says so
    assert out["merger_log"], out


@pytest.fixture(scope="module")
def session(shared_app):
    spark, scheduler = shared_app.get()  # after the driver-killed case: its spark-submit had the cores to itself
    set_merging(scheduler, False)
    assert faults.job(spark.sparkContext) == faults.expected()  # vanilla Spark
    return spark, scheduler


def run(cluster, session, name: str) -> faults.Outcome:
    spark, scheduler = session
    outcome = faults.run_case(cluster, spark, scheduler, faults.CASES[name])
    assert outcome.correct, outcome
    assert not outcome.orphans, outcome
    return outcome


def host(cluster, index: int) -> str:
    return cluster.layout.nodes[index - 1].host


def test_undisturbed(cluster, session):
    o = run(cluster, session, "undisturbed")
    assert len({m["host"] for m in o.merges if m["state"] == "done"}) > 1, o
    assert not [m for m in o.merges if m["state"] == "failed"], o


@pytest.mark.parametrize("name", ["merger-stopped-in-map-stage", "merger-stopped-in-reducer-gate"])
def test_merger_stopped(cluster, session, name):
    o = run(cluster, session, name)
    assert o.detail["stopped_seconds"] > faults.RPC_TIMEOUT, o
    assert o.failed_on(host(cluster, 2), "DEADLINE_EXCEEDED") >= 1, o
    assert o.committed_on(host(cluster, 2)) == 0 and o.committed_on() >= 1, o


def test_merger_restarted_between_merge_and_commit(cluster, session):
    o = run(cluster, session, "merger-restarted-before-commit")
    assert o.detail.get("restarted"), o
    assert o.failed_on(host(cluster, 2)) >= 1 and o.committed_on(host(cluster, 2)) == 0, o
    assert any("1 undone" in line for line in o.detail["recovery_log"]), o


def test_token_rotated_while_the_application_runs(cluster, session):
    o = run(cluster, session, "token-rotated")
    assert o.committed_on() == 0 and any("UNAUTHENTICATED" in m["error"] for m in o.merges), o
    refusals = [line for line in o.warnings if "refuses this driver" in line]
    assert len(refusals) == 1, o.warnings


def test_disk_full_during_the_map_stage(cluster, session):
    o = run(cluster, session, "disk-full-in-map-stage")
    assert o.failed_on(host(cluster, 3), "RESOURCE_EXHAUSTED") >= 1 and o.committed_on(host(cluster, 3)) == 0, o
    assert o.committed_on() >= 1, o
