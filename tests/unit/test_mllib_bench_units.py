"""Pure pieces of the spark.ml sweep benchmark: workload, configurations, interval union, objective agreement."""

from __future__ import annotations

import pytest

from slaq.sim.record import union_length
from srlab.slaq_bench.configs import CONFIGS, PRUNE, check_configs, session_conf, stock_pool_name
from srlab.slaq_bench.mllib import REASSOCIATION_RTOL, FitRecord, cores_before_first_loss, objective_agreement
from srlab.slaq_bench.mllib_workload import FAMILIES, GRIDS, cv_groups, make_fits


def test_fits_cycle_families_with_poisson_arrivals():
    fits = make_fits(12, 2.0, 1)
    assert [f.family for f in fits[:5]] == list(FAMILIES)
    assert len({f.name for f in fits}) == 12
    assert fits[0].arrival == 0.0 and all(a.arrival <= b.arrival for a, b in zip(fits, fits[1:]))
    assert make_fits(12, 2.0, 1) == fits  # seeded
    assert {(f.family, f.grid_index) for f in fits} <= {(fam, i) for fam, g in GRIDS.items() for i in range(len(g))}
    with pytest.raises(ValueError):
        make_fits(0, 2.0, 1)


def test_cv_groups_hold_exactly_the_sweeps_grid_entries():
    fits = make_fits(12, 2.0, 1)
    groups = cv_groups(fits, 2.0, 1)
    assert [g[1] for g in groups] == list(FAMILIES)
    assert sum(len(g[2]) for g in groups) == len({(f.family, f.grid_index) for f in fits})
    assert groups[0][3] == 0.0


def test_configs():
    assert session_conf("stock", 1.0)["spark.slaq.enabled"] == "false"
    assert session_conf("slaq", 2.0)["spark.slaq.epoch"] == "2.0s"
    assert all(session_conf(c, 1.0)["spark.scheduler.mode"] == "FAIR" for c in CONFIGS)
    for bad in (["slaq", "slaq"], ["fifo"], []):
        with pytest.raises(ValueError, match="configurations"):
            check_configs(bad)


def test_union_length_counts_overlaps_once():
    assert union_length([]) == 0.0
    assert union_length([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.7)]) == pytest.approx(4.0)


def _run(finals: dict[str, float | None], iterations: int = 10) -> dict:
    return {"slaq": {"fits": {n: {"final_objective": v, "iterations": iterations} for n, v in finals.items()}}}


def test_objective_agreement_reports_the_worst_fit():
    same = objective_agreement([_run({"a": 1.0, "b": 2.0}), _run({"a": 1.0, "b": 2.0 * (1 + 1e-12)})])
    assert same["within_reassociation"] and same["fit"] == "b"
    off = objective_agreement([_run({"a": 1.0}), _run({"a": 1.0 + 10 * REASSOCIATION_RTOL}, iterations=11)])
    assert not off["within_reassociation"] and off["fits_with_differing_iteration_counts"] == ["a"]


def test_stock_pools_sort_by_arrival_not_by_job():
    """Spark's FAIR algorithm breaks ties by pool name: the names must carry arrival order and nothing else."""
    names = [stock_pool_name(i) for i in range(1200)]
    assert sorted(names) == names and len(set(names)) == len(names)


def test_executor_memory_sizes_the_executor_and_a_local_cluster_worker_to_match():
    from srsupport.session import executor_memory

    assert executor_memory("local-cluster[2,1,1024]", 3072) == ("local-cluster[2,1,3072]", {"spark.executor.memory": "3072m"})
    assert executor_memory("local-cluster[3, 1, 4096]", 3072)[0] == "local-cluster[3, 1, 4096]"  # already large enough
    assert executor_memory("spark://127.0.0.1:7077", 2048) == ("spark://127.0.0.1:7077", {"spark.executor.memory": "2048m"})
    with pytest.raises(ValueError, match="at least 512"):
        executor_memory("local-cluster[2,1,1024]", 256)


def test_the_prune_configuration_is_slaq_with_pruning_on_and_opt_in():
    conf = session_conf(PRUNE, 1.0)
    assert conf["spark.slaq.policy"] == "slaq" and conf["spark.slaq.prune"] == "true"
    assert PRUNE not in CONFIGS and "spark.slaq.prune" not in session_conf("slaq", 1.0)
    assert check_configs(["slaq", PRUNE]) == ["slaq", PRUNE]


def test_the_prune_bench_compares_each_grid_with_stock():
    from srlab.slaq_bench.prune import compare, grid_values

    assert grid_values(4, 8) == grid_values(4, 8) and len(grid_values(4, 8)) == 8 and grid_values(4, 8) != grid_values(5, 8)

    def row(seed, seconds, best, pruned=0):
        return {"seed": seed, "seconds": seconds, "best": best, "best_params": {"regParam": best}, "best_metric": 0.9, "pruned": pruned,
                "avg_metrics": [0.9, 0.8, 0.7]}

    v = compare({"stock": [row(1, 10.0, 0), row(2, 20.0, 1)], PRUNE: [row(1, 5.0, 0, 3), row(2, 12.0, 2, 4)]})[PRUNE]
    assert v["time_ratio_per_grid"] == [0.5, 0.6] and v["median_time_ratio"] == 0.55 and v["total_time_ratio"] == round(17 / 30, 3)
    assert (v["same_best"], v["grids"], v["pruned_candidates"]) == (1, 2, 7)
    assert [(d["seed"], d["stock_metric_of_chosen"]) for d in v["differed"]] == [(2, 0.7)]


def test_each_fit_gets_the_cores_its_slaq_job_had_before_its_first_loss():
    records = {"cv-lr-p0-0": FitRecord("lr", 1.0, job_prefix="LogisticRegression[regParam=0]"),
               "cv-lr-p0-1": FitRecord("lr", 2.0, job_prefix="LogisticRegression[regParam=0]"),
               "cv-lr-p1-0": FitRecord("lr", 1.5, job_prefix="LogisticRegression[regParam=0.1]"),
               "svc-00": FitRecord("svc", 3.0, job_prefix="LinearSVC[regParam=0]")}
    before = {"LogisticRegression[regParam=0]#12": 1.5, "LogisticRegression[regParam=0]#3": 0.5,
              "LogisticRegression[regParam=0.1]#7": 2.0}
    assert cores_before_first_loss(records, before, "zero-change") == {
        "cv-lr-p0-0": 0.5, "cv-lr-p0-1": 1.5, "cv-lr-p1-0": 2.0, "svc-00": None}
    assert cores_before_first_loss(records, {"svc-00": 3.0}, "explicit")["svc-00"] == 3.0


def test_a_fits_task_time_is_split_at_its_first_loss():
    from srlab.slaq_bench.fit_timing import cores_split

    # started at 0, first loss at 4, ended at 10: two tasks before (1 + 2 s), one across it (1 s before, 2 after), one after (3 s)
    before, cores_before, cores_after = cores_split([(0.0, 1.0), (1.0, 3.0), (3.0, 6.0), (7.0, 10.0)], 0.0, 4.0, 10.0)
    assert before == 4.0 and cores_before == 1.0 and cores_after == 5.0 / 6.0


def test_the_gbt_sweep_interleaves_two_gbt_fits_per_linear_fit_through_their_grids():
    from srlab.slaq_bench.mllib_workload import GBT_FAMILIES, GBT_GRIDS, GBT_LINEAR, make_gbt_fits

    fits = make_gbt_fits(8, 2.0, 1)
    assert [f.family in GBT_FAMILIES for f in fits] == [True, True, False] * 4
    assert [f.family for f in fits if f.family not in GBT_FAMILIES] == [*GBT_LINEAR, GBT_LINEAR[0]]
    gbt = [(f.family, f.grid_index) for f in fits if f.family in GBT_FAMILIES]
    assert sorted(gbt) == sorted((fam, i) for fam, grid in GBT_GRIDS.items() for i in range(len(grid)))  # each entry once
    assert fits[0].arrival == 0.0 and all(a.arrival <= b.arrival for a, b in zip(fits, fits[1:])) and len({f.name for f in fits}) == 12
    assert [f.arrival for f in fits] == [f.arrival for f in make_fits(12, 2.0, 1)]  # the plain sweep's arrivals
    assert [f.family for f in make_gbt_fits(2, 0.3, 1)] == ["gbt-c", "gbt-r", "lr-l2"]


def test_a_gbt_fit_is_compared_across_runs_by_its_trees_only():
    """A GBT fit has no objective history (its final_objective is None): only its number of trees is compared."""
    out = objective_agreement([_run({"a": 1.0, "gbt": None}), _run({"a": 1.0, "gbt": None})])
    assert out["max_relative_difference"] == 0.0 and out["within_reassociation"] and out["fits_with_differing_iteration_counts"] == []
