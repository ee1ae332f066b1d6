"""Each product's typed message module is what its schema generates now, and the floor names no product."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from riffle import messages as riffle_messages
from slaq import messages as slaq_messages
from sparkshim import messages_build

SPARKSHIM = Path(messages_build.__file__).parent


def test_the_generated_message_modules_are_current():
    assert [p.parent.name for p in messages_build.schemas()] == ["riffle", "slaq"]
    assert messages_build.stale() == [], "run python -m sparkshim.messages_build"


def test_generated_messages_are_typed_dataclasses_in_schema_order():
    for module in (slaq_messages, riffle_messages):
        for kind, cls in module.CLASSES.items():
            fields = dataclasses.fields(cls)
            assert [f.name for f in fields] == list(module.SCHEMA[kind]) and all(f.type != "Any" for f in fields)
    assert dataclasses.fields(riffle_messages.MapOutput)[4].type == "int"  # map_id: a long on the JVM side
    assert dataclasses.fields(slaq_messages.EpochStatus)[4].type == "Sequence[JobStatus]"


def test_the_floor_imports_no_product():
    for source in sorted(SPARKSHIM.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n.split(".")[0] in ("slaq", "riffle")], f"{source.name} imports {names}"
