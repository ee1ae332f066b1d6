"""The codec of the typed messages that cross py4j; the messages themselves are the products'.

Each product keeps its schema (``<product>/messages.json``) and a module generated from it
(``<product>/messages.py``, by :mod:`sparkshim.messages_build`) whose frozen dataclasses subclass
:class:`Message`: defining one registers its kind here, so :func:`decode` reads any imported product's
messages. On the wire a message is one JSON object with its kind in ``"type"`` and its fields in
snake_case; building or decoding a message checks every field against the schema's type (integer
ranges, finite floats, exact field sets), so drift fails loudly instead of reading zeros.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import Any, ClassVar

_INT_BITS = {"int": 32, "long": 64}
_KINDS: dict[str, type[Message]] = {}  # every message class defined so far, by kind


class MessageError(ValueError):
    """A message that does not match the schema (unknown type, missing, extra or mistyped field)."""


class Message:
    """A message class: a frozen dataclass with its schema ``KIND`` and ``FIELDS`` (name -> schema type)."""

    KIND: ClassVar[str]
    FIELDS: ClassVar[dict[str, str]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "KIND" in cls.__dict__:
            _KINDS[cls.KIND] = cls

    def __post_init__(self) -> None:  # every message is checked (lists frozen to tuples) when built
        for name, spec in self.FIELDS.items():
            object.__setattr__(self, name, _check(self.KIND, name, spec, getattr(self, name)))


def _check(kind: str, name: str, spec: str, value: Any) -> Any:
    where = f"{kind}.{name}"
    if spec in _INT_BITS:
        bits = _INT_BITS[spec]
        if isinstance(value, bool) or not isinstance(value, int) or not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
            raise MessageError(f"{where}: expected a {bits}-bit integer, got {value!r}")
        return value
    if spec == "float":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):  # JSON has no NaN
            raise MessageError(f"{where}: expected a finite number, got {value!r}")
        return float(value)
    if spec == "bool":
        if not isinstance(value, bool):
            raise MessageError(f"{where}: expected true or false, got {value!r}")
        return value
    if spec == "str":
        if not isinstance(value, str):
            raise MessageError(f"{where}: expected a string, got {value!r}")
        return value
    if spec.startswith("list[") and spec.endswith("]"):
        if not isinstance(value, list | tuple):
            raise MessageError(f"{where}: expected a list, got {value!r}")
        return tuple(_check(kind, name, spec[5:-1], v) for v in value)
    if spec.startswith("dict[str,") and spec.endswith("]"):
        if not isinstance(value, dict):
            raise MessageError(f"{where}: expected an object, got {value!r}")
        return {str(k): _check(kind, name, spec[9:-1], v) for k, v in value.items()}
    if spec in _KINDS:
        msg = value if isinstance(value, Message) else _from_obj(value)
        if msg.KIND != spec:
            raise MessageError(f"{where}: expected a {spec} message, got {msg.KIND}")
        return msg
    raise MessageError(f"{where}: the schema names an unknown type {spec!r}")


def _from_obj(obj: Any) -> Message:
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise MessageError(f"expected a message object with a \"type\", got {obj!r}")
    kind = obj["type"]
    cls = _KINDS.get(kind)
    if cls is None:
        raise MessageError(f"unknown message type {kind!r}")
    given = set(obj) - {"type"}
    if given != set(cls.FIELDS):
        raise MessageError(f"{kind}: fields {sorted(given)} do not match the schema's {sorted(cls.FIELDS)}")
    return cls(**{name: obj[name] for name in cls.FIELDS})


def _to_obj(value: Any) -> Any:
    if isinstance(value, Message):
        out: dict[str, Any] = {"type": value.KIND}
        for f in dataclasses.fields(value):  # type: ignore[arg-type]  # every Message subclass is a dataclass
            out[f.name] = _to_obj(getattr(value, f.name))
        return out
    if isinstance(value, list | tuple):
        return [_to_obj(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_obj(v) for k, v in value.items()}
    return value


def encode(value: Message | Sequence[Message]) -> str:
    """A message (or a list of messages) as the JSON the shim decodes."""
    return json.dumps(_to_obj(value), allow_nan=False, separators=(",", ":"))


def decode(text: str) -> Any:
    """One message, or a list of messages, from the shim's JSON (of the products whose message modules are imported)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MessageError(f"not JSON: {exc}") from None
    if isinstance(data, list):
        return [_from_obj(item) for item in data]
    return _from_obj(data)
