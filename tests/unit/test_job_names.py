"""A job name's rules (slaq.names): the names SLAQ generates stay unique while they run whatever their params are
(the suffix that keeps them so is never cut), and every name that reaches py4j can cross it: one the user gives is
refused when it cannot, one SLAQ generates has what cannot escaped."""

from __future__ import annotations

import pytest

from slaq.names import check_job_name, check_name_size, fit_job_name


def test_a_fits_sequence_number_is_never_cut():
    names = {fit_job_name("LogisticRegression", {f"p{i}": "v" * 50 for i in range(10)}, seq) for seq in (1, 22, 333, 4444)}
    assert len(names) == 4 and all(n.endswith(f"]#{s}") for n, s in zip(sorted(names), ("1", "22", "333", "4444")))


@pytest.mark.parametrize("name", ["\udcff", "trial-\ud800", "fit[\udfff]"])
def test_a_name_that_cannot_cross_py4j_is_refused_where_it_enters(name):
    with pytest.raises(ValueError, match="encodable as UTF-8"):
        check_job_name(name)


def test_generated_names_escape_what_cannot_cross_py4j():
    fit = fit_job_name("LogisticRegression", {"family": "bin\udcffomial", "path": "data-\udcfe.csv"}, 2)
    assert fit == "LogisticRegression[family=bin\\udcffomial,path=data-\\udcfe.csv]#2"
    assert check_name_size(check_job_name(fit)) == fit
    fit.encode("utf-8")
    # characters UTF-8 can encode are kept as they are
    assert fit_job_name("étude-研究", {"x": "😀"}, 1) == "étude-研究[x=😀]#1"
