"""The plan of a one-machine cluster: every node its own loopback address and dirs, every listener
inside 127.0.0.0/8, the driver's confs pointing at every node's merger."""

from __future__ import annotations

import subprocess
import sys

import pytest

from srlab.cluster.layout import ClusterLayout, is_loopback, node_address, plan


def test_nodes_get_their_own_loopback_address_and_dirs(tmp_path):
    lay = plan(tmp_path, 3, list(range(9000, 9010)), tls=True, shuffle_service=True)
    assert [n.host for n in lay.nodes] == ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    assert len({n.local_dir for n in lay.nodes}) == 3 and len({n.work_dir for n in lay.nodes}) == 3
    assert (lay.master_port, lay.master_webui_port, lay.merger_port, lay.shuffle_service_port) == (9000, 9001, 9002, 9003)
    assert [n.worker_webui_port for n in lay.nodes] == [9004, 9005, 9006]
    conf = lay.driver_conf()
    assert conf["spark.riffle.mergers"] == "127.0.0.2:9002,127.0.0.3:9002,127.0.0.4:9002"
    assert conf["spark.riffle.tlsCa"] == lay.tls_cert and conf["spark.riffle.authTokenFile"] == lay.token_file
    assert conf["spark.shuffle.service.port"] == "9003" and conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert ClusterLayout.from_json(lay.to_json()) == lay


def test_every_listener_is_on_loopback(tmp_path):
    lay = plan(tmp_path, 4, list(range(9000, 9010)), shuffle_service=True)
    worker = lay.worker_command("spark-class", lay.nodes[1])
    assert worker[worker.index("--host") + 1] == "127.0.0.3"
    assert lay.worker_env(lay.nodes[1])["SPARK_LOCAL_IP"] == "127.0.0.3"
    merger = lay.merger_command(lay.nodes[1])
    assert merger[merger.index("--listen") + 1] == "127.0.0.3:9002"
    assert lay.shuffle_service_command("java", "cp", lay.nodes[1])[-2:] == ["127.0.0.3", "9003"]
    assert lay.master_env()["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert all(is_loopback(h) for h in ["127.0.0.1", *(n.host for n in lay.nodes)])


def test_bad_sizes_are_refused(tmp_path):
    with pytest.raises(ValueError, match="--nodes"):
        plan(tmp_path, 0, list(range(10)))
    with pytest.raises(ValueError, match="need 6 ports"):
        plan(tmp_path, 3, [1, 2, 3])
    with pytest.raises(ValueError):
        node_address(251)


def test_cli_without_a_cluster_says_so_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "srlab.cluster", "--dir", str(tmp_path), "status"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "no cluster" in proc.stderr
    helped = subprocess.run([sys.executable, "-m", "srlab.cluster", "up", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "--nodes" in helped.stdout
