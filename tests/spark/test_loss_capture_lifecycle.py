"""The loss appender belongs to its SparkContext: real log4j2 with a user's own configuration file,
two SparkContexts one after the other in one fresh driver JVM (a child process, so the test session's
shared JVM and its log4j state are not involved); and with Spark's log4j2 defaults, as ``python app.py``
runs, the console prints the same breeze lines with SLAQ on as with it off, and a user's DEBUG lines of
gradient-boosted trees the same too."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

CHILD = Path(__file__).with_name("loss_capture_lifecycle_child.py")
CONSOLE_CHILD = Path(__file__).with_name("console_lines_child.py")

# The user's file: root at WARN into user.log (so breeze.optimize.LBFGS and LBFGSB inherit WARN from root);
# breeze.optimize.OWLQN (L1 fits) explicitly at WARN, additive, with its own file that only takes ERROR.
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
logger.owlqn.name = breeze.optimize.OWLQN
logger.owlqn.level = warn
logger.owlqn.appenderRef.b.ref = breezefile
logger.owlqn.appenderRef.b.level = error
"""


class Child:
    """A child process started now whose result is read later: its stdout and stderr go to files (no pipe to fill
    while the test waits on something else)."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path):
        self.out, self.err = cwd / "child.out", cwd / "child.err"
        with self.out.open("w") as stdout, self.err.open("w") as stderr:
            self.proc = subprocess.Popen([sys.executable, *args], env=env, cwd=cwd, stdout=stdout, stderr=stderr, text=True)

    def result(self, timeout: float) -> tuple[dict, str]:
        """The JSON object the child printed last, and its stderr, once it exited 0."""
        try:
            code = self.proc.wait(timeout)
        finally:
            self.stop()
        out, err = self.out.read_text(), self.err.read_text()
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        assert code == 0 and lines, f"child failed ({code}):\n{out[-3000:]}\n{err[-6000:]}"
        return json.loads(lines[-1][len("RESULT "):]), err

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def console_child(tmp_path_factory):
    """``python app.py`` with Spark's log4j2 defaults (no file of the user's, no spark-submit arguments), started as
    soon as a test of this module needs either child: the two children run side by side (each is one driver JVM)."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    child = Child([str(CONSOLE_CHILD)], env, tmp_path_factory.mktemp("console"))
    yield child
    child.stop()


@pytest.fixture(scope="module")
def lifecycle(tmp_path_factory, console_child):
    out = tmp_path_factory.mktemp("capture-lifecycle")
    (out / "log4j2.properties").write_text(USER_LOG4J2.format(out=out))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
               PYSPARK_SUBMIT_ARGS=f"--driver-java-options -Dlog4j2.configurationFile={out / 'log4j2.properties'} pyspark-shell")
    return Child([str(CHILD), str(out)], env, out).result(420)[0]


def _lines(file: str, levels_by_logger: dict[str, tuple[str, ...]]) -> list[str]:
    return [f"{file}: {lv.upper()} {name} {name} {lv}" for name, levels in levels_by_logger.items() for lv in levels]


def test_the_users_appenders_receive_exactly_what_they_did_before(lifecycle):
    both = ("warn", "error")
    expected = sorted(_lines("user.log", {f"breeze.optimize.{c}": both for c in ("LBFGS", "LBFGSB", "OWLQN")})
                      + _lines("breeze.log", {"breeze.optimize.OWLQN": ("error",)}))
    assert lifecycle["probe_before"] == expected
    for phase in ("probe_during_first", "probe_during_second", "probe_after_first", "probe_after_second"):
        assert lifecycle[phase] == expected, phase
    assert lifecycle["below_warn"] == []  # no captured INFO iteration line leaked to the user's files


def test_a_root_level_change_during_capture_applies_as_it_would_without(lifecycle):
    """setLogLevel("ERROR") while capturing: the user's appenders follow the new root level live."""
    expected = sorted(_lines("user.log", {"breeze.optimize.LBFGS": ("error",), "breeze.optimize.LBFGSB": ("error",),
                                          "breeze.optimize.OWLQN": ("warn", "error")})
                      + _lines("breeze.log", {"breeze.optimize.OWLQN": ("error",)}))
    assert lifecycle["probe_before_root_error"] == expected
    assert lifecycle["probe_during_root_error_first"] == expected
    assert lifecycle["probe_during_root_error_second"] == expected


def test_each_context_routes_breeze_to_its_own_appender_while_it_runs(lifecycle):
    """Capture is one configuration-wide filter naming the context's appender; no logger config changes."""
    before = lifecycle["before"]
    assert "breeze.optimize" not in before["loggers"] and before["filter"] is None
    for phase, appender in (("during_first", "slaq-loss-capture-1"), ("during_second", "slaq-loss-capture-2")):
        during = lifecycle[phase]
        assert during["loggers"] == before["loggers"] and during["levels"] == before["levels"], phase
        assert during["filter"] == f"slaq-loss-route[{appender}]", phase


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


BREEZE_CONSOLE_LINE = re.compile(r" (LBFGS|OWLQN|LBFGSB): ")


@pytest.fixture(scope="module")
def console(console_child):
    """The console child's result and its stderr (the console's stream)."""
    return console_child.result(300)


def _phase_text(stderr: str, phase: str) -> str:
    return stderr.split(f"CONSOLE-PHASE {phase} start", 1)[1].split(f"CONSOLE-PHASE {phase} end", 1)[0]


def _breeze_console_lines(stderr: str, phase: str) -> list[str]:
    return [line for line in _phase_text(stderr, phase).splitlines() if BREEZE_CONSOLE_LINE.search(line)]


def test_the_console_shows_the_same_breeze_lines_with_slaq_on_as_off(console):
    """Spark's WARN console (a shell filter that lets INFO through only for loggers with a config of their own)
    prints no breeze iteration line with SLAQ off; capturing every iteration must not make it print them."""
    result, stderr = console
    assert result["on"]["slaq"] and not result["off"]["slaq"]
    on, off = _breeze_console_lines(stderr, "on"), _breeze_console_lines(stderr, "off")
    assert len(on) == len(off), on[:5]
    expected = result["on"]["objective_history"]
    assert len(result["on"]["captured"]) == len(expected) - 1 >= 3
    np.testing.assert_allclose(result["on"]["captured"], expected[1:], rtol=1e-5)


def test_a_users_debug_logging_of_gbt_prints_the_same_lines_and_models_with_slaq_on_as_off(console):
    """SLAQ does not capture gradient-boosted trees' per-tree error (a DEBUG line): where the user's logging shows DEBUG
    for its logger, the console prints the same 5 lines with SLAQ on as off, none is captured, and the model is the same."""
    result, stderr = console
    on, off = result["on"]["gbt"], result["off"]["gbt"]
    lines = {phase: [line for line in _phase_text(stderr, f"{phase}-gbt").splitlines() if "error of gbt" in line] for phase in ("on", "off")}
    assert len(lines["on"]) == len(lines["off"]) == 5, lines
    assert on["captured"] == off["captured"] == []
    assert (on["predictions"], on["trees"], on["tree_weights"]) == (off["predictions"], off["trees"], off["tree_weights"])
