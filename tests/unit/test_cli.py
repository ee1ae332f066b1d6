import json
import subprocess
import sys

import pytest

from slaq.cli import main


def run(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("verb", [[], ["simulate"], ["bench"], ["bench", "allocate"], ["bench", "predict"],
                                  ["traces"], ["traces", "record"], ["traces", "list"], ["reproduce"]])
def test_help_on_every_verb(verb):
    out = subprocess.run([sys.executable, "-m", "slaq.cli", *verb, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "usage: slaq" in out.stdout


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


def test_bad_arguments_are_rejected(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--jobs", "0"])
    assert "must be > 0" in capsys.readouterr().err


@pytest.mark.parametrize("module, prog", [("slaq.cli", "slaq"), ("riffle.cli", "riffle"), ("riffle.merger.cli", "riffle-merger"),
                                          ("srlab.cluster.cli", "spark-cluster")])
def test_every_command_answers_version(module, prog):
    from riffle.version import package_version

    out = subprocess.run([sys.executable, "-c", f"import sys, {module} as m; sys.exit(m.main())", "--version"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.split() == [prog, package_version()], out.stdout + out.stderr


def test_bench_predict_compares_the_prior_with_todays_default_on_recorded_sparkml_fits(capsys):
    out = run(capsys, "bench", "predict")["before_first_loss"]
    today, folds = out["methods"]["today"], out["methods"]["other folds"]
    for n in ("0_observed", "1_observed", "3_observed"):
        assert folds["error_pct_of_span"][n] < today["error_pct_of_span"][n], n
    assert out["methods"]["estimator default"]["error_pct_of_span"]["3_observed"] == today["error_pct_of_span"]["3_observed"]
    assert folds["cost_per_iteration_error_pct"] < today["cost_per_iteration_error_pct"]
