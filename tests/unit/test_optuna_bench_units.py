"""``slaq bench optuna``'s pure parts: the seeded trial points and the summary of its runs."""

from __future__ import annotations

from srlab.slaq_bench.optuna_prune import MEDIAN, NONE, SLAQ, points, summarize


def test_a_seed_draws_the_same_points_every_time_and_another_seed_others():
    assert points(3, 5) == points(3, 5) != points(4, 5)
    assert all(1e-4 <= p["regParam"] <= 1 and p["elasticNetParam"] in (0.0, 0.5, 1.0) for p in points(3, 50))


def _run(config, seed, to_best, best, pruned=0):
    return {"config": config, "seed": seed, "seconds_to_best": to_best, "seconds": to_best + 1, "best_value": best, "pruned": pruned}


def test_the_summary_gives_each_studys_spread_ratios_of_medians_and_same_best_counts():
    runs = [_run("slaq", 1, t, 0.3, 5) for t in (4.0, 5.0, 9.0)] + [_run("median", 1, t, 0.3, 8) for t in (10.0, 10.0, 12.0)] + \
        [_run("none", 1, t, 0.3) for t in (20.0, 21.0, 22.0)] + \
        [_run("slaq", 2, 6.0, 0.25), _run("median", 2, 6.0, 0.2), _run("none", 2, 12.0, 0.2)]
    s = summarize(runs, [SLAQ, MEDIAN, NONE])
    assert s["per_seed"]["slaq"][1]["seconds_to_best"] == {"median": 5.0, "min": 4.0, "max": 9.0}
    assert s["vs"]["slaq/median"]["ratio_per_seed"] == [0.5, 1.0] and s["vs"]["slaq/median"]["median_ratio"] == 0.75
    assert s["same_best_as_none"] == {"slaq": 1, "median": 2} and s["studies"] == 2
