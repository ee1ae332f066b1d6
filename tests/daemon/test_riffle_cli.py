import argparse
import importlib
import json
import subprocess
import sys

import pytest

from riffle.units import parse_size


@pytest.mark.parametrize("argv", [["riffle.cli", "--help"], ["riffle.cli", "bench", "--help"], ["riffle.cli", "bench", "merge", "--help"],
                                  ["riffle.cli", "bench", "load", "--help"], ["riffle.cli", "status", "--help"], ["riffle.merger.cli", "--help"],
                                  ["riffle.merger.cli", "serve", "--help"]])
def test_help_on_every_verb(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        importlib.import_module(argv[0]).main(argv[1:])
    assert exit_.value.code == 0 and "usage:" in capsys.readouterr().out


def test_sizes():
    assert parse_size("4m") == 4 << 20 and parse_size("2g") == 2 << 30 and parse_size("512k") == 512 << 10
    assert parse_size("1000") == 1000 and parse_size("2.5t") == int(2.5 * (1 << 40))
    for bad in ("-1m", "lots", "3x", "0"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_size(bad)


def test_serve_rejects_missing_local_dir(tmp_path):
    out = subprocess.run([sys.executable, "-m", "riffle.merger.cli", "serve", "--local-dir", str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "does not exist" in out.stderr


def riffle_json(capsys, *argv: str) -> dict:
    """``riffle argv`` run by the CLI's own ``main`` in this process (the benches start their merger daemons as processes
    themselves): its JSON report."""
    from riffle.cli import main

    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_bench_load_small_keeps_memory_bounded(tmp_path, capsys):
    report = riffle_json(capsys, "bench", "load", "--requests", "12", "--memory", "64m", "--fan-in", "4", "--partitions", "50",
                    "--dir", str(tmp_path))
    assert report["failed"] == 0 and report["completed"] == 12 and report["requests_queued"] > 0
    assert report["peak_buffer_reserved_mb"] <= 64 and report["refused"] == 0


def test_bench_merge_small_reports_ratio(tmp_path, capsys):
    report = riffle_json(capsys, "bench", "merge", "--inputs", "4", "--partitions", "50", "--block-kb", "16", "--repeat", "1",
                    "--dir", str(tmp_path))
    assert report["bytes"] == 4 * 50 * 16 * 1024 and report["ratio"] > 0 and report["MB_per_s"] > 0


def test_bench_load_bounded_queue_refuses_excess_and_status_answers(tmp_path, capsys):
    report = riffle_json(capsys, "bench", "load", "--requests", "16", "--memory", "64m", "--fan-in", "4", "--partitions", "50",
                    "--max-queue", "2", "--dir", str(tmp_path))
    assert report["failed"] == 0 and report["refused"] > 0 and report["completed"] + report["refused"] == 16
    assert report["max_queue"] == 2 and report["status_ms_max"] < 1000


def test_status_wait_answers_once_a_merger_just_started_serves(tmp_path):
    """What a script that starts a merger in the background runs before using it (docs/install.md)."""
    from srsupport.daemons import DaemonProcess, free_port

    port = free_port()
    waiting = subprocess.Popen([sys.executable, "-m", "riffle.cli", "status", f"127.0.0.1:{port}", "--wait", "60", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    merger = DaemonProcess([tmp_path], port=port)
    try:
        out, err = waiting.communicate(timeout=90)
        assert waiting.returncode == 0, err
        assert json.loads(out)[0]["health"] == "SERVING"
    finally:
        merger.stop()
    gone = subprocess.run([sys.executable, "-m", "riffle.cli", "status", f"127.0.0.1:{port}", "--wait", "0.5"],
                          capture_output=True, text=True, timeout=60)
    assert gone.returncode == 1 and "DOWN" in gone.stdout
