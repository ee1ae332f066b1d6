"""``riffle simulate --check``: the model (:mod:`riffle.driver.simulate`) against the thesis's published
figures, and against this project's measured runs that calibrated it. Pure: the figures are constants here.

Each check names the published or measured figure, the model's prediction, and the range the model must
land in; ``tests/unit/test_riffle_simulate.py`` asserts every published and measured check passes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from riffle.driver.simulate import PROFILES, Cluster, fit_task_seconds, fit_to_vanilla, predict, read_size_gap

HDD = PROFILES["hdd"].storage
MEASURED = PROFILES["measured"].storage
SYNTHETIC_FAN_INS = (5, 10, 20, 40)  # §4.5.2's merge policies
MERGER_BUFFER_PRODUCTION = 64 << 20  # §4.5.3: "the mergers use up to 64MB in-memory buffers"
PRODUCTION_JOBS = {  # Table 4.1: shuffle bytes, map tasks, reduce tasks
    "Job 2": (1.15e12, 7040, 1438),
    "Job 3": (2.7e12, 8064, 2500),
    "Job 4": (267e12, 36145, 20011),
}


def production(maps: int, reducers: int, shuffle_bytes: float) -> Cluster:
    """§4.5.1's testbed: 100 nodes of 14 four-core executors, 1,414 executors in all; on its disaggregated storage a
    merge may combine any node's files (§4.3.4)."""
    return Cluster(1414, maps, reducers, shuffle_bytes, cores=4, executors_per_node=14, scope="cluster")


@dataclass(frozen=True)
class Check:
    figure: str
    published: str
    predicted: float
    low: float
    high: float
    unit: str = "×"
    setting: str = ""

    @property
    def ok(self) -> bool:
        return self.low <= self.predicted <= self.high


def published_checks() -> list[Check]:
    """The thesis's figures the model should reproduce (chapter 4), each within a stated range."""
    checks = []
    example = predict(Cluster(25, 1000, 1000, 100e9, scope="cluster"), 40, replace(MEASURED, buffer_bytes=10_000_000))
    checks.append(Check("§4.3.5 worked example: shuffle I/O requests, vanilla ÷ 40-way merged", "22× (1,000,000 → 45,000)",
                        example.ratios["requests"], 19.8, 24.2, setting="1,000 maps × 1,000 reducers, 100 GB, 10 MB merger buffers"))
    hdd64 = replace(HDD, buffer_bytes=MERGER_BUFFER_PRODUCTION)
    for job, fan_in, published, low, high in (("Job 2", 10, "10×", 8.5, 11.5), ("Job 3", 10, "10×", 8.5, 11.5),
                                               ("Job 4", 6, "5×", 4.25, 5.75)):
        total, maps, reducers = PRODUCTION_JOBS[job]
        p = predict(production(maps, reducers, total), fan_in, hdd64)
        checks.append(Check(f"Fig. 4.12 {job}: shuffle I/O requests incl. the mergers', vanilla ÷ merged", published,
                            p.ratios["requests"], low, high,
                            setting=f"{maps:,} × {reducers:,}, N={fan_in}, 64 MiB merger buffers, 1,414 executors"))
    checks.append(Check("HDD read-size gap: time to read a volume in 64 KiB vs 4 MiB requests", "about 17×",
                        read_size_gap(64 << 10, 4 << 20, HDD), 14.5, 19.5, setting="`hdd` profile"))
    synthetic = synthetic_cluster()
    full = predict(synthetic, 40, hdd64)
    checks.append(Check("Fig. 4.10(a): read requests per reduce task, 40-way", "8,000 → 200",
                        full.merged.blocks_fetched / synthetic.reducers, 190, 210, unit="",
                        setting="synthetic job: 3 TB, 8,000 × 2,500, 1,414 executors"))
    saved = {n: predict(synthetic, n, hdd64).ratios["job_faster_pct"] for n in SYNTHETIC_FAN_INS}
    best = max(saved, key=lambda n: saved[n])
    checks.append(Check("Fig. 4.9 / abstract: job time saved by merging, >1,000 executors, best of N = 5, 10, 20, 40",
                        "35% (648 → 424 s); up to 40% in production", saved[best], 25.0, 50.0, unit="%",
                        setting=f"synthetic job, best at N={best}; disks and task time fitted to its vanilla stages (174 s, 474 s)"))
    return checks


def synthetic_cluster() -> Cluster:
    """§4.5.2's synthetic job (3 TB, 8,000 maps, 2,500 reducers) on the 1,414 executors, with the disks and task time
    that reproduce its vanilla map (174 s) and reduce (474 s) stages on the ``hdd`` profile (Fig. 4.9(a))."""
    return fit_to_vanilla(production(8000, 2500, 3e12), replace(HDD, buffer_bytes=MERGER_BUFFER_PRODUCTION), 174.0, 474.0)


@dataclass(frozen=True)
class Calibration:
    run: str
    fan_in: int
    measured: dict[str, float]
    predicted: dict[str, float]


# `riffle bench spark --nodes 3` (docs/benchmarks.md, "Riffle on Spark"): medians of 3; the three nodes share
# one two-core machine, so its three mergers merge one at a time
LOCAL_VANILLA = {"blocks_fetched": 159_372, "map_seconds": 2.38, "reduce_seconds": 4.77, "job_seconds": 6.92}
LOCAL_MEASURED = {
    5: {"blocks_fetched": 32_319, "map_seconds": 4.21, "reduce_seconds": 4.04, "job_time": 1.225},
    10: {"blocks_fetched": 16_359, "map_seconds": 3.60, "reduce_seconds": 3.17, "job_time": 0.959},
    20: {"blocks_fetched": 8_776, "map_seconds": 3.82, "reduce_seconds": 3.00, "job_time": 0.988},
}


def local_cluster() -> Cluster:
    """The measured runs' cluster: 400 maps × 400 reducers of ~150 B blocks, 3 one-core executors on one machine,
    its task time fitted to the vanilla job (6.92 s)."""
    base = Cluster(executors=3, maps=400, reducers=400, shuffle_bytes=400 * 400 * 150, executors_per_node=3, concurrent_merges=1)
    return fit_task_seconds(base, MEASURED, LOCAL_VANILLA["job_seconds"])


def calibration() -> list[Calibration]:
    """Predicted vs measured for the runs the ``measured`` profile comes from (35 µs from N=20; 7.5 ms + 2.8 ms an output from all three)."""
    cluster = local_cluster()
    rows = []
    for fan_in, measured in LOCAL_MEASURED.items():
        p = predict(cluster, fan_in, MEASURED, "measured")
        rows.append(Calibration("riffle bench spark --nodes 3", fan_in, measured, {
            "blocks_fetched": p.merged.blocks_fetched, "map_seconds": p.merged.map_seconds,
            "reduce_seconds": p.merged.reduce_seconds, "job_time": p.ratios["job_time"]}))
    return rows


# `riffle bench spark --storage hdd --nodes 3 --maps 400 --reducers 400 --nway 5,10,20` (docs/benchmarks.md, "Storage
# profiles"): medians of 3; each node's local dir on a simulated spinning disk of its own, whose probe measured these costs
HDD_RUN = "riffle bench spark --storage hdd --nodes 3"
HDD_RUN_STORAGE = replace(MEASURED, request_seconds=8.881e-3, byte_seconds=6.695e-9)
HDD_VANILLA = {"blocks_fetched": 159_372, "shuffle_bytes": 15_049_949, "map_seconds": 13.965, "reduce_seconds": 491.763,
               "job_seconds": 506.406}
HDD_MEASURED = {
    5: {"blocks_fetched": 32_319, "map_seconds": 13.567, "reduce_seconds": 106.440, "job_seconds": 121.428},
    10: {"blocks_fetched": 16_758, "map_seconds": 12.699, "reduce_seconds": 58.941, "job_seconds": 73.382},
    20: {"blocks_fetched": 8_379, "map_seconds": 14.790, "reduce_seconds": 33.340, "job_seconds": 49.553},
}
MEASURED_TOLERANCE = 0.15  # a measured run's stage or job time the model must land within


def hdd_cluster() -> Cluster:
    """The ``hdd`` runs' cluster: three nodes of one one-core executor and one disk each, 400 × 400 blocks of the
    measured shuffle's bytes; its task time fitted to vanilla's map stage, which reads no shuffle, so every reduce
    stage and job is a prediction."""
    base = Cluster(executors=3, maps=400, reducers=400, shuffle_bytes=HDD_VANILLA["shuffle_bytes"], disks=3)
    return fit_task_seconds(base, HDD_RUN_STORAGE, HDD_VANILLA["map_seconds"], stage="map")


def measured_checks() -> list[Check]:
    """The model against the runs on simulated spinning disks: vanilla's and each N's reduce stage and job, each
    within :data:`MEASURED_TOLERANCE` of the measured median."""
    cluster, checks = hdd_cluster(), []
    arms = [(0, predict(cluster, 2, HDD_RUN_STORAGE, "hdd").vanilla, HDD_VANILLA)]
    arms += [(n, predict(cluster, n, HDD_RUN_STORAGE, "hdd").merged, m) for n, m in HDD_MEASURED.items()]
    for n, arm, measured in arms:
        for stage, key, model in (("reduce stage", "reduce_seconds", arm.reduce_seconds), ("job", "job_seconds", arm.job_seconds)):
            m = measured[key]
            checks.append(Check(f"`{HDD_RUN}`, {f'N={n}' if n else 'vanilla'}: {stage}", f"{m:.1f} s measured", model,
                                m * (1 - MEASURED_TOLERANCE), m * (1 + MEASURED_TOLERANCE), unit=" s",
                                setting=f"400 × 400, {measured['blocks_fetched']:,} blocks fetched"))
    return checks


# Fig. 4.9(a) / §4.5.2, complete merge: "the map stage time increases gradually from 174 to 343 seconds", the reduce
# stage "drops from 474 to 81 seconds" (vanilla, 40-way); the other fan-ins are only drawn, not given in the text
SYNTHETIC_STAGES = {0: (174.0, 474.0), 40: (343.0, 81.0)}  # fan-in (0: vanilla) -> map, reduce seconds


def synthetic_stages() -> list[tuple[int, tuple[float, float] | None, tuple[float, float]]]:
    """The synthetic job's stages per fan-in (0: vanilla): the thesis's (map, reduce) where its text gives them, the model's."""
    cluster, storage = synthetic_cluster(), replace(HDD, buffer_bytes=MERGER_BUFFER_PRODUCTION)
    rows = []
    for n in (0, *SYNTHETIC_FAN_INS):
        arm = predict(cluster, max(n, 2), storage)
        merged = arm.merged if n else arm.vanilla
        rows.append((n, SYNTHETIC_STAGES.get(n), (merged.map_seconds, merged.reduce_seconds)))
    return rows


def markdown() -> str:
    """The tables as docs/reproduction.md shows them."""
    lines = ["| published figure | published | model | range | setting |", "| --- | --- | --- | --- | --- |"]
    for c in published_checks():
        lines.append(f"| {c.figure} | {c.published} | **{c.predicted:,.1f}{c.unit}** | {c.low:g}–{c.high:g}{c.unit} | {c.setting} |")
    fitted = synthetic_cluster()
    lines += ["", f"| synthetic job (Fig. 4.9(a); fitted: {fitted.disks} disks, {fitted.task_seconds:.1f} s per task): thesis / model "
              "| map stage | reduce stage | job |", "| --- | --- | --- | --- |"]
    for n, thesis, (map_s, reduce_s) in synthetic_stages():
        t = thesis or (None, None)
        cells = [f"{'' if a is None else f'{a:.0f} / '}{b:.0f} s" for a, b in
                 ((t[0], map_s), (t[1], reduce_s), (None if thesis is None else sum(thesis), map_s + reduce_s))]
        lines.append(f"| {f'{n}-way' if n else 'vanilla'} | " + " | ".join(cells) + " |")
    fitted = hdd_cluster()
    lines += ["", f"| measured run on `hdd` (fitted: {fitted.task_seconds * 1e3:.0f} ms per task) | measured | model | range |",
              "| --- | --- | --- | --- |"]
    for c in measured_checks():
        lines.append(f"| {c.figure} | {c.published.removesuffix(' measured')} | **{c.predicted:,.1f}{c.unit}** | "
                     f"{c.low:,.1f}–{c.high:,.1f}{c.unit} |")
    lines += ["", "| measured run (`measured` profile) | blocks fetched | map stage | reduce stage | job ÷ vanilla |",
              "| --- | --- | --- | --- | --- |"]
    for r in calibration():
        m, p = r.measured, r.predicted
        lines.append(f"| `{r.run}`, N={r.fan_in}: measured / model | {m['blocks_fetched']:,} / {p['blocks_fetched']:,.0f} | "
                     f"{m['map_seconds']:.2f} / {p['map_seconds']:.2f} s | {m['reduce_seconds']:.2f} / {p['reduce_seconds']:.2f} s | "
                     f"{m['job_time']:.3f} / {p['job_time']:.3f} |")
    return "\n".join(lines)
