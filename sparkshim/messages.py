"""The typed messages that cross py4j, built from ``sparkshim/messages.json`` (the one schema).

Each message type becomes a frozen dataclass here; the Java records in ``Messages.java`` are held to
the same schema by the contract test (``test_message_contract.py``), which round-trips every type
through the JVM. The schema's ``names`` (local property and pool names, breeze's logger and line)
are read here and, from the copy packed into the jar, by ``Names.java``. On the wire a message is one JSON object with its kind in ``"type"`` and its fields in
snake_case; decoding checks every field's type, so drift fails loudly instead of reading zeros.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("messages.json")
_SCHEMA_FILE = json.loads(SCHEMA_PATH.read_text())
SCHEMA: dict[str, dict[str, str]] = _SCHEMA_FILE["messages"]
NAMES: dict[str, str] = _SCHEMA_FILE["names"]

JOB_PROPERTY: str = NAMES["job_property"]  # local property naming the SLAQ job of a thread's Spark work
POOL_PREFIX: str = NAMES["pool_prefix"]  # a SLAQ job's scheduler pool is this + the job name
BREEZE_LOGGER: str = NAMES["breeze_logger"]  # breeze's optimizers log their iterations under this logger
BREEZE_ITERATION_LINE: str = NAMES["breeze_iteration_line"]  # how breeze's per-iteration line starts
FALLBACK_CAUSES: tuple[str, ...] = tuple(NAMES["fallback_causes"].split())  # why a Riffle merge group stayed unmerged


_INT_BITS = {"int": 32, "long": 64}


class MessageError(ValueError):
    """A message that does not match the schema (unknown type, missing, extra or mistyped field)."""


def _class_name(kind: str) -> str:
    return "".join(part.title() for part in kind.split("_"))


def _make(kind: str, fields: dict[str, str]) -> type:
    def __post_init__(self: Any) -> None:  # every message is checked (and lists frozen to tuples) when built
        for name, spec in fields.items():
            object.__setattr__(self, name, _check(kind, name, spec, getattr(self, name)))

    cls = dataclasses.make_dataclass(_class_name(kind), list(fields), frozen=True, namespace={"__post_init__": __post_init__})
    cls.__doc__ = f"The ``{kind}`` message of sparkshim/messages.json."
    cls.__module__ = __name__
    cls.KIND = kind  # type: ignore[attr-defined]
    return cls


CLASSES: dict[str, type] = {kind: _make(kind, fields) for kind, fields in SCHEMA.items()}
KIND_OF: dict[type, str] = {cls: kind for kind, cls in CLASSES.items()}

# Riffle, JVM -> Python
MapStageSubmitted: Any = CLASSES["map_stage_submitted"]
MapOutput: Any = CLASSES["map_output"]
MapStageDone: Any = CLASSES["map_stage_done"]
HoldExpired: Any = CLASSES["hold_expired"]
ShuffleCleaned: Any = CLASSES["shuffle_cleaned"]
ExecutorRemoved: Any = CLASSES["executor_removed"]
ApplicationEnd: Any = CLASSES["application_end"]
# SLAQ, JVM -> Python
Iteration: Any = CLASSES["iteration"]
PoolState: Any = CLASSES["pool_state"]
ConnectFit: Any = CLASSES["connect_fit"]
# Python -> JVM
Allocation: Any = CLASSES["allocation"]
JobStatus: Any = CLASSES["job_status"]
EpochStatus: Any = CLASSES["epoch_status"]  # one per epoch, shown by the SLAQ UI tab (docs/ui.md)
# JVM -> REST clients (the SLAQ tab's /slaq/json)
StatusReport: Any = CLASSES["status_report"]
SlaqSummary: Any = CLASSES["slaq_summary"]  # what SLAQ did over the application (the summary at its end)
SlaqJobSummary: Any = CLASSES["slaq_job_summary"]
MergeGroup: Any = CLASSES["merge_group"]
Commit: Any = CLASSES["commit"]
# Python -> JVM -> REST clients (the Riffle tab's /riffle/json, its metrics and the summary at application end)
RiffleStatus: Any = CLASSES["riffle_status"]
RiffleShuffle: Any = CLASSES["riffle_shuffle"]
RiffleMerger: Any = CLASSES["riffle_merger"]
RiffleTotals: Any = CLASSES["riffle_totals"]


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
    if spec in SCHEMA:
        msg = value if type(value) in KIND_OF else _from_obj(value)
        if KIND_OF[type(msg)] != spec:
            raise MessageError(f"{where}: expected a {spec} message, got {KIND_OF[type(msg)]}")
        return msg
    raise MessageError(f"{where}: the schema names an unknown type {spec!r}")


def _from_obj(obj: Any) -> Any:
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise MessageError(f"expected a message object with a \"type\", got {obj!r}")
    kind = obj["type"]
    fields = SCHEMA.get(kind)
    if fields is None:
        raise MessageError(f"unknown message type {kind!r}")
    given = set(obj) - {"type"}
    if given != set(fields):
        raise MessageError(f"{kind}: fields {sorted(given)} do not match the schema's {sorted(fields)}")
    return CLASSES[kind](**{name: obj[name] for name in fields})


def _to_obj(value: Any) -> Any:
    kind = KIND_OF.get(type(value))
    if kind is not None:
        out: dict[str, Any] = {"type": kind}
        for f in dataclasses.fields(value):
            out[f.name] = _to_obj(getattr(value, f.name))
        return out
    if isinstance(value, list | tuple):
        return [_to_obj(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_obj(v) for k, v in value.items()}
    return value


def encode(value: Any) -> str:
    """A message (or a list of messages) as the JSON the shim decodes."""
    return json.dumps(_to_obj(value), allow_nan=False, separators=(",", ":"))


def decode(text: str) -> Any:
    """One message, or a list of messages, from the shim's JSON."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MessageError(f"not JSON: {exc}") from None
    if isinstance(data, list):
        return [_from_obj(item) for item in data]
    return _from_obj(data)
