"""Parsing of ``spark.slaq.*``/``spark.riffle.*`` values, with errors that name the key."""

from __future__ import annotations

import re
from collections.abc import Callable

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|min)?\s*$")


class ConfigError(ValueError):
    """A ``spark.slaq.*`` or ``spark.riffle.*`` value that cannot be used; the message names the key and what is accepted."""


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


def conf_reader(get: Callable[[str], object], prefix: str) -> Callable[[str], str | None]:
    """``name -> str(get(prefix + name))`` or None when unset, for ``SparkConf.get`` or a dict's ``get``."""

    def value(name: str) -> str | None:
        text = get(prefix + name)
        return None if text is None else str(text)

    return value
