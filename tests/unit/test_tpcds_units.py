"""The TPC-DS benchmark's pure parts: DuckDB's dialect to Spark SQL, the result hash, the report's figures."""

from __future__ import annotations

import datetime
import decimal
import json

import pytest

from srlab.riffle_bench import tpcds
from srlab.riffle_bench import tpcds_queries as tq


def test_double_quoted_aliases_become_back_quoted_and_the_semicolon_goes():
    sql = 'SELECT sum(x) AS "30 days", sum(y) AS ">120 days"\nFROM t\nLIMIT 100;\n\n'
    assert tq.to_spark_sql(sql) == "SELECT sum(x) AS `30 days`, sum(y) AS `>120 days`\nFROM t\nLIMIT 100"
    assert tq.to_spark_sql("SELECT 'a' AS b FROM t;") == "SELECT 'a' AS b FROM t"  # string literals untouched


def test_rankings_are_ordered_results_and_the_rest_multisets():
    assert tq.ordered_result("SELECT a FROM t ORDER BY a\nLIMIT 100;")
    assert tq.ordered_result("select a from t order by a nulls first limit 5")
    assert not tq.ordered_result("SELECT a FROM t ORDER BY a")
    assert not tq.ordered_result("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 3) x GROUP BY a")


def test_the_hash_ignores_row_order_of_multisets_and_last_bits_of_doubles():
    a = [(1, 0.1 + 0.2, "x"), (2, None, "y")]
    b = [(2, None, "y"), (1, 0.3, "x")]
    assert tq.result_hash(a, ordered=False) == tq.result_hash(b, ordered=False)
    assert tq.result_hash(a, ordered=True) != tq.result_hash(b, ordered=True)
    assert tq.result_hash([(1, 0.31)], ordered=False) != tq.result_hash([(1, 0.3)], ordered=False)
    assert tq.result_hash([(None,)], ordered=False) != tq.result_hash([("None",)], ordered=False)


def test_canonical_values_are_stable():
    assert tq.canonical(decimal.Decimal("1.500")) == tq.canonical(decimal.Decimal("1.5")) == "1.5"
    assert tq.canonical(decimal.Decimal("100")) == "100"
    assert tq.canonical(datetime.date(2000, 1, 2)) == "2000-01-02"
    assert tq.canonical(True) == "true" and tq.canonical(float("nan")) == "nan"


def _run(seconds, blocks, h="h1", merged=False):
    return {"seconds": seconds, "hash": h, "rows": 1, "shuffle_bytes": 10, "blocks_fetched": blocks, "merged_fraction": 0.5 if merged else 0.0,
            "merges_committed": 1 if merged else 0, "merged_shuffle": merged, "cost_decisions": {"worth_it": 1} if merged else {}}


def test_summary_reports_medians_ratios_and_identity():
    runs = {
        1: {"off": [_run(1.0, 100), _run(1.2, 100), _run(9.0, 100)], "on": [_run(1.1, 10, merged=True)] * 3},
        2: {"off": [_run(2.0, 50)] * 3, "on": [_run(2.0, 50, h="h2")] * 3},
    }
    r = tpcds.summarize(runs, ("off", "on"), {"suite": "tpcds"})
    assert r["queries"]["1"]["off"]["seconds"] == 1.2 and r["queries"]["1"]["on"]["time_ratio"] == round(1.1 / 1.2, 3)
    assert r["identical"] is False and r["configs"]["on"]["not_identical"] == ["2"]
    assert r["total_time_ratio"] == round(3.1 / 3.2, 3) and r["max_query_time_ratio"] == 1.0
    assert r["merged_blocks_fetched_reduction_x"] == 10.0 and r["configs"]["on"]["merged_queries"] == 1
    assert r["configs"]["on"]["cost_decisions"] == {"worth_it": 3}


def test_summary_counts_queries_slower_in_every_repeat_against_chance():
    runs = {
        1: {"off": [_run(1.0, 9), _run(1.1, 9), _run(1.2, 9)], "on": [_run(1.3, 9), _run(1.4, 9), _run(1.25, 9)]},  # every run slower
        2: {"off": [_run(1.0, 9), _run(2.0, 9), _run(1.5, 9)], "on": [_run(1.9, 9), _run(1.1, 9), _run(1.95, 9)]},  # overlapping
    }
    r = tpcds.summarize(runs, ("off", "on"), {"suite": "tpcds"})
    assert r["configs"]["on"]["queries_slower_in_every_repeat"] == ["1"]
    assert r["configs"]["on"]["expected_by_chance"] == round(2 / 20, 1)  # C(6, 3) = 20 orderings of 3 + 3 runs
    assert r["vanilla_repeat_spread_median"] == round((0.2 + 1.0) / 2, 3)  # 1.2/1.0 - 1 and 2.0/1.0 - 1


def test_a_raw_file_is_summarized_and_a_wrong_file_is_a_clear_error(tmp_path):
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps({"1": {"off": [_run(1.0, 9)] * 3, "on": [_run(1.0, 9)] * 3}}))
    assert tpcds.summarize_raw(raw)["total_time_ratio"] == 1.0
    raw.write_text("[]")
    with pytest.raises(ValueError, match="not a raw TPC-DS run file"):
        tpcds.summarize_raw(raw)


def test_the_noise_range_contains_no_difference_and_excludes_a_real_one():
    same = [([1.0, 1.2, 0.9], [1.2, 0.9, 1.0])] * 30  # the same runs on both sides: observed ratio 1.0
    low, high, p = tpcds.noise_range(same, rounds=400)
    assert low < 1.0 < high and p > 0.05
    slower = [([1.0, 1.1, 0.9], [2.0, 2.1, 1.9])] * 30  # every run of one side twice the other's
    low, high, p = tpcds.noise_range(slower, rounds=400)
    assert high < 2.0 and p == 0.0
