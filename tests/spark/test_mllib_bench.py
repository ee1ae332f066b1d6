"""`slaq bench mllib`, at --small's shape (five fits, one of each family, one repeat, Spark's 1 GiB executors) with
fewer iterations on smaller data: the spark.ml sweep end to end on real local-cluster Spark sessions (both cores in one
executor JVM: a second one only doubles the JVM start-up and JIT warm-up), its plain fits, its CrossValidator
variant and its GBT sweep (two GBT fits, which report no per-iteration loss, and a linear one).

Run as a subprocess: the benchmark starts one fresh session per configuration, which must not be the
test suite's shared session (getOrCreate would hand that one back)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

from slaq.sim import trace
from slaq.sim.check import check_trace
from srlab.slaq_bench.mllib import CV_FOLDS
from srlab.slaq_bench.mllib_args import SMALL
from srlab.slaq_bench.mllib_workload import GBT_FAMILIES, GRIDS, make_fits, make_gbt_fits
from srlab.slaq_bench.raw_runs import runs_path
from tests.fixtures import ends

# --small's sweep with four iterations (every linear fit still logs at least two losses) on a quarter of its rows and half
# its features: the time goes into the iterations' Spark jobs, and the assertions hold at any size
SIZE = {**SMALL, "max_iter": 4, "rows": 1000, "features": 4}
MASTER = "local-cluster[1,2,1024]"
SIZE_FLAGS = [f"--{key.replace('_', '-')}={SIZE[key]}"
              for key in ("fits", "gbt_fits", "rows", "features", "partitions", "max_iter", "arrival_mean", "repeats")]


def test_small_sweep_times_every_fit_under_slaq_and_stock_spark(tmp_path):
    assert SIZE["executor_memory_mb"] is None  # --small's Spark default of 1 GiB, given explicitly below
    cmd = [sys.executable, "-m", "slaq.cli", "bench", "mllib", *SIZE_FLAGS, "--executor-memory-mb=1024", "--no-warmup",
           "--master", MASTER, "--configs", "order,stock", "--variants", "fits,cv,gbt", "--json", "--record-trace", str(tmp_path / "t.json.gz")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, ends(proc.stderr)
    out = json.loads(proc.stdout)
    assert sorted(out["variants"]) == ["cv", "fits", "gbt"] and out["workload"]["sequence"] == [["order", "stock"]]
    fits = make_fits(SIZE["fits"], SIZE["arrival_mean"], 1)
    # CrossValidator fits every grid entry once per fold, then refits the best entry on all the data
    cv_fits = sum(len({f.grid_index for f in fits if f.family == fam}) * CV_FOLDS + 1 for fam in GRIDS if any(f.family == fam for f in fits))
    gbt_fits = make_gbt_fits(SIZE["gbt_fits"], SIZE["arrival_mean"], 1)
    for variant, expected in (("fits", len(fits)), ("cv", cv_fits), ("gbt", len(gbt_fits))):
        v = out["variants"][variant]
        for config in ("order", "stock"):
            per_fit = v["last_repeat_fits"][config]
            assert len(per_fit) == expected, (variant, config, sorted(per_fit))
            if variant == "cv":  # every family, tuned
                assert {name.rsplit("-p", 1)[0] for name in per_fit} == {f"cv-{f.family}" for f in fits}, sorted(per_fit)
            if variant == "gbt":
                assert sorted(per_fit) == sorted(f.name for f in gbt_fits)
            for name, fit in per_fit.items():
                if fit["family"] in GBT_FAMILIES:  # no loss: timed from start to end, its trees as its iterations
                    assert fit["iterations"] == SIZE["max_iter"] and fit["final_objective"] is None, (name, fit)
                    assert fit["time_to_90pct_s"] is None and fit["time_to_first_loss_s"] is None, (name, fit)
                    assert fit["wall_s"] > 0 and fit["spark_jobs"] >= fit["iterations"], (name, fit)
                    continue
                # one logged iteration per objective value after the first, else summarize() raises
                assert fit["iterations"] >= 2, name
                assert fit["time_to_90pct_s"] is not None and 0 <= fit["time_to_90pct_s"] <= fit["wall_s"] + 0.5, (name, fit)
                assert fit["spark_jobs"] >= fit["iterations"] - 1, (name, fit)
                assert 0 < fit["time_to_first_loss_s"] <= fit["time_to_90pct_s"] + 0.002, (name, fit)
                assert fit["per_iteration_ms"]["executor_task"] > 0, (name, fit)
            assert v["median"][config]["mean_time_to_90pct_s"] > 0 and v["median"][config]["mean_wall_s"] > 0
            run = v["per_repeat"][config][0]
            assert run["cpu_s"]["executors_s"] > 0 and run["cpu_s"]["driver_jvm_s"] > 0, run["cpu_s"]
            assert 0 < run["storage"]["storage_memory_peak_mb"] <= run["storage"]["storage_memory_capacity_mb"], run["storage"]
            assert sum(run["task_locality"].values()) >= sum(f["spark_jobs"] for f in per_fit.values()), run["task_locality"]
        assert v["per_repeat"]["order"][0]["epoch_loop"]["epochs"] > 0  # SLAQ really ran its loop
        # every iteration of every fit is in its own job's history, none lost, none in another fit's job (and none in a GBT fit's)
        assert v["capture"]["fits"] == expected and v["capture"]["iterations"] > 0, v["capture"]
        assert (v["capture"]["lost_iterations"], v["capture"]["misattributed_iterations"]) == (0, 0), v["per_repeat"]["order"][0]["capture"]
        assert "epoch_loop" not in v["per_repeat"]["stock"][0]  # and stock Spark had none
        assert "time_to_90pct_change" in v["order_vs_stock"] and "slaq_vs_stock" not in v
        # the scheduler changes when iterations run, never what they compute
        assert v["objectives"]["within_reassociation"], v["objectives"]
        assert v["objectives"]["fits_with_differing_iteration_counts"] == []
    # what a CrossValidator's user waits for and gets: each tuner's fit() from its start to its model, and the grid
    # entry of its best average metric, the same under SLAQ and stock Spark
    tuners = out["variants"]["cv"]["tuners"]
    assert sorted(tuners["chosen"]["order"]) == sorted({f"cv-{f.family}" for f in fits}), tuners
    assert tuners["same_chosen_model"] and tuners["outside_reference_choices"] == {"order": []}, tuners
    for config in ("order", "stock"):
        run = out["variants"]["cv"]["per_repeat"][config][0]
        for name, t in run["tuners"].items():
            entries = sorted({f.grid_index for f in fits if f"cv-{f.family}" == name})
            assert t["chosen"] in entries and len(t["avg_metrics"]) == len(entries), (name, t)
            last_fit = max(f["start_s"] + f["wall_s"] for n, f in out["variants"]["cv"]["last_repeat_fits"][config].items()
                           if n.startswith(name + "-p"))
            assert 0 < t["wall_s"] and t["start_s"] + t["wall_s"] >= last_fit - 0.01, (name, t, last_fit)
    assert tuners["wall_vs_stock_per_repeat"]["order"][0] > -1, tuners
    # the GBT sweep's trace: each GBT fit a job with its work and no loss (SLAQ gives it an even share), which the check replays
    gbt = trace.load(tmp_path / "t-gbt.json.gz")
    silent = {j.name: j for j in gbt.jobs if j.silent}
    assert sorted(silent) == sorted(f.name for f in gbt_fits if f.family in GBT_FAMILIES), [j.name for j in gbt.jobs]
    assert all(j.reports is False and len(j.phases) == 1 and len(j.phases[0].stages) >= SIZE["max_iter"] for j in silent.values())
    assert {c.config for c in check_trace(gbt)} == {"order", "stock"}
    # the driver works between a GBT fit's Spark jobs (a tree's splits), and the trace places its time there
    for j in silent.values():
        (p,) = j.phases
        assert p.gaps is not None and sum(p.gaps) <= p.driver_s + 1e-3 * len(p.gaps), (j.name, p)
        assert sum(g > 0 for g in p.gaps[1:]) >= SIZE["max_iter"], (j.name, p.gaps)  # before later trees' Spark jobs, not only the first
    # one executor holds every cached block: no task waits for another, so the trace holds none for one
    # (test_record_trace.py records two executors)
    assert gbt.executors == 1 and not any(s.local for j in gbt.replayed for p in j.phases for s in p.stages)
    # SLAQ has no loss of a fit before its first iteration's: phase 0 holds the set-up and the first iteration,
    # and the phase after it ends at the same time, so the replay has no loss of it earlier
    fitted = [j for j in trace.load(tmp_path / "t-fits.json.gz").jobs if j.losses]
    assert fitted and all(p0.stages and not (p1.stages or p1.driver_s) for p0, p1 in (j.phases[:2] for j in fitted)), fitted
    # each trace's raw runs beside it rebuild the same jobs with today's rules (so a rule can be tried offline), and
    # keep every fit's Spark jobs with their stages as the status store timed them
    for variant in ("fits", "cv", "gbt"):
        recorded = tmp_path / f"t-{variant}.json.gz"
        rebuilt = tmp_path / f"rebuilt-{variant}.json.gz"
        proc = subprocess.run([sys.executable, "-m", "srlab.slaq_bench.raw_runs", str(recorded), "--out", str(rebuilt)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert trace.load(rebuilt).jobs == trace.load(recorded).jobs, variant
    with gzip.open(runs_path(tmp_path / "t-gbt.json.gz"), "rt") as fh:
        runs = json.load(fh)["runs"]
    assert len(runs) == 2  # order's run and stock's
    for run in runs:
        groups = {j["group"] for j in run["spark_jobs"]}
        assert {f["name"] for f in run["fits"]} <= groups, groups
        timed = [s for j in run["spark_jobs"] if j["group"] in silent for s in j["stages"].values() if s is not None and None not in s[:3]]
        assert timed and all(s[0] <= s[1] <= s[2] for s in timed), timed[:5]  # submitted, first task launched, completed
