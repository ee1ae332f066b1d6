"""``dir()`` of each product package lists its API (a notebook's tab completion reads it), though the API is
imported on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("package", ["slaq", "riffle"])
def test_dir_lists_the_api_before_it_is_imported(package):
    code = f"import {package}, json; print(json.dumps([dir({package}), {package}.__all__]))"
    listed, api = __import__("json").loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                          check=True).stdout)
    assert set(api) <= set(listed), sorted(set(api) - set(listed))
    assert "__doc__" in listed  # the module's own names stay


def test_dir_of_slaq_is_its_api_and_not_its_imports():
    code = "import slaq, json; print(json.dumps(dir(slaq)))"
    listed = __import__("json").loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert [n for n in listed if not n.startswith("__")] == sorted(__import__("slaq").__all__), listed
