"""``HOST:PORT`` addresses and whether they stay on this machine (the secure-default checks use it)."""

from __future__ import annotations

import ipaddress


def host_of(address: str) -> str:
    """The host part of ``HOST:PORT``, ``[v6]:PORT`` or a gRPC target such as ``ipv4:HOST:PORT``."""
    text = address.split("://", 1)[-1]
    for scheme in ("ipv4:", "ipv6:", "dns:"):
        if text.startswith(scheme):
            text = text[len(scheme):]
    if text.startswith("["):
        return text[1:text.find("]")]
    host, sep, _port = text.rpartition(":")
    return host if sep else text


def is_loopback(address: str) -> bool:
    """True for localhost, 127.0.0.0/8 and ::1: a token sent there never leaves the machine."""
    host = host_of(address).strip().lower()
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
