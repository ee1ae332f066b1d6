"""``/slaq/json/`` right after the tab attaches (issue #48, 8): Spark's ``WebUI.attachPage`` attaches a page's handler
(``/slaq``) before its JSON's (``/slaq/json``), so in between the page answered the JSON's URL with its HTML and a 200.
A real driver with its UI on (tests/spark/json_attach_child.py) polls from before the attach; every 200 is JSON, and in
that window the page refuses the JSON's URL instead of answering it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures import ends

CHILD = Path(__file__).with_name("json_attach_child.py")


def test_the_json_url_never_answers_200_with_the_pages_html(tmp_path):
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, str(CHILD)], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, ends(run.stderr)
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert any(code == 200 for code, _ in seen["polled"])
    assert all(first == "{" for code, first in seen["polled"] if code == 200), seen["polled"]
    code, body = seen["window"]
    assert code != 200 and "<html" not in body.lower(), seen["window"]
