"""A trace is untrusted input: ``slaq simulate --check/--project`` refuses, in one line naming the file, the field (and
the job) and the bound, whatever would not replay in bounded memory and time, or would replay values SLAQ refuses."""

from __future__ import annotations

import gzip
import json
import tracemalloc

import pytest

from slaq.cli import main
from slaq.sim import trace, trace_json

LOSSES = [1.0, 0.5, 0.1]


def document(**change: object) -> dict:
    """A valid two-job trace with a stock run to compare with."""
    jobs = [{"name": name, "arrival_s": arrival, "losses": list(LOSSES), "phases": [{"driver_s": 0.1, "stages": [[2, 1.0]]} for _ in LOSSES]}
            for name, arrival in (("a", 0.0), ("b", 1.0))]
    doc = {"format": trace.FORMAT, "setting": {"executor_cores": 2, "epoch_s": 1.0, "arrival_mean_s": 1.0},
           "measured": {"stock": [{"mean_time_to_90pct_s": 3.0, "makespan_s": 9.0}]}, "jobs": jobs}
    doc.update(change)
    return doc


def with_job(field: str, value: object, phase: int | None = None) -> dict:
    doc = document()
    target = doc["jobs"][0] if phase is None else doc["jobs"][0]["phases"][phase]
    target[field] = value
    return doc


def refused(capsys, path, *extra: str) -> str:
    """The one line ``slaq simulate --check PATH`` ends with (exit 2, no traceback, nothing on stdout)."""
    assert main(["simulate", "--check", str(path), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("slaq: error: ") and "Traceback" not in err, err
    return err


def written(tmp_path, doc: object, name: str = "t.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))  # json writes NaN and Infinity as the tokens it also reads
    return str(path)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("doc, says", [
    (with_job("arrival_s", float("nan")), "job 'a' arrival_s must be finite, got nan"),
    (with_job("arrival_s", -1e9), r"job 'a' arrival_s must be in [0, 86400], got -1e+09"),
    (with_job("driver_s", float("nan"), 1), "job 'a' phases[1].driver_s must be finite, got nan"),
    (with_job("driver_s", 1e9, 1), "job 'a' phases[1].driver_s must be in [0, 86400], got 1e+09"),
    (with_job("latency_s", float("inf"), 1), "job 'a' phases[1].latency_s must be finite, got inf"),
    (with_job("stages", [[2, float("nan")]], 1), "job 'a' phases[1].stages[0] seconds must be finite, got nan"),
    (with_job("stages", [[10**12, 1.0]], 1), "job 'a' phases[1].stages[0] tasks must be in [1, 100000], got 1e+12"),
    (with_job("losses", [1.0, float("nan"), 0.1]), "job 'a' losses[1] must be finite, got nan"),
    (with_job("losses", [1.0]), "job 'a' needs one phase per loss and two losses or more, or no loss and one phase"),
    (with_job("losses", []), "(a job that reported none), got 3 phases and 0 losses"),
    (with_job("weight", 0), "job 'a' weight must be > 0, got 0.0"),
    (with_job("weight", -1), "job 'a' weight must be > 0, got -1.0"),
    (with_job("weight", float("nan")), "job 'a' weight must be finite, got nan"),
    (with_job("name", "a\nb"), "jobs[0].name: a SLAQ job name may not contain tabs or newlines"),
    (document(setting={"executor_cores": 2, "epoch_s": float("nan")}), "setting.epoch_s must be finite, got nan"),
    (document(setting={"executor_cores": 2, "epoch_s": 1e-9}), "setting.epoch_s must be in [0.05, 3600], got 1e-09"),
    (document(setting={"executor_cores": 2, "epoch_s": 1.0, "arrival_mean_s": float("nan")}), "setting.arrival_mean_s must be finite"),
    (document(measured={"stock": [{"mean_time_to_90pct_s": 3.0}]}), "measured['stock'][0].makespan_s must be a real number, got NoneType"),
    (document(measured={"stock": "fast"}), "measured['stock'] must be a JSON array, got str"),
    (document(measured={"stock": 3}), "measured['stock'] must be a JSON array, got int"),
    (document(measured={}), "no measured runs of slaq, fair, order, stock to check the replay against (measured: none)"),
    (document(measured={"turbo": [{"mean_time_to_90pct_s": 3.0, "makespan_s": 9.0}]}), "(measured: 'turbo')"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_value_out_of_its_bounds_is_one_line_naming_the_file_the_job_the_field_and_the_bound(tmp_path, capsys, doc, says):
    path = written(tmp_path, doc)
    err = refused(capsys, path)
    assert f"slaq: error: {path}: " in err and says in err


@pytest.mark.timeout(60)
def test_the_replay_bounds_hold_for_the_whole_workload(tmp_path, capsys):
    doc = document(jobs=[{"name": f"j{k}", "arrival_s": 0.0, "losses": [1.0, 0.0], "phases": [{"driver_s": 0.0}, {"driver_s": 0.0}]}
                         for k in range(trace.MAX_JOBS + 1)])
    assert "jobs must hold 1 to 20000 entries, got 20001" in refused(capsys, written(tmp_path, doc))
    long = with_job("phases", [{"driver_s": 3600.0}] * 3)  # 3 hours of driver time in epochs of 0.05 s: 216,000 epochs are fine ...
    long["setting"]["epoch_s"] = 0.05
    trace.from_dict(long)
    long["jobs"][1]["phases"] = [{"driver_s": 86_400.0}] * 3  # ... 3 days are not
    assert "more than a replay runs (1000000 epochs)" in refused(capsys, written(tmp_path, long))


def test_json_nested_deeper_than_a_trace_is_refused_before_parsing(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert "JSON nested 100000 deep, more than a trace may be (32)" in refused(capsys, path)
    path.write_text(json.dumps(document(setting={"executor_cores": 2, "epoch_s": 1.0, "note": "[[[[" * 100})))
    assert trace.load(path).cores == 2  # brackets inside a string nest nothing


def test_a_file_or_its_decompressed_json_larger_than_a_trace_is_refused_in_bounded_memory(tmp_path, capsys):
    big = tmp_path / "big.json"
    big.write_text(json.dumps(document(note=" " * trace_json.MAX_FILE_BYTES)))
    assert "more than a trace may be (8388608 bytes)" in refused(capsys, big)
    bomb = tmp_path / "bomb.json.gz"  # 40 MiB of JSON in 40 KB
    bomb.write_bytes(gzip.compress(json.dumps(document(note=" " * 40 * 2**20)).encode(), compresslevel=9))
    assert bomb.stat().st_size < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(trace.TraceError, match=r"decompresses to more than a trace may be \(8388608 bytes of JSON\)"):
            trace.load(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * trace_json.MAX_FILE_BYTES
    refused(capsys, bomb)


def test_a_check_that_compared_nothing_fails(tmp_path, capsys):
    # a trace with runs of a configuration the check knows passes; one with none does not pass by comparing nothing
    assert main(["simulate", "--check", written(tmp_path, document(measured={"stock": [{"mean_time_to_90pct_s": 3.4, "makespan_s": 9.0}]}))]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["check"]["configs"]
    assert "no measured runs" in refused(capsys, written(tmp_path, document(measured={"fast": []})))


def test_project_cores_are_ranged_and_a_projection_too_large_is_refused_before_any_replay(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--project", "--project-cores", "1000000000"])
    assert exit_.value.code == 2 and "core counts must be 1 to 4096" in capsys.readouterr().err
    ten = document(jobs=[{"name": f"j{k}", "arrival_s": float(k), "losses": [1.0, 0.0], "phases": [{"driver_s": 0.1}, {"driver_s": 0.1}]}
                         for k in range(10)])
    path = written(tmp_path, ten)
    assert main(["simulate", "--project", path, "--project-cores", "4,4096"]) == 2  # 10 jobs on 2 cores: 20,480 on 4,096
    out, err = capsys.readouterr()
    assert out == "" and err == f"slaq: error: {path} at 4096 cores: 20480 jobs, more than a replay runs (20000)\n"  # nothing replayed first
