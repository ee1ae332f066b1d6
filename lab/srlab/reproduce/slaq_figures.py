"""The SLAQ paper's key figures regenerated from this project's code, one function each.

Every function takes a :class:`Size` (the paper's scale, or a reduced one for CI), returns the
JSON-ready figures and draws the PNG. Nothing here measures anything the ``simulate`` and
``bench`` verbs do not; it runs them at the figure's settings and plots the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from slaq.metrics import THRESHOLDS, change_vs, mean_time_to_key, pct


@dataclass(frozen=True)
class Size:
    jobs: int = 160
    cores: float = 640
    arrival_mean: float = 15.0
    arrival_sweep: tuple[float, ...] = (15.0, 10.0, 4.0)
    alloc_jobs: tuple[int, ...] = (1000, 2000, 4000)
    alloc_cores: tuple[int, ...] = (4096, 8192, 16384)
    alloc_repeat: int = 3
    seed: int = 1


PAPER = Size()
SMALL = Size(jobs=24, cores=96, arrival_sweep=(15.0, 6.0), alloc_jobs=(50, 100), alloc_cores=(256, 512), alloc_repeat=1)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    _pyplot().close(fig)
    return str(path)


def fig5(size: Size, png: Path) -> dict:
    """Fig. 5: normalized Δloss per iteration for each algorithm (family), iterations as % of the run."""
    from slaq.traces.catalog import load

    bins = np.linspace(0, 100, 11)
    series: dict[str, list[list[float]]] = {}
    for trace in load():
        drops = -np.diff(np.asarray(trace.losses, dtype=float))
        if drops.size < 2 or drops.max() <= 0:
            continue
        at = np.arange(drops.size) / (drops.size - 1) * 100
        norm = drops / drops.max()
        series.setdefault(trace.family, []).append([float(np.mean(norm[(at >= lo) & (at <= hi)]) if ((at >= lo) & (at <= hi)).any() else 0.0)
                                                   for lo, hi in zip(bins[:-1], bins[1:])])
    out: dict = {"iteration_pct_bins": bins.tolist(), "normalized_delta_loss": {f: np.mean(v, axis=0).round(4).tolist() for f, v in sorted(series.items())}}
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for family, ys in out["normalized_delta_loss"].items():
        ax.plot((bins[:-1] + bins[1:]) / 2, ys, marker="o", label=family)
    ax.set_xlabel("iteration (% of the run)")
    ax.set_ylabel("normalized Δloss")
    ax.legend(fontsize=8)
    out["png"] = _save(fig, png)
    return out


def fig6(size: Size, png: Path) -> dict:
    """Fig. 6 / 10a: loss prediction error 1, 5 and 10 iterations ahead, strawman vs weighted fit."""
    from slaq.traces.catalog import load
    from srlab.slaq_bench.predict import HORIZONS, mape_report

    report = mape_report(load())
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (method, r) in enumerate(report["methods"].items()):
        ax.bar([x + i * 0.4 for x in range(len(HORIZONS))], [r["overall"][f"{h}_ahead"] for h in HORIZONS], 0.4, label=method)
    ax.set_xticks([x + 0.2 for x in range(len(HORIZONS))], [f"{h} ahead" for h in HORIZONS])
    ax.set_ylabel("mean absolute % error")
    ax.set_yscale("log")
    ax.legend()
    report["png"] = _save(fig, png)
    return report


def _simulate(size: Size, policies: tuple[str, ...], arrival_mean: float, keep: bool = False, utility: bool = False) -> tuple[dict, dict]:
    from slaq.sim.engine import simulate
    from slaq.sim.workload import make_workload

    workload = make_workload(size.jobs, arrival_mean, size.seed)
    results = {p: simulate(workload, p, size.cores) for p in policies}
    summaries = {p: r.summary() for p, r in results.items()}
    if utility:
        for p, r in results.items():
            summaries[p]["oasis_total_utility"] = oasis_total_utility(workload, r.jobs)
    return summaries, results if keep else {}


def oasis_total_utility(workload, jobs: list[dict]) -> float:
    """OASiS's objective (its Fig. 3) on a finished run: Σ sigmoid utility of each job's completion time.

    The utility is the one the ``oasis`` policy uses, with the target completion time set from the
    job's whole work on all the cores it can use, so every policy is scored by the same yardstick.
    """
    from slaq.policy.oasis import TARGET_SLOWDOWN, utility

    by_id = {j.job_id: j for j in workload.jobs}
    fastest = np.array([float(by_id[j["job"]].costs.sum()) / by_id[j["job"]].cap for j in jobs])
    done = np.array([j["finished_s"] for j in jobs])
    weight = np.array([by_id[j["job"]].weight for j in jobs])
    return round(float(utility(weight, done, TARGET_SLOWDOWN * fastest).sum()), 2)


def fig7(size: Size, png: Path) -> dict:
    """Fig. 7: mean normalized loss over time and mean time to 90/95%, SLAQ vs fair."""
    from srlab.plot import plot_summaries

    summaries, _ = _simulate(size, ("slaq", "fair"), size.arrival_mean)
    out: dict = {"policies": summaries, "slaq_vs_fair": change_vs(summaries["slaq"], summaries["fair"])}
    out["png"] = str(plot_summaries(list(summaries.values()), png))
    return out


def fig8(size: Size, png: Path, bucket: float = 50.0) -> dict:
    """Fig. 8: share of cores held by the high-, medium- and low-loss jobs over time, SLAQ vs fair."""
    summaries, results = _simulate(size, ("slaq", "fair"), size.arrival_mean, keep=True)
    out: dict = {"bucket_s": bucket, "groups": ["high_25pct", "medium_25pct", "low_50pct"], "share_over_time": {},
                 "overall": {p: s["core_share_by_loss_group"] for p, s in summaries.items()}}
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    for ax, (policy, result) in zip(axes, results.items()):
        end = result.intervals[-1].start + result.intervals[-1].duration if result.intervals else 0.0
        cores = np.zeros((int(end // bucket) + 1, 3))
        for i in result.intervals:
            if i.active >= 4:
                cores[int(i.start // bucket)] += np.asarray(i.group_cores) * i.duration
        totals = cores.sum(axis=1, keepdims=True)
        shares = np.divide(cores, totals, out=np.zeros_like(cores), where=totals > 0)
        out["share_over_time"][policy] = shares.round(3).tolist()
        xs = np.arange(len(shares)) * bucket
        ax.stackplot(xs, shares.T, labels=out["groups"])
        ax.set_title(policy)
        ax.set_xlabel("time (s)")
    axes[0].set_ylabel("share of cores")
    axes[0].legend(loc="lower left", fontsize=8)
    out["png"] = _save(fig, png)
    return out


def fig9(size: Size, png: Path) -> dict:
    """Fig. 9: SLAQ's gain over fair as arrivals get denser (time to 90/95%, mean loss)."""
    rows = {}
    for mean in size.arrival_sweep:
        summaries, _ = _simulate(size, ("slaq", "fair"), mean)
        rows[str(mean)] = {"fair": {k: summaries["fair"][k] for k in ("mean_normalized_loss", *map(mean_time_to_key, THRESHOLDS))},
                           "slaq": {k: summaries["slaq"][k] for k in ("mean_normalized_loss", *map(mean_time_to_key, THRESHOLDS))},
                           "slaq_vs_fair": change_vs(summaries["slaq"], summaries["fair"])}
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    labels = list(rows)
    for i, thr in enumerate(THRESHOLDS):
        ax.bar([x + i * 0.4 for x in range(len(labels))], [rows[m]["slaq_vs_fair"].get(f"time_to_{pct(thr)}pct_change", 0) * 100 for m in labels],
               0.4, label=f"time to {pct(thr)}%")
    ax.set_xticks([x + 0.2 for x in range(len(labels))], [f"{m} s" for m in labels])
    ax.set_xlabel("mean time between arrivals")
    ax.set_ylabel("change vs fair (%), negative: less time")
    ax.legend()
    return {"arrival_mean_s": rows, "png": _save(fig, png)}


def fig10c(size: Size, png: Path) -> dict:
    """Fig. 10(c): wall time of one allocation for jobs × cores."""
    from srlab.slaq_bench.allocate import bench_allocate

    grid = {f"{j}x{c}": bench_allocate(j, c, "slaq", size.alloc_repeat)["median_ms"] for j in size.alloc_jobs for c in size.alloc_cores}
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for c in size.alloc_cores:
        ax.plot(size.alloc_jobs, [grid[f"{j}x{c}"] for j in size.alloc_jobs], marker="o", label=f"{c} cores")
    ax.set_xlabel("jobs")
    ax.set_ylabel("allocation time (ms, median)")
    ax.legend()
    return {"median_ms": grid, "png": _save(fig, png)}


def head_to_head(size: Size, png: Path) -> dict:
    """Every policy on the §6.2 workload and a lighter and a heavier arrival rate."""
    from slaq.policy import POLICIES

    keys = ("mean_normalized_loss", *map(mean_time_to_key, THRESHOLDS), "mean_completion_s", "makespan_s", "oasis_total_utility")
    rows = {}
    for mean in (size.arrival_mean * 5 / 3, size.arrival_mean, size.arrival_mean * 2 / 3):
        summaries, _ = _simulate(size, tuple(sorted(POLICIES)), mean, utility=True)
        rows[str(round(mean, 2))] = {p: {k: s[k] for k in keys} for p, s in summaries.items()}
    return {"arrival_mean_s": rows, "png": plot_head_to_head(rows, png)}


def plot_head_to_head(rows: dict, png: Path) -> str:
    """One panel per metric, one group of bars per arrival rate, one bar per policy."""
    plt = _pyplot()
    metrics = ("mean_normalized_loss", "mean_time_to_90pct_s", "mean_time_to_95pct_s", "mean_completion_s", "makespan_s")
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 4))
    rates = list(rows)
    policies = list(next(iter(rows.values())))
    width = 0.8 / len(policies)
    for ax, metric in zip(axes, metrics):
        for i, p in enumerate(policies):
            ax.bar([x + i * width for x in range(len(rates))], [rows[r][p][metric] for r in rates], width, label=p)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(rates))], [f"{r} s" for r in rates])
        ax.set_title(metric, fontsize=9)
        ax.set_xlabel("mean time between arrivals", fontsize=8)
    axes[0].legend(fontsize=7)
    return _save(fig, png)


FIGURES: dict[str, Callable[[Size, Path], dict]] = {
    "fig5": fig5, "fig6": fig6, "fig7": fig7, "fig8": fig8, "fig9": fig9, "fig10c": fig10c, "head-to-head": head_to_head,
}
ALIASES = {"fig10a": "fig6"}
