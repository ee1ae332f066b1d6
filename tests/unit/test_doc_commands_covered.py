"""Every command in README.md, docs/ and the examples' docstrings is run by tests/spark/test_doc_commands.py,
exactly as written, or has a stated reason not to be; and every command a scenario runs is still documented."""

from __future__ import annotations

from srsupport.doc_commands import documented_commands
from tests.doc_scenarios import SCENARIOS, not_run_reason


def test_every_documented_command_is_run_or_has_a_reason():
    run = {step for steps in SCENARIOS.values() for step in steps}
    unaccounted = [(d.source, d.command) for d in documented_commands() if (d.source, d.command) not in run
                   and not_run_reason(d.command) is None]
    assert unaccounted == [], "documented commands no test runs (add them to a scenario in tests/doc_scenarios.py):\n" + \
        "\n".join(f"  {s}: {c}" for s, c in unaccounted)


def test_every_command_a_scenario_runs_is_documented_as_written():
    documented = {(d.source, d.command) for d in documented_commands()}
    stale = [step for steps in SCENARIOS.values() for step in steps if step not in documented]
    assert stale == [], stale
