"""``riffle reproduce fig4.9|fig4.10``: the thesis's Riffle figures from the live benchmark ``riffle bench spark``.

Fig. 4.9 compares stage times (map, reduce, whole job) of vanilla Spark, N-way merging and best-effort
merging; Fig. 4.10 the number of shuffle blocks the reducers fetch. Both come from one run of
:func:`srlab.riffle_bench.spark_shuffle.bench_spark` (real local-cluster Spark and a real merger daemon);
this module only picks the figures out and draws them. It starts Spark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ShuffleSize:
    maps: int = 400
    reducers: int = 400
    nways: tuple[int, ...] = (5, 10, 20)
    best_effort: tuple[float, ...] = (0.9, 0.95)
    repeats: int = 3


PAPER = ShuffleSize()
SMALL = ShuffleSize(maps=40, reducers=40, nways=(5, 10), best_effort=(0.9,), repeats=1)
FIGURES = ("fig4.9", "fig4.10")


def figures_from(bench: dict) -> dict[str, dict]:
    """The two figures' data from one ``bench_spark`` result (pure)."""
    configs = bench["configs"]
    stages = {name: {"map_stage_s": c["map_stage_seconds"], "reduce_stage_s": c["reduce_stage_seconds"], "job_s": c["job_seconds"],
                     "reducers_held_s": c["hold_seconds"]} for name, c in configs.items()}
    fetches = {name: {"blocks_fetched": c["blocks_fetched"], "reduction_x": c.get("blocks_fetched_reduction_x", 1.0)}
               for name, c in configs.items()}
    setting = {k: bench[k] for k in ("maps", "reducers", "rows_per_map", "master", "repeats", "merger_fsync")}
    return {"fig4.9": {"setting": setting, "stage_seconds": stages}, "fig4.10": {"setting": setting, "fetches": fetches}}


def _plot(name: str, data: dict, png: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    if name == "fig4.9":
        configs = list(data["stage_seconds"])
        for i, key in enumerate(("map_stage_s", "reduce_stage_s", "job_s")):
            ax.bar([x + i * 0.27 for x in range(len(configs))], [data["stage_seconds"][c][key] for c in configs], 0.27, label=key)
        ax.set_ylabel("seconds (median)")
    else:
        configs = list(data["fetches"])
        ax.bar(range(len(configs)), [data["fetches"][c]["blocks_fetched"] for c in configs])
        ax.set_yscale("log")
        ax.set_ylabel("shuffle blocks fetched")
    ax.set_xticks(range(len(configs)), configs, rotation=20, fontsize=8)
    ax.legend() if name == "fig4.9" else None
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return str(png)


def reproduce(names: list[str], out_dir: Path, size: ShuffleSize, master: str) -> dict:
    """Run the live benchmark once and write ``<figure>.png``/``.json`` for each of ``names``."""
    from srlab.riffle_bench.spark_shuffle import bench_spark

    bench = bench_spark(size.maps, size.reducers, list(size.nways), size.repeats, master=master, best_effort=list(size.best_effort),
                        cost_model=False)  # the thesis merges every group
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {}
    for name, data in figures_from(bench).items():
        if name not in names:
            continue
        data["png"] = _plot(name, data, out_dir / f"{name}.png")
        (out_dir / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n")
        report[name] = {"png": data["png"], "json": str(out_dir / f"{name}.json")}
    return report
