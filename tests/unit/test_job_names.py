"""A job name's rules (slaq.names): the names SLAQ generates stay unique while they run whatever the user's names are
(the suffix that keeps them so is never cut), and every name that reaches py4j can cross it: one the user gives is
refused when it cannot, one SLAQ generates has what cannot escaped."""

from __future__ import annotations

import pytest

from slaq.names import MAX_NAME, check_job_name, check_name_size, fit_job_name, trial_job_name

PARAMS = {"regParam": 0.01, "elasticNetParam": 0.5}


@pytest.mark.parametrize("study", ["s" * 200, "s" * 156, "s" * (MAX_NAME - 2), "s" * 5000, "a\tlong\nstudy " * 40])
def test_every_trial_of_a_study_has_a_name_of_its_own_whatever_the_studys_name(study):
    numbers = [0, 1, 9, 10, 99, 100, 999, 1000, 1234, 9999, 10000, 123456]
    names = [trial_job_name(study, n, PARAMS) for n in numbers]
    assert len(set(names)) == len(numbers)
    for n, name in zip(numbers, names):
        assert len(name) <= MAX_NAME and f"#{n}" in name and check_job_name(name) == name
    bare = [trial_job_name(study, n, {}) for n in numbers]
    assert len(set(bare)) == len(numbers) and all(b.endswith(f"#{n}") for n, b in zip(numbers, bare))


def test_a_short_studys_trial_keeps_its_params_and_long_params_are_cut_after_the_number():
    assert trial_job_name("tune", 3, PARAMS) == "tune#3 regParam=0.01 elasticNetParam=0.5"
    long = trial_job_name("tune", 42, {f"p{i}": "x" * 30 for i in range(20)})
    assert len(long) == MAX_NAME and long.startswith("tune#42 p0=") and long.endswith("…")


def test_a_fits_sequence_number_is_never_cut():
    names = {fit_job_name("LogisticRegression", {f"p{i}": "v" * 50 for i in range(10)}, seq) for seq in (1, 22, 333, 4444)}
    assert len(names) == 4 and all(n.endswith(f"]#{s}") for n, s in zip(sorted(names), ("1", "22", "333", "4444")))


@pytest.mark.parametrize("name", ["\udcff", "trial-\ud800", "fit[\udfff]"])
def test_a_name_that_cannot_cross_py4j_is_refused_where_it_enters(name):
    with pytest.raises(ValueError, match="encodable as UTF-8"):
        check_job_name(name)


def test_generated_names_escape_what_cannot_cross_py4j():
    trial = trial_job_name("study-\udcfe", 7, {"path": "data-\udcff.csv"})
    fit = fit_job_name("LogisticRegression", {"family": "bin\udcffomial"}, 2)
    assert trial == "study-\\udcfe#7 path=data-\\udcff.csv" and fit == "LogisticRegression[family=bin\\udcffomial]#2"
    for name in (trial, fit):
        assert check_name_size(check_job_name(name)) == name
        name.encode("utf-8")
    # characters UTF-8 can encode are kept as they are
    assert trial_job_name("étude-研究", 1, {"x": "😀"}) == "étude-研究#1 x=😀"
