"""Contract test: every message type of sparkshim/messages.json round-trips Python -> Java -> Python
and Java -> Python unchanged, and the Java side refuses messages that drift from the schema."""

from __future__ import annotations

import json

import pytest
from py4j.protocol import Py4JJavaError

from sparkshim import messages
from sparkshim.bridge import call_static


def sample_value(spec: str, seed: int):
    if spec == "int":
        return -seed if seed % 2 else (1 << 31) - seed  # the 32-bit edge
    if spec == "long":
        return (1 << 53) + seed if seed % 2 else (1 << 62) + seed  # beyond a double's exact range
    if spec == "float":
        return seed + 0.25
    if spec == "bool":
        return seed % 2 == 0
    if spec == "str":
        return f"s-{seed} \"é\" \\ {{x}}"
    if spec.startswith("list["):
        return [sample_value(spec[5:-1], seed + i) for i in range(3)]
    if spec.startswith("dict[str,"):
        return {f"k{i}": sample_value(spec[9:-1], seed + i) for i in range(2)}
    return sample(spec, seed)


def sample(kind: str, seed: int = 1):
    fields = messages.SCHEMA[kind]
    return messages.CLASSES[kind](**{name: sample_value(spec, seed + i) for i, (name, spec) in enumerate(fields.items())})


def call(gateway, method: str, *args: str):
    """A static method of the shim's Messages (String arguments)."""
    return call_static(gateway, "Messages", method, ["java.lang.String"] * len(args), *args)


@pytest.mark.parametrize("kind", sorted(messages.SCHEMA))
def test_python_to_java_and_back(gateway, kind):
    msg = sample(kind)
    text = messages.encode(msg)
    back = str(call(gateway, "roundTrip", text))
    assert json.loads(back) == json.loads(text)
    assert messages.decode(back) == msg


def test_java_samples_cover_every_type_and_decode_exactly(gateway):
    text = str(call(gateway, "samples"))
    decoded = messages.decode(text)
    assert sorted(messages.KIND_OF[type(m)] for m in decoded) == sorted(messages.SCHEMA)
    assert json.loads(messages.encode(decoded)) == json.loads(text)


@pytest.mark.parametrize("mutate", ["extra", "missing", "wrong_type", "unknown_type"])
def test_java_refuses_drifted_messages(gateway, mutate):
    obj = json.loads(messages.encode(messages.MapOutput(1, 2, 0, 3, 4, "e", "h", 5)))
    if mutate == "extra":
        obj["surprise"] = 1
    elif mutate == "missing":
        del obj["map_id"]
    elif mutate == "wrong_type":
        obj["map_index"] = "three"
    else:
        obj["type"] = "map_outptu"
    with pytest.raises(Py4JJavaError, match="bad Message message"):
        call(gateway, "roundTrip", json.dumps(obj))
    with pytest.raises(messages.MessageError):
        messages.decode(json.dumps(obj))
