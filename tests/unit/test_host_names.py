"""Mergers are matched to executors by machine, not by spelling: hostname, FQDN and IP of one node
name the same merger (a mismatch used to disable merging silently)."""

from __future__ import annotations

from riffle.driver.placement import addresses, candidates, same_host

HOSTS = {  # a stand-in for the resolver: a cluster's hosts file
    "worker-1": frozenset({"10.1.0.11"}),
    "worker-1.cluster.example": frozenset({"10.1.0.11"}),
    "worker-2": frozenset({"10.1.0.12"}),
    "10.1.0.11": frozenset({"10.1.0.11"}),
    "10.1.0.12": frozenset({"10.1.0.12"}),
}


def resolve(name: str) -> frozenset[str]:
    return HOSTS.get(name, frozenset())


def test_hostname_fqdn_and_ip_of_one_node_match():
    assert same_host("worker-1", "worker-1.cluster.example", resolve)
    assert same_host("WORKER-1", "10.1.0.11", resolve)
    assert not same_host("worker-1", "worker-2", resolve)
    assert not same_host("worker-1", "unknown-host", resolve)


def test_ip_literals_compare_in_canonical_form():
    assert addresses("0:0:0:0:0:0:0:1") == addresses("[::1]") == frozenset({"::1"})
    assert same_host("127.0.0.3", "127.0.0.3") and not same_host("127.0.0.2", "127.0.0.3")


def test_the_real_resolver_matches_localhost_to_its_address():
    assert "127.0.0.1" in addresses("localhost")
    assert candidates(["127.0.0.2:7338", "127.0.0.3:7338"], "127.0.0.3") == ["127.0.0.3:7338"]


def test_interface_addresses_come_from_the_kernel_without_connecting():
    import socket
    from unittest import mock

    from riffle.driver.placement import interface_addresses

    with mock.patch.object(socket.socket, "connect", side_effect=AssertionError("no connect may happen")):
        found = interface_addresses()
    assert "127.0.0.1" in found  # the loopback interface, read by ioctl
