"""``spark.riffle.*`` configuration, validated with errors that name the key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from riffle.driver.policy import MERGE_POLICIES
from riffle.merger.cli import parse_size
from sparkshim.conf import ConfigError, conf_reader, parse_bool, parse_float, parse_seconds

PREFIX = "spark.riffle."


@dataclass(frozen=True)
class RiffleConfig:
    enabled: bool = False
    mergers: tuple[str, ...] = ()  # host:port of every merger; empty: one per executor host at merger_port
    merger_port: int = 7338
    policy: str = "nway"
    nway: int = 20
    target_block_bytes: int = 256 * 1024
    best_effort: float = 0.95  # fraction of merges to wait for once the map stage is done
    hold_timeout: float = 30.0  # longest the reducers wait for merges after the map stage
    rpc_timeout: float = 60.0
    token: str | None = field(default=None, repr=False)
    tls_ca: str | None = None

    @classmethod
    def from_conf(cls, get: Callable[[str], str | None]) -> RiffleConfig:
        d = cls()
        value = conf_reader(get, PREFIX)

        def key(name: str) -> str:
            return PREFIX + name

        policy = value("policy") or d.policy
        if policy not in MERGE_POLICIES:
            raise ConfigError(f"{key('policy')}={policy!r}: expected one of {', '.join(MERGE_POLICIES)}")
        mergers = tuple(m.strip() for m in (value("mergers") or "").split(",") if m.strip())
        for m in mergers:
            host, _, port_text = m.rpartition(":")
            if not host or not port_text.isdigit():
                raise ConfigError(f"{key('mergers')}: {m!r} is not host:port")
        nway = int(parse_float(key("nway"), value("nway") or str(d.nway), 2))
        port = int(parse_float(key("mergerPort"), value("mergerPort") or str(d.merger_port), 1))
        best = parse_float(key("bestEffort"), value("bestEffort") or str(d.best_effort), 0.0)
        if best > 1:
            raise ConfigError(f"{key('bestEffort')}={best}: must be in [0, 1]")
        size_text = value("targetBlockSize")
        try:
            target = parse_size(size_text) if size_text else d.target_block_bytes
        except Exception:
            raise ConfigError(f"{key('targetBlockSize')}={size_text!r}: expected a size such as 256k or 1m") from None
        token = value("authToken")
        token_file = value("authTokenFile")
        if token_file:
            try:
                token = Path(token_file).read_text().strip()
            except OSError as exc:
                raise ConfigError(f"{key('authTokenFile')}={token_file!r}: {exc.strerror}") from None
        enabled = value("enabled")
        return cls(
            enabled=d.enabled if enabled is None else parse_bool(key("enabled"), enabled),
            mergers=mergers,
            merger_port=port,
            policy=policy,
            nway=nway,
            target_block_bytes=target,
            best_effort=best,
            hold_timeout=parse_seconds(key("holdTimeout"), value("holdTimeout") or f"{d.hold_timeout}s"),
            rpc_timeout=parse_seconds(key("rpcTimeout"), value("rpcTimeout") or f"{d.rpc_timeout}s"),
            token=token or None,
            tls_ca=value("tlsCa"),
        )
