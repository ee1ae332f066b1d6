"""Contract test: every message type of sparkshim/messages.json round-trips Python -> Java -> Python
and Java -> Python unchanged, the Java side refuses messages that drift from the schema, and both
sides read the schema's shared names alike. Only the product's own codec (``Messages.encode`` and
``decode``) is called: the test builds the Java records through their constructors."""

from __future__ import annotations

import json

import pytest
from py4j.protocol import Py4JJavaError

from sparkshim import messages
from sparkshim.bridge import call_static, new_instance, shim_class


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


MESSAGE = "io.slaqriffle.seam.Messages$Message"


def java_decode(gateway, text: str):
    """The shim's ``Messages.decode(text, Message.class)``: any message, its record picked by ``"type"``."""
    return call_static(gateway, "seam.Messages", "decode", ["java.lang.String", "java.lang.Class"], text,
                       shim_class(gateway, "seam.Messages$Message"))


def java_encode(gateway, jmsg) -> str:
    return str(call_static(gateway, "seam.Messages", "encode", [MESSAGE], jmsg))


def java_value(gateway, spec: str, value):
    """``value`` as the Java record's constructor takes it (py4j converts numbers and strings itself)."""
    if spec in messages.SCHEMA:
        return java_message(gateway, value)
    if spec.startswith("list["):
        out = gateway.jvm.java.util.ArrayList()
        for v in value:
            out.add(java_value(gateway, spec[5:-1], v))
        return out
    if spec.startswith("dict[str,"):
        out = gateway.jvm.java.util.HashMap()
        for k, v in value.items():
            out.put(k, java_value(gateway, spec[9:-1], v))
        return out
    return value


def java_message(gateway, msg):
    """``msg`` built in Java, through its record's canonical constructor with the schema's field order."""
    fields = messages.SCHEMA[messages.KIND_OF[type(msg)]]
    args = [java_value(gateway, spec, getattr(msg, name)) for name, spec in fields.items()]
    return new_instance(gateway, f"seam.Messages${type(msg).__name__}", *args)


@pytest.mark.parametrize("kind", sorted(messages.SCHEMA))
def test_python_to_java_and_back(gateway, kind):
    msg = sample(kind)
    text = messages.encode(msg)
    back = java_encode(gateway, java_decode(gateway, text))
    assert json.loads(back) == json.loads(text)
    assert messages.decode(back) == msg


@pytest.mark.parametrize("kind", sorted(messages.SCHEMA))
def test_java_records_encode_every_field_as_python_decodes_it(gateway, kind):
    msg = sample(kind, seed=5)
    text = java_encode(gateway, java_message(gateway, msg))
    assert messages.decode(text) == msg


def test_java_has_a_record_for_every_type_and_no_other(gateway):
    base = shim_class(gateway, "seam.Messages$Message")
    records = [c.getSimpleName() for c in shim_class(gateway, "seam.Messages").getDeclaredClasses()
               if base.isAssignableFrom(c) and not c.equals(base)]
    assert sorted(records) == sorted(cls.__name__ for cls in messages.CLASSES.values())


def test_both_sides_read_the_shared_names_from_the_schema(gateway):
    names = shim_class(gateway, "seam.Names")
    assert {key: str(names.getField(key.upper()).get(None)) for key in messages.NAMES} == messages.NAMES
    assert (messages.JOB_PROPERTY, messages.POOL_PREFIX) == (messages.NAMES["job_property"], messages.NAMES["pool_prefix"])


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
        java_decode(gateway, json.dumps(obj))
    with pytest.raises(messages.MessageError):
        messages.decode(json.dumps(obj))
