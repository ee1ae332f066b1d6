"""``spark.slaq.*`` configuration, parsed and validated with errors that name the bad key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from slaq.policy import POLICIES
from sparkshim.conf import ConfigError, conf_reader, parse_bool, parse_float, parse_seconds

PREFIX = "spark.slaq."


@dataclass(frozen=True)
class SlaqConfig:
    enabled: bool = False
    policy: str = "slaq"
    epoch: float = 2.0
    work_conserving: bool = True
    fail_open_epochs: float = 3.0  # pools open when no allocation arrived for this many epochs
    reserve_cores: float = 0.0  # cores kept out of SLAQ's hands for non-ML work

    @classmethod
    def from_conf(cls, get: Callable[[str], str | None]) -> SlaqConfig:
        """Read every ``spark.slaq.*`` key through ``get`` (e.g. ``SparkConf.get``); missing keys take defaults."""
        d = cls()
        value = conf_reader(get, PREFIX)

        enabled = value("enabled")
        policy = value("policy")
        if policy is not None and policy not in POLICIES:
            raise ConfigError(f"{PREFIX}policy={policy!r}: expected one of {', '.join(sorted(POLICIES))}")
        epoch = value("epoch")
        wc = value("workConserving")
        fail = value("failOpenEpochs")
        reserve = value("reserveCores")
        return cls(
            enabled=d.enabled if enabled is None else parse_bool(PREFIX + "enabled", enabled),
            policy=policy or d.policy,
            epoch=d.epoch if epoch is None else parse_seconds(PREFIX + "epoch", epoch),
            work_conserving=d.work_conserving if wc is None else parse_bool(PREFIX + "workConserving", wc),
            fail_open_epochs=d.fail_open_epochs if fail is None else parse_float(PREFIX + "failOpenEpochs", fail, 1.0),
            reserve_cores=d.reserve_cores if reserve is None else parse_float(PREFIX + "reserveCores", reserve, 0.0),
        )
