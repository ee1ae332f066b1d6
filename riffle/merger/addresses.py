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


def port_number(text: str, low: int = 1) -> int | None:
    """The port ``text`` names when it is ASCII digits in ``low``..65535, else None. ``str.isdigit`` and ``int`` take
    ``²`` or Arabic-Indic digits, which no resolver reads as a port; 0 is "any free port" only where a server binds."""
    if not text.isascii() or not text.isdigit() or len(text) > 5:
        return None
    port = int(text)
    return port if low <= port <= 65535 else None


def address_error(address: str, low: int = 1) -> str | None:
    """Why ``address`` is not ``HOST:PORT`` with a port in ``low``..65535 (a ``[v6]`` host included), or None when it is."""
    host, sep, port = address.rpartition(":")
    if not sep or not host.strip("[]"):
        return "wants HOST:PORT"
    if port_number(port, low) is None:
        return f"port must be ASCII digits in {low}..65535"
    return None
