"""Before a product attaches (no driver JVM to forward to), SLAQ's and Riffle's lines are where Python's last resort
would put them, with their time and level: a WARN on stderr, never on stdout, and not at all when a handler of the
user's shows it (so never twice). Each case is a fresh interpreter: logging's configuration is per process."""

from __future__ import annotations

import re
import subprocess
import sys

TIMED = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} WARNING riffle.driver: merger down$"


def run(code: str) -> subprocess.CompletedProcess[str]:
    prelude = "import logging, sparkshim\nlog = logging.getLogger('riffle.driver')\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=60, check=True)


def test_a_warn_goes_to_stderr_with_time_and_level_and_an_info_nowhere():
    proc = run("log.warning('merger down')\nlog.info('merged')\n")
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and re.match(TIMED, proc.stderr), proc.stderr


def test_a_users_root_handler_shows_the_line_once_and_the_fallback_stays_silent():
    proc = run("logging.basicConfig(format='USER %(levelname)s %(name)s %(message)s')\nlog.warning('merger down')\n")
    assert proc.stdout == "" and proc.stderr == "USER WARNING riffle.driver merger down\n", proc.stderr


def test_a_logger_that_does_not_propagate_still_gets_the_fallback():
    proc = run("logging.basicConfig(format='USER %(message)s')\nlogging.getLogger('riffle').propagate = False\n"
               "log.warning('merger down')\n")
    assert re.match(TIMED, proc.stderr) and "USER" not in proc.stderr, proc.stderr
