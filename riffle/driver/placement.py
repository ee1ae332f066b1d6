"""Which merger gets a merge: one that can reach the executor's files (same host), chosen by the
power of two choices on reported load (thesis §4.3.4). Pure apart from the host-name lookup."""

from __future__ import annotations

import functools
import ipaddress
import random
import socket
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

_SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's IPv4 address


@functools.lru_cache(maxsize=1)
def local_names() -> frozenset[str]:
    names = {"localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn()}
    try:
        names.update(socket.gethostbyname_ex(socket.gethostname())[2])
        names.update(str(a[4][0]) for a in socket.getaddrinfo(socket.gethostname(), None))
    except OSError:
        pass
    names.update(interface_addresses())  # Spark names a host whose hostname resolves to loopback by an interface's address
    return frozenset(n.lower() for n in names)


def interface_addresses() -> set[str]:
    """The addresses of this machine's network interfaces, read from the kernel without any socket
    connecting anywhere: IPv4 by ``SIOCGIFADDR`` per interface, IPv6 from ``/proc/net/if_inet6``."""
    found: set[str] = set()
    try:
        import fcntl

        interfaces = [name for _, name in socket.if_nameindex()]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for name in interfaces:
                try:
                    reply = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
                except OSError:  # no IPv4 address on this interface
                    continue
                found.add(socket.inet_ntoa(reply[20:24]))
    except (ImportError, OSError):
        pass
    try:
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            raw = line.split()[0]
            found.add(str(ipaddress.IPv6Address(bytes.fromhex(raw))))
    except (OSError, ValueError, IndexError):
        pass
    return found


@functools.lru_cache(maxsize=4096)
def addresses(name: str) -> frozenset[str]:
    """Every address ``name`` stands for: the canonical form of an IP literal, else what the resolver
    (hosts file, DNS) returns; empty when it cannot be resolved. Cached: called per map output."""
    name = name.lower().strip("[]")
    try:
        return frozenset({str(ipaddress.ip_address(name))})
    except ValueError:
        pass
    try:
        return frozenset(str(info[4][0]) for info in socket.getaddrinfo(name, None))
    except (OSError, UnicodeError):
        return frozenset()


def same_host(a: str, b: str, resolve: Callable[[str], frozenset[str]] = addresses) -> bool:
    """Whether two names (hostname, FQDN or IP, as Spark and the operator wrote them) are one machine:
    equal, both names of the driver's own machine, or resolving to a common address."""
    a, b = a.lower().strip("[]"), b.lower().strip("[]")
    if a == b:
        return True
    local = local_names()
    if a in local and b in local:
        return True
    return bool(resolve(a) & resolve(b))


def host_of(address: str) -> str:
    return address.rpartition(":")[0].strip("[]")


def candidates(mergers: Sequence[str], executor_host: str) -> list[str]:
    """Mergers on the executor's host (only they can read its local dirs)."""
    return [m for m in mergers if same_host(host_of(m), executor_host)]


def two_choices(options: Sequence[str], load: Callable[[str], float], rng: random.Random) -> str:
    """The less loaded of two mergers picked at random (the only one if there is one)."""
    if not options:
        raise ValueError("no merger can reach these map outputs")
    if len(options) == 1:
        return options[0]
    a, b = rng.sample(list(options), 2)
    return a if load(a) <= load(b) else b
