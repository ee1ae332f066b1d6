"""A trace file's JSON, read as untrusted input: its size and nesting bounded before it is parsed, and each field's
type and range checked as it is taken (:mod:`slaq.sim.trace` reads a ``slaq-trace/1`` document with these)."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from slaq.stats.history import InvalidReport, finite_number

MAX_FILE_BYTES = 8 * 2**20  # the file as stored, and its JSON once decompressed (the packaged traces: 74 KB of JSON at most)
MAX_DEPTH = 32  # nesting of JSON arrays and objects (a trace needs 7); checked before parsing, which recurses
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


class TraceError(ValueError):
    """A trace file that is missing, unreadable or not a ``slaq-trace/1`` document (one line, for the CLI)."""


def number(value: object, what: str, low: float, high: float) -> float:
    """``value`` as a finite float in [low, high] (``slaq.stats.history``'s rule for a number), or TraceError."""
    try:
        x = finite_number(value, what)
    except InvalidReport as exc:
        raise TraceError(str(exc)) from None
    if not low <= x <= high:
        raise TraceError(f"{what} must be in [{low:g}, {high:g}], got {x:g}")
    return x


def count(value: object, what: str, low: int, high: int) -> int:
    x = number(value, what, low, high)
    if not x.is_integer():
        raise TraceError(f"{what} must be a whole number, got {x:g}")
    return int(x)


def items(value: object, what: str, kind: type, high: int, low: int = 0) -> Any:
    """``value`` if it is a ``kind`` (list or dict) of ``low`` to ``high`` entries, or TraceError."""
    if not isinstance(value, kind):
        raise TraceError(f"{what} must be a JSON {'array' if kind is list else 'object'}, got {type(value).__name__}")
    if not low <= len(value) <= high:  # type: ignore[arg-type]
        raise TraceError(f"{what} must hold {low} to {high} entries, got {len(value)}")  # type: ignore[arg-type]
    return value


def _depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, found without recursion: its strings removed,
    the running count of opening minus closing brackets."""
    codes = np.frombuffer(_STRING.sub(b'""', raw), dtype=np.uint8)
    steps = np.isin(codes, (ord("["), ord("{"))).astype(np.int32) - np.isin(codes, (ord("]"), ord("}")))
    return int(np.cumsum(steps, dtype=np.int32).max(initial=0))


def read_json(p: Path) -> object:
    """The JSON document of a file of at most :data:`MAX_FILE_BYTES`, decompressed (``.gz``) as a stream that
    stops past that size, and nested at most :data:`MAX_DEPTH` deep; :class:`TraceError` otherwise."""
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise TraceError(f"{p}: {size} bytes, more than a trace may be ({MAX_FILE_BYTES} bytes)")
        with gzip.open(p, "rb") if p.suffix == ".gz" else p.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise TraceError(f"{p}: no such trace file") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceError(f"{p}: not a readable trace ({type(exc).__name__}: {exc})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise TraceError(f"{p}: decompresses to more than a trace may be ({MAX_FILE_BYTES} bytes of JSON)")
    depth = _depth(raw)
    if depth > MAX_DEPTH:
        raise TraceError(f"{p}: JSON nested {depth} deep, more than a trace may be ({MAX_DEPTH})")
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # not JSON, not UTF-8, an integer of more digits than Python converts
        raise TraceError(f"{p}: not a readable trace ({type(exc).__name__}: {exc})") from None
