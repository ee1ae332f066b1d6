"""Numbers and counts in messages read as a person writes them: a whole-number bound in full, and ``1 core`` (not
``1.04858e+06``, not ``1 cores``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from riffle.driver.cost import Decision, summary
from slaq.live.driver_share import driver_bound_warning
from sparkshim.conf import ConfigError, parse_seconds
from sparkshim.wording import counted, number_text


def test_numbers_in_full_and_without_float_noise():
    assert [number_text(v) for v in (1 << 20, 1 << 40, 0.5, 0.007 * 1000, 1e-6)] == ["1048576", "1099511627776", "0.5", "7", "1e-06"]


def test_a_count_of_one_is_singular():
    assert [counted(1, "core"), counted(2, "core"), counted(0.66, "core"), counted(1.0, "job")] == ["1 core", "2 cores", "0.66 cores", "1 job"]
    assert counted(0.999, "core", "1") == "1 core"  # as written


def test_the_mergers_range_check_writes_its_bound_in_full(tmp_path):
    merger = Path(sys.executable).parent / "riffle-merger"
    proc = subprocess.run([str(merger), "serve", "--local-dir", str(tmp_path), "--max-queue", "2000000"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--max-queue must be in 0..1048576, got 2000000" in proc.stderr, proc.stderr


def test_a_duration_bound_in_full():
    try:
        parse_seconds("spark.x", "9000000s", 0.001, 7 * 24 * 3600.0)
    except ConfigError as exc:
        assert "[1ms, 604800s]" in str(exc), exc
    else:
        raise AssertionError("accepted")


def test_the_driver_bound_warning_says_one_core():
    assert "capped at 1 core)" in driver_bound_warning({"lr": (0.78, 1.0)})
    assert "capped at 0.66 cores)" in driver_bound_warning({"lr": (0.78, 0.66)})


def test_one_group_worth_merging():
    assert summary([Decision(True, "worth it", 0.2, 0.1)]).startswith("1 group worth merging, 0 skipped")
