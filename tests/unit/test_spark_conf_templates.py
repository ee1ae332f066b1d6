"""The templates in spark-conf/ say only what the packages accept: every ``spark.slaq.*``/``spark.riffle.*``
key, set or shown as a commented example, is one the config classes read, with a value their parser takes.

The known keys and the parsing are the packages' own (``keys_read``/``from_conf``/``unknown_keys``). Templates
compose by concatenation, so a key two templates set has the same value in both.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from riffle.driver.config import PREFIX as RIFFLE
from riffle.driver.config import RiffleConfig
from slaq.live.config import PREFIX as SLAQ
from slaq.live.config import SlaqConfig
from sparkshim.conf import keys_read, unknown_keys

TEMPLATES = sorted((Path(__file__).resolve().parents[2] / "spark-conf").glob("*.properties"))
CONFIGS: dict[str, Callable[[Callable[[str], Any]], object]] = {SLAQ: SlaqConfig.from_conf, RIFFLE: RiffleConfig.from_conf}
_ENTRY = re.compile(r"^([^\s=:]+)[\s=:]+(.*)$")  # java.util.Properties' "key value" / "key=value" (no continuations here)
_EXAMPLE = re.compile(r"^#\s*(spark\.(?:slaq|riffle)\.\S+)\s+(\S.*)$")


def entries(path: Path) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The keys a template sets, and its commented-out examples of ``spark.slaq.*``/``spark.riffle.*`` keys."""
    conf: dict[str, str] = {}
    examples = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith(("#", "!")):
            if m := _EXAMPLE.match(line):
                examples.append((m.group(1), m.group(2).strip()))
        elif line:
            m = _ENTRY.match(line)
            assert m, f"{path.name}: not a properties line: {line!r}"
            assert m.group(1) not in conf, f"{path.name}: {m.group(1)} set twice"
            assert not re.search(r"\s#", m.group(2)), f"{path.name}: {line!r}: a properties value runs to the end of the line, comments too"
            conf[m.group(1)] = m.group(2).strip()
    return conf, examples


def check(conf: dict[str, str], token_file: Path) -> None:
    """Parse ``conf`` with each package's own parser; absolute paths name files on the user's machines, so a
    stand-in file takes their place (the parser reads the token file)."""
    stand_in = {k: str(token_file) if v.startswith("/") else v for k, v in conf.items()}
    for prefix, from_conf in CONFIGS.items():
        assert unknown_keys(stand_in.items(), prefix, keys_read(from_conf)) == []
        from_conf(stand_in.get)


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_every_key_is_known_and_every_value_parses(template, tmp_path):
    token = tmp_path / "token"
    token.write_text("secret")
    conf, examples = entries(template)
    assert any(k.startswith(("spark.slaq.", "spark.riffle.", "spark.plugins", "spark.pyspark.")) for k in conf), template.name
    check(conf, token)
    for key, value in examples:
        check({**conf, key: value}, token)


def test_templates_compose_a_key_set_twice_has_one_value():
    seen: dict[str, tuple[str, str]] = {}
    for template in TEMPLATES:
        for key, value in entries(template)[0].items():
            first = seen.setdefault(key, (template.name, value))
            assert first[1] == value, f"{key}: {first[0]} sets {first[1]!r}, {template.name} sets {value!r}"


def test_a_template_that_switches_a_package_on_is_what_its_parser_accepts():
    enabled = {t.name: entries(t)[0] for t in TEMPLATES}
    assert SlaqConfig.from_conf(enabled["slaq.properties"].get).enabled
    assert RiffleConfig.from_conf(enabled["riffle.properties"].get).mergers == ("127.0.0.1:7338",)


def test_slaq_riffle_conf_prints_each_template_and_its_file(capsys):
    """What a user with the wheel only passes to --properties-file (the wheel test checks the installed copy)."""
    from sparkshim import cli

    for path in TEMPLATES:
        assert cli.main(["conf", "--path", path.stem]) == 0 and capsys.readouterr().out == f"{path}\n"
    assert cli.main(["conf", "slaq", "riffle-cluster"]) == 0
    assert capsys.readouterr().out == "".join((TEMPLATES[0].parent / f"{n}.properties").read_text() for n in ("slaq", "riffle-cluster"))
    assert cli.main(["conf"]) == 0 and capsys.readouterr().out.split(": ")[1].split() == sorted(p.stem for p in TEMPLATES)
    assert cli.main(["conf", "slaq.conf"]) == 2 and "no conf template 'slaq.conf' (known: kubernetes," in capsys.readouterr().err
