"""``spark.riffle.*`` configuration, validated with errors that name the key; each number's accepted range is
stated where :meth:`RiffleConfig.from_conf` reads it, and the files it names are read by :mod:`sparkshim.safe_read`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from riffle.driver.cost import CostConfig, StorageCost
from riffle.driver.policy import MERGE_POLICIES
from riffle.merger.addresses import address_error
from riffle.merger.client import INSECURE_ENV, sends_token_in_cleartext
from riffle.merger.config import MAX_FAN_IN
from riffle.merger.tokens import token_refusal
from riffle.shuffle.layout import DEFAULT_SUB_DIRS, MAX_SUB_DIRS
from riffle.storage_cost import BANDWIDTH_RANGE, SECONDS_RANGE
from riffle.units import format_size, parse_size, parse_spark_size
from sparkshim.conf import ConfigError, ConfReader
from sparkshim.safe_read import FileRefused, read_config_file, read_config_text

PREFIX = "spark.riffle."
DAY = 86400.0  # the longest timeout: longer cannot be meant


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
    token_file: str | None = None  # where the token was read; read again when a merger refuses it (a rotated token)
    tls_ca: str | None = None
    tls_ca_pem: bytes | None = field(default=None, repr=False)  # tls_ca's content, read once at start
    cost: CostConfig = CostConfig()
    sub_dirs: int = DEFAULT_SUB_DIRS  # Spark's spark.diskStore.subDirectories (read with the spark.riffle.* confs): where executors hash block files

    @classmethod
    def from_conf(cls, get: Callable[[str], str | None]) -> RiffleConfig:
        d = cls()
        conf = ConfReader(get, PREFIX)
        mergers = tuple(m.strip() for m in (conf.text("mergers") or "").split(",") if m.strip())
        for m in mergers:
            if (error := address_error(m)) is not None:
                raise ConfigError(f"{conf.key('mergers')}: {m!r}: {error}")
        token = conf.text("authToken")
        token_file = conf.text("authTokenFile")
        tls_ca = conf.text("tlsCa")
        try:
            token = read_config_text(token_file, conf.key("authTokenFile")) if token_file else token
            tls_ca_pem = read_config_file(tls_ca, conf.key("tlsCa")) if tls_ca else None
        except FileRefused as exc:
            raise ConfigError(str(exc)) from None
        if token and (refusal := token_refusal(token)) is not None:
            raise ConfigError(f"{conf.key('authTokenFile')}={token_file}: {refusal}" if token_file else f"{conf.key('authToken')}: {refusal}")
        cleartext = [m for m in mergers if sends_token_in_cleartext(m, token, tls_ca)]
        if cleartext:
            raise ConfigError(f"{conf.key('authTokenFile' if token_file else 'authToken')} without {conf.key('tlsCa')} "
                              f"would send the token in cleartext to {', '.join(cleartext)}: set {conf.key('tlsCa')} "
                              f"(or {INSECURE_ENV}=1 to accept that)")
        return cls(
            enabled=conf.boolean("enabled", d.enabled),
            mergers=mergers,
            merger_port=conf.integer("mergerPort", d.merger_port, 1, 65535),
            policy=conf.choice("policy", d.policy, MERGE_POLICIES),
            nway=conf.integer("nway", d.nway, 2, MAX_FAN_IN),  # a merger refuses more inputs
            target_block_bytes=conf.size("targetBlockSize", d.target_block_bytes, parse_size, 1 << 10, 1 << 30, format_size),
            best_effort=conf.number("bestEffort", d.best_effort, 0, 1),
            hold_timeout=conf.seconds("holdTimeout", d.hold_timeout, 0.001, DAY),
            rpc_timeout=conf.seconds("rpcTimeout", d.rpc_timeout, 0.1, DAY),
            token=token or None,
            token_file=token_file,
            tls_ca=tls_ca,
            tls_ca_pem=tls_ca_pem,
            cost=_cost_config(conf, get),
            sub_dirs=ConfReader(get, "spark.diskStore.").integer("subDirectories", d.sub_dirs, 1, MAX_SUB_DIRS),
        )


def _cost_config(conf: ConfReader, get: Callable[[str], str | None]) -> CostConfig:
    """``spark.riffle.cost.*``, and how adaptive execution coalesces a SQL exchange's reducers by the application's conf (Spark's
    own keys and defaults; a query's job carries its session's, which :func:`riffle.driver.cost.for_shuffle` prefers)."""
    d, s = CostConfig(), StorageCost()
    sql = ConfReader(get, "spark.sql.adaptive.")
    storage = StorageCost(  # each within the range a storage's figures may have (riffle.storage_cost)
        request_seconds=conf.seconds("cost.requestTime", s.request_seconds, *SECONDS_RANGE),
        byte_seconds=1.0 / conf.size("cost.bandwidth", int(1 / s.byte_seconds), parse_size, *BANDWIDTH_RANGE, format_size,
                                    "bytes per second such as 500m"),
        merge_seconds=conf.seconds("cost.mergeTime", s.merge_seconds, *SECONDS_RANGE),
        input_seconds=conf.seconds("cost.mergeInputTime", s.input_seconds, *SECONDS_RANGE), buffer_bytes=s.buffer_bytes)
    return CostConfig(
        enabled=conf.boolean("cost.enabled", d.enabled), storage=storage,
        request_time_set=conf.text("cost.requestTime") is not None, bandwidth_set=conf.text("cost.bandwidth") is not None,
        coalesce=sql.boolean("enabled", True) and sql.boolean("coalescePartitions.enabled", True),
        advisory_bytes=sql.parsed("advisoryPartitionSizeInBytes", d.advisory_bytes, parse_spark_size, "a size such as 64MB"),
        min_partition_bytes=sql.parsed("coalescePartitions.minPartitionSize", d.min_partition_bytes, parse_spark_size, "a size such as 1MB"),
        parallelism_first=sql.boolean("coalescePartitions.parallelismFirst", d.parallelism_first))
