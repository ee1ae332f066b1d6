"""The one parser of the products' ``spark.<product>.*`` values, with errors that name the key.

Every product reads its confs through :class:`ConfReader`; the start-up hook uses the same
:func:`enabled` to decide whether to attach, so a value is either used or refused, everywhere alike.
Booleans follow Spark (``SparkConf.getBoolean``): ``true`` or ``false``, any case, nothing else. Every
number has a range, stated where its key is read: a value outside it (or not finite) is refused with the range.
The known keys are the ones a config class's ``from_conf`` reads (:func:`keys_read`), so a key is
added in one place and a misspelt one is named with its closest match (:func:`unknown_keys`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Iterable
from typing import Any

from sparkshim.wording import number_text

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|min)?\s*$")


class ConfigError(ValueError):
    """A ``spark.<product>.*`` value that cannot be used; the message names the key and what is accepted."""


def parse_bool(key: str, text: str) -> bool:
    value = text.strip().lower()
    if value == "true":
        return True
    if value == "false":
        return False
    raise ConfigError(f"{key}={text!r}: expected true or false")


def seconds_text(value: float) -> str:
    """A duration as ``parse_seconds`` reads it back: ``50ms``, ``604800s``."""
    return f"{number_text(value * 1000)}ms" if value < 1 else f"{number_text(value)}s"


def in_range(key: str, text: str, value: float | None, expected: str, minimum: float, maximum: float,
             show: Callable[[Any], str] = number_text) -> Any:
    """``value`` when it lies in [minimum, maximum] (so finite), else the one error for ``key``: what is expected
    and its range. ``value`` None: ``text`` did not parse."""
    if value is None or not minimum <= value <= maximum:  # also refuses NaN
        raise ConfigError(f"{key}={text!r}: expected {expected} in [{show(minimum)}, {show(maximum)}]")
    return value


def parse_seconds(key: str, text: str, minimum: float, maximum: float) -> float:
    """``2``, ``2s``, ``500ms`` or ``1min`` in seconds (Spark's duration style; bare numbers are seconds)."""
    m = _DURATION.match(text)
    value = float(m.group(1)) * {"ms": 0.001, "s": 1.0, "min": 60.0, None: 1.0}[m.group(2)] if m else None
    return in_range(key, text, value, "a duration such as 2s or 500ms", minimum, maximum, seconds_text)


def parse_float(key: str, text: str, minimum: float, maximum: float) -> float:
    try:
        value: float | None = float(text)
    except ValueError:
        value = None
    return in_range(key, text, value, "a number", minimum, maximum)


def parse_int(key: str, text: str, minimum: int, maximum: int) -> int:
    try:
        value: int | None = int(text.strip())
    except ValueError:
        value = None
    return in_range(key, text, value, "a whole number", minimum, maximum)


class ConfReader:
    """Typed reads of ``prefix + name`` through ``get`` (``SparkConf.get`` or a dict's ``get``); unset keys take the default."""

    def __init__(self, get: Callable[[str], object], prefix: str):
        self._get = get
        self.prefix = prefix

    def key(self, name: str) -> str:
        return self.prefix + name

    def text(self, name: str) -> str | None:
        value = self._get(self.prefix + name)
        return None if value is None else str(value)

    def boolean(self, name: str, default: bool) -> bool:
        value = self.text(name)
        return default if value is None else parse_bool(self.key(name), value)

    def seconds(self, name: str, default: float, minimum: float, maximum: float) -> float:
        value = self.text(name)
        return default if value is None else parse_seconds(self.key(name), value, minimum, maximum)

    def number(self, name: str, default: float, minimum: float, maximum: float) -> float:
        value = self.text(name)
        return default if value is None else parse_float(self.key(name), value, minimum, maximum)

    def integer(self, name: str, default: int, minimum: int, maximum: int) -> int:
        value = self.text(name)
        return default if value is None else parse_int(self.key(name), value, minimum, maximum)

    def choice(self, name: str, default: str, options: Collection[str]) -> str:
        value = self.text(name)
        if value is None:
            return default
        if value not in options:
            raise ConfigError(f"{self.key(name)}={value!r}: expected one of {', '.join(sorted(options))}")
        return value

    def parsed(self, name: str, default: Any, parse: Callable[[str], Any], expected: str) -> Any:
        """``parse(value)`` for formats owned elsewhere; any failure is a ConfigError naming the key."""
        value = self.text(name)
        if value is None:
            return default
        try:
            return parse(value)
        except Exception:
            raise ConfigError(f"{self.key(name)}={value!r}: expected {expected}") from None

    def size(self, name: str, default: int, parse: Callable[[str], int], minimum: int, maximum: int,
             show: Callable[[int], str], expected: str = "a size such as 256k or 1m") -> int:
        """A byte count ``parse`` reads (``riffle.units.parse_size``), within [minimum, maximum]."""
        value = self.text(name)
        if value is None:
            return default
        try:
            size: int | None = parse(value)
        except Exception:
            size = None
        return in_range(self.key(name), value, size, expected, minimum, maximum, show)


def enabled(get: Callable[[str], object], key: str) -> bool:
    """Whether ``key`` (e.g. ``spark.riffle.enabled``) switches a package on; raises ConfigError for anything but true/false."""
    value = get(key)
    return False if value is None else parse_bool(key, str(value))


def keys_read(from_conf: Callable[[Callable[[str], Any]], object]) -> tuple[str, ...]:
    """Every key ``from_conf`` (a config class's parser) looks up, in order: the one list of known keys."""
    seen: dict[str, None] = {}

    def get(key: str) -> None:
        seen[key] = None
        return None

    from_conf(get)
    return tuple(seen)


def unknown_keys(pairs: Iterable[tuple[str, object]], prefix: str, known: Collection[str]) -> list[str]:
    """One message per key of ``pairs`` (``SparkConf.getAll()``) under ``prefix`` that no config reads,
    naming the closest known key (compared without the prefix and case, where typos live)."""
    names = {key[len(prefix):].lower(): key for key in known if key.startswith(prefix)}
    messages = []
    for key, _ in pairs:
        if not key.startswith(prefix) or key in known:
            continue
        close = difflib.get_close_matches(key[len(prefix):].lower(), list(names), n=1)
        hint = f"did you mean {names[close[0]]}?" if close else f"known keys: {', '.join(sorted(names.values()))}"
        messages.append(f"{key} is not a known key and is ignored; {hint}")
    return messages
