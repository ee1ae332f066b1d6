"""The loss appender belongs to its SparkContext: real log4j2 with a user's own configuration file,
two SparkContexts one after the other in one fresh driver JVM (a child process, so the test session's
shared JVM and its log4j state are not involved)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.spark

CHILD = Path(__file__).with_name("loss_capture_lifecycle_child.py")

# The user's file: root at WARN into user.log; an explicit, additive breeze.optimize at WARN with its own
# file that only takes ERROR; breeze.optimize.OWLQN (L1 fits) explicitly at ERROR.
USER_LOG4J2 = """\
status = warn
appender.user.type = File
appender.user.name = user
appender.user.fileName = {out}/user.log
appender.user.layout.type = PatternLayout
appender.user.layout.pattern = %p %c %m%n
appender.breeze.type = File
appender.breeze.name = breezefile
appender.breeze.fileName = {out}/breeze.log
appender.breeze.layout.type = PatternLayout
appender.breeze.layout.pattern = %p %c %m%n
rootLogger.level = warn
rootLogger.appenderRef.user.ref = user
logger.breeze.name = breeze.optimize
logger.breeze.level = warn
logger.breeze.appenderRef.b.ref = breezefile
logger.breeze.appenderRef.b.level = error
logger.owlqn.name = breeze.optimize.OWLQN
logger.owlqn.level = error
"""


@pytest.fixture(scope="module")
def lifecycle(tmp_path_factory):
    out = tmp_path_factory.mktemp("capture-lifecycle")
    (out / "log4j2.properties").write_text(USER_LOG4J2.format(out=out))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
               PYSPARK_SUBMIT_ARGS=f"--driver-java-options -Dlog4j2.configurationFile={out / 'log4j2.properties'} pyspark-shell")
    proc = subprocess.run([sys.executable, str(CHILD), str(out)], env=env, capture_output=True, text=True, timeout=420)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"child failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def test_the_users_appenders_receive_exactly_what_they_did_before(lifecycle):
    before = lifecycle["probe_before"]
    expected = sorted(
        [f"user.log: {lv.upper()} breeze.optimize.{c} breeze.optimize.{c} {lv}" for c in ("LBFGS", "LBFGSB") for lv in ("warn", "error")]
        + ["user.log: ERROR breeze.optimize.OWLQN breeze.optimize.OWLQN error"]
        + [f"breeze.log: ERROR breeze.optimize.{c} breeze.optimize.{c} error" for c in ("LBFGS", "LBFGSB", "OWLQN")])
    assert before == expected
    for phase in ("probe_during", "probe_after_first", "probe_after_second"):
        assert lifecycle[phase] == before, phase
    assert lifecycle["below_warn"] == []  # no captured INFO iteration line leaked to the user's files


def test_capture_reroutes_breeze_loggers_while_a_context_runs(lifecycle):
    during = lifecycle["during"]["loggers"]
    for name in ("breeze.optimize", "breeze.optimize.OWLQN"):
        assert during[name]["identity"] != lifecycle["before"]["loggers"][name]["identity"]
        assert any(a.startswith("slaq-loss-capture-") for a in during[name]["appenders"])


def test_stop_restores_the_log4j_configuration_exactly(lifecycle):
    assert lifecycle["after_first"] == lifecycle["before"]
    assert lifecycle["after_second"] == lifecycle["before"]


@pytest.mark.parametrize("fit", ["first_l2", "first_l1", "second_l2", "second_l1"])
def test_every_context_captures_every_iteration(lifecycle, fit):
    run = lifecycle[fit]
    expected = run["objective_history"]
    assert len(expected) >= 4
    # breeze logs each iteration after the initial point, at 6 significant digits
    assert len(run["captured"]) == len(expected) - 1
    np.testing.assert_allclose(run["captured"], expected[1:], rtol=1e-5)
