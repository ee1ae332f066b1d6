"""The build's PEP 517 backend: setuptools' own, plus pyspark among a wheel's build requirements.

A wheel carries the shim jar, which setup.py compiles against pyspark's jars, so ``pip wheel .`` and
``python -m build`` get pyspark in their isolated build environment (with a JDK 17 on the host). Editable
installs and sdists compile nothing, so they do not ask for pyspark (a merger-only checkout never downloads
it). The requirement is pyproject.toml's own pyspark dependency, the supported Spark line's one definition.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 (every hook as setuptools has it, but the one below)

HERE = Path(__file__).resolve().parent


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return [*build_meta.get_requires_for_build_wheel(config_settings), spark_requirement()]


def spark_requirement() -> str:
    """``pyspark`` with the specifier pyproject.toml's dependencies give it (``pyspark>=4.0,<4.4``)."""
    specifier = source_module("sparkshim/spark_line.py").supported_spark(HERE / "sparkshim")
    if not specifier:
        raise RuntimeError(f"no pyspark requirement in {HERE / 'pyproject.toml'}")
    return "pyspark" + specifier


def source_module(relative: str) -> ModuleType:
    """A module of this source tree loaded from its file: an installed slaq-riffle's start-up hook
    may already have imported ``sparkshim`` from site-packages (or another checkout)."""
    spec = importlib.util.spec_from_file_location(f"_build_{Path(relative).stem}", HERE / relative)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is being made
    spec.loader.exec_module(module)
    return module
