"""`slaq reproduce` at reduced size: every figure writes a non-trivial PNG and the JSON behind it."""

import json

import pytest

from slaq.cli import main

pytestmark = pytest.mark.slow  # paper-figure experiments at reduced size, with plots: about half a minute


@pytest.mark.parametrize("figure", ["fig5", "fig6", "fig7", "fig8", "fig9", "fig10c"])
def test_reproduce_figure_small(figure, tmp_path, capsys):
    assert main(["reproduce", figure, "--small", "--out", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["figures"][figure]["seconds"] >= 0
    assert (tmp_path / f"{figure}.png").stat().st_size > 10_000
    data = json.loads((tmp_path / f"{figure}.json").read_text())
    if figure == "fig6":
        assert data["methods"]["weighted-fit"]["overall"]["10_ahead"] < data["methods"]["strawman"]["overall"]["10_ahead"]
    if figure == "fig7":
        assert data["slaq_vs_fair"]["time_to_90pct_change"] < 0
    if figure == "fig8":
        assert data["overall"]["slaq"]["high_25pct"] > data["overall"]["fair"]["high_25pct"]
    if figure == "fig9":
        assert len(data["arrival_mean_s"]) == 2
    if figure == "fig10c":
        assert all(ms > 0 for ms in data["median_ms"].values())
    if figure == "fig5":
        assert all(series[0] >= series[-1] for series in data["normalized_delta_loss"].values())  # diminishing returns


def test_reproduce_needs_a_figure(capsys):
    assert main(["reproduce"]) == 2
    assert "name a figure or pass --all" in capsys.readouterr().err
