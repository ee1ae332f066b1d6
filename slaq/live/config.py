"""``spark.slaq.*`` configuration, parsed and validated with errors that name the bad key."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from slaq.policy import POLICIES

PREFIX = "spark.slaq."
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|min)?\s*$")


class ConfigError(ValueError):
    """A ``spark.slaq.*`` value that cannot be used; the message names the key and the accepted values."""


def parse_bool(key: str, text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise ConfigError(f"{key}={text!r}: expected true or false")


def parse_seconds(key: str, text: str) -> float:
    """``2``, ``2s``, ``500ms`` or ``1min`` in seconds (Spark's duration style; bare numbers are seconds)."""
    m = _DURATION.match(text)
    if not m:
        raise ConfigError(f"{key}={text!r}: expected a duration such as 2s or 500ms")
    value = float(m.group(1)) * {"ms": 0.001, "s": 1.0, "min": 60.0, None: 1.0}[m.group(2)]
    if value <= 0:
        raise ConfigError(f"{key}={text!r}: must be > 0")
    return value


def parse_float(key: str, text: str, minimum: float = 0.0) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{key}={text!r}: expected a number") from None
    if not value >= minimum:
        raise ConfigError(f"{key}={text!r}: must be >= {minimum}")
    return value


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

        def value(name: str) -> str | None:
            text = get(PREFIX + name)
            return None if text is None else str(text)

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
