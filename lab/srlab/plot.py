"""Fig. 7-style plots of simulation results (matplotlib, file output only)."""

from __future__ import annotations

from pathlib import Path

from slaq.metrics import THRESHOLDS, mean_time_to_key, pct


def plot_summaries(summaries: list[dict], path: str | Path, title: str | None = None) -> Path:
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
        values = [s[mean_time_to_key(thr)] or 0.0 for thr in THRESHOLDS]
        bars = right.bar([x + i * width for x in slots], values, width, label=s["policy"])
        right.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
    right.set_xticks([x + 0.4 - width / 2 for x in slots], [f"{pct(thr)}%" for thr in THRESHOLDS])
    right.set_xlabel("loss reduction reached")
    right.set_ylabel("mean time to loss reduction (s)")
    right.set_title("mean time to 90% / 95%", fontsize=10)
    right.legend(fontsize=8)
    right.margins(y=0.12)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
