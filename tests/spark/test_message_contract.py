"""Contract test: every message type of each product's schema (slaq/messages.json, riffle/messages.json)
round-trips Python -> Java -> Python and Java -> Python unchanged, the Java side refuses messages that drift
from the schema, and both sides read each schema's shared names alike. Only the floor's codec
(``Messages.encode`` and ``decode``) is called: the test builds the Java records through their constructors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError

from riffle import messages as riffle_messages
from slaq import messages as slaq_messages
from sparkshim import messages
from sparkshim.bridge import call_static, new_instance, shim_class

# each product's generated module and the Java class holding its records (io.slaqriffle.<product>.<Title>Messages)
PRODUCTS = {"slaq": (slaq_messages, "slaq.SlaqMessages", "slaq.SlaqNames"),
            "riffle": (riffle_messages, "riffle.RiffleMessages", "riffle.RiffleNames")}
CLASSES = {kind: cls for module, _, _ in PRODUCTS.values() for kind, cls in module.CLASSES.items()}
SCHEMA = {kind: cls.FIELDS for kind, cls in CLASSES.items()}
RECORDS = {kind: holder for module, holder, _ in PRODUCTS.values() for kind in module.CLASSES}


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
    fields = SCHEMA[kind]
    return CLASSES[kind](**{name: sample_value(spec, seed + i) for i, (name, spec) in enumerate(fields.items())})


MESSAGE = "io.slaqriffle.seam.Messages$Message"


def record_class(gateway, kind: str):
    return shim_class(gateway, f"{RECORDS[kind]}${CLASSES[kind].__name__}")


def java_decode(gateway, text: str, kind: str):
    """The shim's ``Messages.decode(text, <kind's record>.class)``: strict about the type and every field."""
    return call_static(gateway, "seam.Messages", "decode", ["java.lang.String", "java.lang.Class"], text, record_class(gateway, kind))


def java_encode(gateway, jmsg) -> str:
    return str(call_static(gateway, "seam.Messages", "encode", [MESSAGE], jmsg))


def java_value(gateway, spec: str, value):
    """``value`` as the Java record's constructor takes it (py4j converts numbers and strings itself)."""
    if spec in SCHEMA:
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
    args = [java_value(gateway, spec, getattr(msg, name)) for name, spec in msg.FIELDS.items()]
    return new_instance(gateway, f"{RECORDS[msg.KIND]}${type(msg).__name__}", *args)


@pytest.mark.parametrize("kind", sorted(SCHEMA))
def test_python_to_java_and_back(gateway, kind):
    msg = sample(kind)
    text = messages.encode(msg)
    back = java_encode(gateway, java_decode(gateway, text, kind))
    assert json.loads(back) == json.loads(text)
    assert messages.decode(back) == msg


@pytest.mark.parametrize("kind", sorted(SCHEMA))
def test_java_records_encode_every_field_as_python_decodes_it(gateway, kind):
    msg = sample(kind, seed=5)
    text = java_encode(gateway, java_message(gateway, msg))
    assert messages.decode(text) == msg


@pytest.mark.parametrize("product", sorted(PRODUCTS))
def test_java_has_a_record_for_every_type_and_no_other(gateway, product):
    module, holder, _ = PRODUCTS[product]
    base = shim_class(gateway, "seam.Messages$Message")
    records = [c.getSimpleName() for c in shim_class(gateway, holder).getDeclaredClasses() if base.isAssignableFrom(c) and not c.equals(base)]
    assert sorted(records) == sorted(cls.__name__ for cls in module.CLASSES.values())


@pytest.mark.parametrize("product", sorted(PRODUCTS))
def test_both_sides_read_the_shared_names_from_the_schema(gateway, product):
    module, _, names_class = PRODUCTS[product]
    schema = json.loads((Path(module.__file__).with_name("messages.json")).read_text())["names"]
    names = shim_class(gateway, names_class)

    def java(key: str):
        value = names.getField(key.upper()).get(None)
        return value if isinstance(value, int) else str(value) if isinstance(value, str) else [str(v) for v in value]

    assert {key: java(key) for key in schema} == schema
    assert {key: getattr(module, key.upper()) for key in schema} == {k: tuple(v) if isinstance(v, list) else v for k, v in schema.items()}


@pytest.mark.parametrize("mutate", ["extra", "missing", "wrong_type", "unknown_type"])
def test_java_refuses_drifted_messages(gateway, mutate):
    obj = json.loads(messages.encode(riffle_messages.MapOutput(1, 2, 0, 3, 4, "e", "h", 5)))
    if mutate == "extra":
        obj["surprise"] = 1
    elif mutate == "missing":
        del obj["map_id"]
    elif mutate == "wrong_type":
        obj["map_index"] = "three"
    else:
        obj["type"] = "map_outptu"
    with pytest.raises(Py4JJavaError, match="bad MapOutput message"):
        java_decode(gateway, json.dumps(obj), "map_output")
    with pytest.raises(messages.MessageError):
        messages.decode(json.dumps(obj))
