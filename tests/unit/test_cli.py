import importlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from slaq.cli import main
from srsupport.cli_help import walk

REPO = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def console_scripts() -> dict[str, str]:
    """Every console script the checkout declares (the product's and the lab's), as ``module:function``."""
    scripts = {}
    for pyproject in (REPO / "pyproject.toml", REPO / "lab" / "pyproject.toml"):
        scripts |= tomllib.loads(pyproject.read_text())["project"]["scripts"]
    return scripts


@pytest.mark.parametrize("prog", sorted(console_scripts()))
def test_help_on_every_verb_of_every_console_script(prog):
    module, function = console_scripts()[prog].split(":")
    pages = walk(prog, getattr(importlib.import_module(module), function))
    assert len(pages) > 1  # the verbs were found
    for page in pages:
        assert page.code == 0 and page.out.startswith(f"usage: {' '.join(page.argv[:-1])}"), page


def run_console_script(prog: str, *args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess:
    """``prog args`` as its installed script runs it: the declared entry called with no arguments."""
    module, function = console_scripts()[prog].split(":")
    code = f"import sys; from {module} import {function}; sys.exit({function}())"
    return subprocess.run([sys.executable, "-c", code, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)


@pytest.mark.parametrize("argv", [*([prog, "--help"] for prog in sorted(console_scripts())),
                                  ["slaq", "simulate", "--jobs", "4", "--cores", "16"], ["slaq", "traces", "list"],
                                  ["riffle", "simulate", "--check"], ["slaq-riffle", "jar"]])
def test_a_closed_stdout_ends_every_command_quietly(argv):
    """``slaq simulate | head``: the reader is gone before the command writes (argparse's help ignores that itself)."""
    read, write = os.pipe()
    os.close(read)
    try:
        out = run_console_script(*argv, stdout=write)
    finally:
        os.close(write)
    # argparse's help swallows the failed write on newer 3.11 patch releases (exit 0) and not on older ones (141)
    assert (out.returncode in ((0, 141) if "--help" in argv else (141,)), out.stderr) == (True, ""), (out.returncode, out.stderr)


def test_simulate_writes_nothing_on_stderr():
    out = run_console_script("slaq", "simulate", "--jobs", "12", "--cores", "64", "--policy", "slaq", "--policy", "las")
    assert out.returncode == 0 and json.loads(out.stdout)["policies"] and out.stderr == ""


def test_bench_allocate_json(capsys):
    out = run(capsys, "bench", "allocate", "--jobs", "50", "--cores", "200", "--repeat", "3")
    assert out["median_ms"] > 0 and out["allocated_cores"] == 200


def test_bench_predict_json(capsys):
    out = run(capsys, "bench", "predict")
    fit, straw = out["methods"]["weighted-fit"], out["methods"]["strawman"]
    assert fit["overall"]["10_ahead"] < straw["overall"]["10_ahead"]
    for family, errors in fit["families"].items():
        assert errors["10_ahead"] < straw["families"][family]["10_ahead"], family


def test_simulate_json_and_plot(capsys, tmp_path):
    png = tmp_path / "fig7.png"
    out = run(capsys, "simulate", "--policy", "slaq", "--policy", "fair", "--jobs", "12", "--cores", "64",
              "--arrival-mean", "10", "--cost-scale", "40", "--plot", str(png))
    assert set(out["policies"]) == {"slaq", "fair"}
    for summary in out["policies"].values():
        assert {"mean_normalized_loss", "mean_time_to_90pct_s", "mean_time_to_95pct_s", "core_share_by_loss_group"} <= set(summary)
    assert "slaq_vs_fair" in out and out["workload"]["calibration"]["source"] == "given on the command line"
    assert png.stat().st_size > 10_000


def test_simulate_reports_changes_negative_for_less_time_as_projections_and_the_readme_do(capsys):
    out = run(capsys, "simulate", "--policy", "slaq", "--policy", "fair", "--jobs", "12", "--cores", "64", "--arrival-mean", "10", "--cost-scale", "40")
    change = out["slaq_vs_fair"]["time_to_90pct_change"]
    slaq, fair = (out["policies"][p]["mean_time_to_90pct_s"] for p in ("slaq", "fair"))
    assert change == pytest.approx(slaq / fair - 1, abs=1e-4) and not any("reduction" in k for k in out["slaq_vs_fair"])


def test_plot_without_the_lab_or_matplotlib_says_in_one_line_what_it_needs(capsys, monkeypatch):
    import slaq.cli
    import sparkshim.commands

    argv = ["simulate", "--jobs", "4", "--cores", "16", "--plot", "out.png"]
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # the lab installed, matplotlib not
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--plot needs matplotlib" in err and "lab[plot]" in err
    monkeypatch.setattr(sparkshim.commands.metadata, "entry_points", lambda **kw: [])  # an installed wheel: no lab
    assert slaq.cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--plot needs matplotlib and the project's lab" in err and "unrecognized" not in err


@pytest.mark.parametrize("argv, said", [(["--jobs", "0"], "argument --jobs: must be in 1..20000, got 0"),
                                         (["--jobs", "99999999"], "argument --jobs: must be in 1..20000"),
                                         (["--seed", "-1"], "argument --seed: must be in 0..4294967295, got -1"),
                                         (["--epoch", "1e9"], "argument --epoch: must be in 0.05..3600, got 1e9"),
                                         (["--cores", "nan"], "argument --cores: must be in 1..4096, got nan"),
                                         (["--reserve", "-1"], "argument --reserve: must be in 0..4096")])
def test_bad_arguments_are_one_line_naming_the_option(capsys, argv, said):
    with pytest.raises(SystemExit):
        main(["simulate", *argv])
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("module, prog", [("slaq.cli", "slaq"), ("riffle.cli", "riffle"), ("riffle.merger.cli", "riffle-merger"),
                                          ("srlab.cluster.cli", "spark-cluster")])
def test_every_command_answers_version(module, prog, capsys):
    """Each command's own ``main`` in this process (how its script starts is test_a_closed_stdout_ends_every_command_quietly's)."""
    from riffle.version import package_version

    with pytest.raises(SystemExit) as exit_:
        importlib.import_module(module).main(["--version"])
    out = capsys.readouterr()
    assert exit_.value.code in (0, None) and out.out.split() == [prog, package_version()], out.out + out.err
