"""Counting lost and misattributed spark.ml iterations (srlab.slaq_bench.capture_check): pure."""

from __future__ import annotations

from srlab.slaq_bench.capture_check import check_capture, common_values

A = [0.69, 0.52, 0.41, 0.38, 0.37]
B = [1.2, 0.9, 0.8]


def test_exact_histories_pair_by_content_whatever_the_job_names():
    check = check_capture({"fit-a": A, "fit-b": B}, {"LogisticRegression#2": B, "LogisticRegression#1": [v * (1 + 4e-6) for v in A],
                                                     "KMeans#3": []})
    assert (check.lost, check.misattributed, check.iterations, check.fits) == (0, 0, 8, 2)
    assert check.as_json()["lost_iterations"] == 0 and check.as_json()["misattributed_iterations"] == 0


def test_a_history_cut_at_close_counts_lost_values_and_one_from_another_fit_counts_misattributed():
    check = check_capture({"a": A, "b": B}, {"ja": A[:3], "jb": B + [A[3]]})
    assert (check.lost, check.misattributed) == (2, 1)


def test_values_with_no_job_are_lost_and_a_job_with_no_fit_is_misattributed():
    check = check_capture({"a": A, "b": B}, {"ja": A, "stray": [5.0, 4.0]})
    assert (check.lost, check.misattributed) == (3, 2)
    assert check.unmatched_fits == ("b",) and check.unmatched_jobs == ("stray",)


def test_common_values_is_the_longest_common_subsequence_within_the_tolerance():
    assert common_values(A, A) == 5
    assert common_values(A, [A[0], 9.0, A[2], A[4]]) == 3
    assert common_values(A, [v * 1.001 for v in A]) == 0
