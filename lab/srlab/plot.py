"""Fig. 7-style plots of simulation results (matplotlib, file output only)."""

from __future__ import annotations

from pathlib import Path

from slaq.metrics import THRESHOLDS, mean_time_to_key, pct


def plot_summaries(summaries: list[dict], path: str | Path) -> Path:
    """Mean normalized loss of active jobs over time (Fig. 7a) and mean time to each threshold (Fig. 7b)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [3, 1]})
    for s in summaries:
        series = s["loss_over_time"]
        xs = [i * series["bucket_s"] for i, v in enumerate(series["mean_normalized_loss"]) if v is not None]
        ys = [v for v in series["mean_normalized_loss"] if v is not None]
        left.plot(xs, ys, label=s["policy"], linewidth=1)
    left.set_xlabel("time (s)")
    left.set_ylabel("mean normalized loss of active jobs")
    left.legend()
    names = [s["policy"] for s in summaries]
    width = 0.8 / max(len(names), 1)
    slots = range(len(THRESHOLDS))
    for i, s in enumerate(summaries):
        right.bar([x + i * width for x in slots], [s[mean_time_to_key(thr)] for thr in THRESHOLDS], width, label=s["policy"])
    right.set_xticks([x + 0.4 - width / 2 for x in slots], [f"{pct(thr)}%" for thr in THRESHOLDS])
    right.set_ylabel("mean time to loss reduction (s)")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
