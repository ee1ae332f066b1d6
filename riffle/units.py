"""Byte sizes as people write them (``512k``, ``4m``, ``2g``): one parser for the daemon's flags, the driver's
configuration and the benchmarks. Imports nothing but the standard library, so any of them may use it."""

from __future__ import annotations

import argparse

UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


def parse_spark_size(text: str) -> int:
    """A size as Spark writes it (``64MB``, ``1m``, ``67108864``): :func:`parse_size` with an optional ``b`` after the unit."""
    return parse_size(text.lower().removesuffix("b") if text.lower().endswith(("kb", "mb", "gb", "tb")) else text)


def parse_size(text: str) -> int:
    """``4m``, ``2g``, ``512k``, ``3t`` or a plain byte count.

    Raises :class:`argparse.ArgumentTypeError`, whose message argparse shows as is for a bad flag.
    """
    raw = text.strip().lower()
    digits = raw.rstrip("kmgtb")
    unit = raw[len(digits):]
    try:
        value = float(digits)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 512k, 4m, 2g)") from None
    size = int(value * UNITS[unit]) if unit in UNITS and 0 < value < float(1 << 62) / UNITS[unit] else 0  # refuses nan and inf
    if size < 1:  # also 0.1 or 1e-10 bytes
        raise argparse.ArgumentTypeError(f"not a positive size: {text!r} (use e.g. 512k, 4m, 2g)")
    return size


def format_size(size: int) -> str:
    """``size`` as :func:`parse_size` reads it back, in the largest unit that divides it: ``1k``, ``256k``, ``1g``."""
    for suffix in "tgmk":
        unit = UNITS[suffix]
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)
