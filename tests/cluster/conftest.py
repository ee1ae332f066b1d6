"""A real Spark standalone cluster of three nodes on loopback (127.0.0.2-4), each with its own merger
(token + TLS) and external shuffle service process, started by the project's own harness once for every module
here; node 3's local dir is a small tmpfs where the run may mount one (the fault matrix fills it). A module that
changes the cluster restores it (the fault matrix its mergers' flags, test_node_failures.py node 3's merger); the one
that kills nodes runs last (tests/conftest.py orders it).

One application (``shared_app``) serves the fault matrix's cases and then test_riffle_cluster.py's token and TLS
tests (tests/conftest.py runs the fault matrix first): a driver's start-up is most of what either needs. The
cluster's cores are one application's at a time, so a test that starts an application of its own stops that one
first (``shared_app.stop()``)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

import riffle
from srlab.cluster import Cluster, running_cluster
from srlab.cluster.layout import node_local_dir
from srlab.riffle_bench import faults
from tests.cluster.support import cluster_session, wait_executors


@pytest.fixture(scope="package")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    """As ``faults.fault_cluster`` makes it (node 3's small disk: SRLAB_FAULTS_SMALL_DISK=0 forces the injected
    variant), with the shuffle services and the mergers' own flags."""
    base = tmp_path_factory.mktemp("cluster")
    disk = node_local_dir(base, 3)
    small_disk = os.environ.get("SRLAB_FAULTS_SMALL_DISK") != "0" and faults.can_mount_tmpfs(base / "probe")
    if small_disk:
        disk.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={faults.DISK_MB}m,mode=0755", "tmpfs", str(disk)], check=True)
    try:
        with running_cluster(nodes=3, base_dir=base, tls=True, shuffle_service=True) as c:
            c.small_disk = small_disk  # type: ignore[attr-defined]  # what the fault matrix's disk-full case reads
            yield c
    finally:
        if small_disk:
            subprocess.run(["umount", "-l", str(disk)], check=False)


class SharedApp:
    """A driver on the cluster with the fault matrix's confs (failing tasks retried on the other nodes) and Riffle
    attached from the confs alone, started at its first use; ``stop()`` frees the cluster's cores."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self._stack = ExitStack()
        self._session: tuple[Any, Any] | None = None

    def get(self) -> tuple[Any, Any]:
        """``(spark, scheduler)``."""
        if self._session is None:
            with ExitStack() as starting:  # a start that fails stops its session at once, not at the package's end
                spark = starting.enter_context(cluster_session(self.cluster, "riffle-cluster", faults.SESSION_CONF))
                wait_executors(spark.sparkContext, 3)
                scheduler = riffle.attach(spark).scheduler
                assert scheduler is not None, "spark.riffle.enabled=true did not attach Riffle"
                self._stack.enter_context(starting.pop_all())
            self._session = (spark, scheduler)
        return self._session

    def stop(self) -> None:
        self._session = None
        self._stack.close()


@pytest.fixture(scope="package")
def shared_app(cluster) -> Iterator[SharedApp]:
    app = SharedApp(cluster)
    try:
        yield app
    finally:
        app.stop()
