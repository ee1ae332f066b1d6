"""How every command runs a verb (``sparkshim.commands.run_verb``): SIGTERM unwinds, bad input is one line."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import textwrap

from sparkshim.commands import add_lab_verbs, run_verb

# A verb that has "started something" (the finally stands for a cluster's or a Spark session's cleanup) and runs on.
LONG_VERB = textwrap.dedent("""
    import argparse, sys, time
    from sparkshim.commands import run_verb

    def verb(args):
        try:
            print("started", flush=True)
            time.sleep(600)
        finally:
            open(sys.argv[1], "w").write("cleaned up")
        return 0

    sys.exit(run_verb(argparse.Namespace(func=verb), "demo"))
""")


def test_sigterm_runs_the_verbs_own_cleanup_and_exits_143(tmp_path):
    marker = tmp_path / "cleanup"
    proc = subprocess.Popen([sys.executable, "-c", LONG_VERB, str(marker)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        proc.kill()
    assert marker.read_text() == "cleaned up"


def test_bad_input_is_one_error_line_and_exit_2(capsys):
    def verb(args: argparse.Namespace) -> int:
        raise ValueError("--scale must be > 0")

    assert run_verb(argparse.Namespace(func=verb), "riffle") == 2
    assert capsys.readouterr().err == "riffle: error: --scale must be > 0\n"


def test_the_previous_sigterm_handler_is_restored():
    before = signal.getsignal(signal.SIGTERM)
    assert run_verb(argparse.Namespace(func=lambda args: 0), "riffle") == 0
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_lab_verb_without_the_lab_has_help_and_says_where_it_lives(capsys):
    """A command no lab registers verbs for (an installed wheel's, for every command) still parses the lab's verbs."""
    parser = argparse.ArgumentParser(prog="nolab")
    add_lab_verbs(parser, parser.add_subparsers(dest="verb", required=True), "nolab")
    for argv in (["bench", "--help"], ["bench", "merge", "--help"]):
        try:
            code = run_verb(parser.parse_args(argv), "nolab")
        except SystemExit as exc:
            code = exc.code
        out = capsys.readouterr().out
        assert code == 0 and out.startswith("usage: nolab bench") and "part of the project's lab" in out, (argv, out)
    assert run_verb(parser.parse_args(["bench", "merge", "--inputs", "4"]), "nolab") == 2
    err = capsys.readouterr().err
    assert err.startswith("nolab: error: 'nolab bench' is part of the project's lab") and "scripts/setup.sh" in err
