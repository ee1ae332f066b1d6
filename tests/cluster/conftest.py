"""A real Spark standalone cluster of three nodes on loopback (127.0.0.2-4), each with its own merger
(token + TLS) and external shuffle service process, started by the project's own harness: one for every module
here. A module that changes it restores it (test_riffle_cluster.py restarts the merger it stops); the one that kills
nodes runs last (tests/conftest.py orders it), and the fault matrix starts a cluster of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from srlab.cluster import Cluster, running_cluster


@pytest.fixture(scope="package")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    with running_cluster(nodes=3, base_dir=tmp_path_factory.mktemp("cluster"), tls=True, shuffle_service=True) as c:
        yield c
