"""``riffle bench sql --suite tpcds``: every TPC-DS query on a 3-node loopback cluster (a merger per node,
token + TLS), with Riffle off and on side by side in one session.

Each query runs once per configuration per repeat, the configurations back to back and their order
alternated across repeats, so page cache, JIT and the other tenants of the machine favour neither. Per
query: the result hash (:func:`srlab.riffle_bench.tpcds_queries.result_hash`), wall time, shuffle bytes
and blocks fetched (Spark's shuffle read metrics of the query's stages, recorded by the lab's
``StageMetricsListener``), and what Riffle did to the query's shuffles; medians over the repeats.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import random
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from riffle.driver import cost
from riffle.driver.merges import MergeState
from srlab.riffle_bench import tpcds_queries as tq
from srlab.storage.model import DiskProfile
from srsupport.riffle_watch import set_merging, use_config, wait_idle

log = logging.getLogger("srlab.tpcds")
CONFIGS = ("off", "on", "always")  # vanilla; Riffle with its cost model; Riffle merging every group
EXECUTOR_MEMORY = "900m"
# Small input splits: a fact table's scan is many map tasks, so its shuffles have many small outputs, the
# regime Riffle is for (thesis §4.1: many small tasks); both configurations run with it.
SESSION_CONF = {"spark.sql.files.maxPartitionBytes": "1m"}


def _query_stages(sc: Any, group: str) -> list[int]:
    tracker = sc.statusTracker()
    return sorted({s for j in tracker.getJobIdsForGroup(group) for s in (tracker.getJobInfo(j).stageIds if tracker.getJobInfo(j) else [])})


def _stage_metrics(listener: Any, stages: list[int]) -> dict:
    """Shuffle read metrics summed over the query's stages that ran (skipped stages have none)."""
    total = {"blocks_fetched": 0, "shuffle_bytes": 0}
    deadline = time.monotonic() + 5.0
    for stage in stages:
        while True:  # the listener bus delivers the last task ends a moment after the job returns
            text = listener.stageJson(stage)
            m = json.loads(str(text)) if text is not None else None
            if m is None or m["seconds"] >= 0 or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if m is not None:
            total["blocks_fetched"] += int(m["blocks_fetched"])
            total["shuffle_bytes"] += int(m["bytes_read"])
    return total


def _riffle_metrics(scheduler: Any, stages: list[int], before: set[int]) -> dict:
    """What Riffle did to the query's shuffles: groups merged and skipped, and the fraction of map outputs merged."""
    stats = [st for sid, st in list(scheduler.settled.items()) if sid not in before and st.stage_id in set(stages)]
    shuffles = [scheduler.shuffles[st.shuffle_id] for st in stats if st.shuffle_id in scheduler.shuffles]
    outputs = sum(st.map_outputs for st in stats)
    merged = 0
    for s in shuffles:
        sizes = [len(m.members) for m in s.merges if m.state is MergeState.DONE]
        merged += round(s.committed * sum(sizes) / len(sizes)) if sizes else 0
    decisions: Counter[str] = Counter()
    for s in shuffles:
        decisions.update(d.reason for d in s.decisions)
    return {"shuffles_held": len(stats), "merges_committed": sum(st.merges_committed for st in stats),
            "merged_fraction": round(merged / outputs, 3) if outputs else 0.0,
            "merged_shuffle": any(st.merges_committed > 0 for st in stats), "cost_decisions": dict(decisions)}


def _run_query(spark: Any, scheduler: Any, listener: Any, n: int, sql: str, config: str, tag: str) -> dict:
    sc = spark.sparkContext
    group = f"tpcds-q{n}-{config}-{tag}"
    set_merging(scheduler, config != "off")
    if config != "off":
        use_config(scheduler, _with_cost(scheduler.config, config == "on"))
    before = set(scheduler.settled)
    sc.setJobGroup(group, f"TPC-DS q{n} ({config})")
    started = time.perf_counter()
    rows = spark.sql(tq.to_spark_sql(sql)).collect()
    seconds = time.perf_counter() - started
    idle = wait_idle(scheduler, 120)
    stages = _query_stages(sc, group)
    out = {"seconds": round(seconds, 3), "hash": tq.result_hash(rows, tq.ordered_result(sql)), "rows": len(rows), "idle": idle}
    out |= _stage_metrics(listener, stages)
    if config != "off":
        out |= _riffle_metrics(scheduler, stages, before)
    return out


def _with_cost(config: Any, enabled: bool) -> Any:
    """``config`` with the cost model on ("on") or off ("always": every group the policy forms is merged)."""
    return dataclasses.replace(config, cost=dataclasses.replace(config.cost, enabled=enabled))


def bench_tpcds(scale: float, nodes: int = 3, repeats: int = 3, configs: tuple[str, ...] = ("off", "on"),
                data_dir: Path | None = None, queries: list[int] | None = None, extra_conf: dict[str, str] | None = None,
                budget_minutes: float | None = None, raw_out: Path | None = None, storage: DiskProfile | None = None) -> dict:
    """Runs the suite; returns the report (see docs/benchmarks.md, "TPC-DS"). Past ``budget_minutes`` no further
    query starts (the report lists them); ``raw_out`` gets every run so far after each query. ``storage``: every
    node's local dir a simulated disk of that profile."""
    import riffle
    from srlab.cluster.harness import running_cluster, wait_executors
    from srsupport.session import lab_instance, shutdown_gateway, spark_session

    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or "off" not in configs:
        raise ValueError(f"configs must include 'off' and come from {CONFIGS}: {configs}")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    data_root = Path(data_dir or Path(tempfile.gettempdir()) / "riffle-tpcds")
    t0 = time.perf_counter()
    data = tq.generate(data_root, scale)
    gen_seconds = time.perf_counter() - t0
    wanted = [(n, q) for n, q in tq.duckdb_queries() if (queries is None or n in queries) and n not in tq.LEFT_OUT]
    runs: dict[int, dict[str, list[dict]]] = {n: {c: [] for c in configs} for n, _ in wanted}
    skipped: list[int] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="riffle-tpcds-cluster-") as base, \
            running_cluster(nodes=nodes, base_dir=base, tls=True, memory_per_node="1g", merger_args=("--no-fsync",),
                            storage=storage) as cluster:
        profile = cluster.storage
        settings = cluster.driver_conf() | {"spark.riffle.enabled": "true", "spark.executor.memory": EXECUTOR_MEMORY,
                                                   "spark.driver.memory": "1g"} | SESSION_CONF | (extra_conf or {})
        try:
            with spark_session("riffle-bench-tpcds", settings.pop("spark.master"), settings) as spark:
                wait_executors(spark.sparkContext, nodes)
                scheduler = riffle.attach(spark).scheduler
                if scheduler is None:
                    raise RuntimeError("spark.riffle.enabled=true did not attach Riffle")
                probed = cost.probe(cluster.layout.nodes[0].local_dir)
                listener = lab_instance(spark.sparkContext, "StageMetricsListener")
                spark.sparkContext._jsc.sc().addSparkListener(listener)
                for table in tq.tables(data):
                    spark.read.parquet(str(data / table)).createOrReplaceTempView(table)
                log.info("TPC-DS scale %g: %d queries x %d configurations x %d repeats (warm-up first)", scale, len(wanted),
                         len(configs), repeats)
                for n, sql in wanted[:3]:  # warm-up: JIT, executors' page cache, each configuration once
                    for config in configs:
                        _run_query(spark, scheduler, listener, n, sql, config, "warmup")
                for i, (n, sql) in enumerate(wanted):  # a query's repeats back to back: a cut-off run has whole queries
                    if budget_minutes and time.perf_counter() - started > budget_minutes * 60:
                        skipped.append(n)
                        continue
                    for r in range(repeats):
                        order = configs[(r + i) % len(configs):] + configs[:(r + i) % len(configs)]
                        for config in order:
                            runs[n][config].append(_run_query(spark, scheduler, listener, n, sql, config, str(r)))
                    if raw_out:
                        Path(raw_out).write_text(json.dumps({str(k): v for k, v in runs.items() if v[configs[0]]}))
                    log.info("q%d (%d/%d, %.0f min so far): %s", n, i + 1, len(wanted), (time.perf_counter() - started) / 60,
                             ", ".join(f"{c} {_median([x['seconds'] for x in runs[n][c]]):.1f} s" for c in configs))
                riffle.detach(spark)
        finally:
            shutdown_gateway()
    cost_model = {"probed_request_seconds": probed.request_seconds, "probed_byte_seconds": probed.byte_seconds,
               "model": dataclasses.asdict(scheduler.config.cost.storage)}
    runs = {n: v for n, v in runs.items() if n not in skipped}
    head = {"suite": "tpcds", "scale": scale, "nodes": nodes, "tls": True, "token": True, "repeats": repeats,
            "generate_seconds": round(gen_seconds, 1), "bench_seconds": round(time.perf_counter() - started, 1),
            "conf": SESSION_CONF | (extra_conf or {}), "storage": cost_model, "storage_profile": profile,
            "queries_not_run_over_budget": skipped,
            "queries_left_out": {str(k): v for k, v in tq.LEFT_OUT.items()}}
    return summarize(runs, configs, head)


def summarize_raw(path: Path) -> dict:
    """The report of a ``--raw-out`` file: the same figures as the run's, without its head (scale, timings)."""
    try:
        raw = json.loads(Path(path).read_text())
        runs = {int(n): by_config for n, by_config in raw.items()}
        configs = tuple(next(iter(runs.values())))
    except (OSError, ValueError, StopIteration, AttributeError) as exc:
        raise ValueError(f"{path} is not a raw TPC-DS run file (--raw-out): {exc}") from exc
    if "off" not in configs:
        raise ValueError(f"{path} has no 'off' runs to compare with")
    return summarize(runs, configs, {"suite": "tpcds", "raw": str(path)})


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def slower_in_every_repeat(mine: list[float], vanilla: list[float]) -> bool:
    """Whether every run of a query was slower than every vanilla run of it: a sign of a real slowdown that, with
    ``r`` runs each and no true difference, happens by chance once in ``C(2r, r)`` queries (20 for r = 3)."""
    return bool(mine) and bool(vanilla) and min(mine) > max(vanilla)


def noise_range(pairs: list[tuple[list[float], list[float]]], rounds: int = 2000, seed: int = 1) -> tuple[float, float, float]:
    """How far the total-time ratio (sum of one side's per-query medians over the other's) strays with no real
    difference: each query's runs are shuffled between the two sides ``rounds`` times (a permutation test).
    Returns the 2.5% and 97.5% points of those ratios and the share at or above the observed ratio. Pure."""
    def ratio(sides: list[tuple[list[float], list[float]]]) -> float:
        return sum(_median(b) for _, b in sides) / max(sum(_median(a) for a, _ in sides), 1e-9)

    rng, observed, ratios = random.Random(seed), ratio(pairs), []
    for _ in range(rounds):
        shuffled = []
        for a, b in pairs:
            runs = a + b
            rng.shuffle(runs)
            shuffled.append((runs[:len(a)], runs[len(a):]))
        ratios.append(ratio(shuffled))
    ratios.sort()
    return ratios[int(0.025 * rounds)], ratios[int(0.975 * rounds) - 1], sum(r >= observed for r in ratios) / rounds


def summarize(runs: dict[int, dict[str, list[dict]]], configs: tuple[str, ...], head: dict) -> dict:
    """Medians per query and configuration, and the headline figures of each configuration against ``off``. Pure.

    Besides the medians, it says how much a query's time varies by itself (vanilla's spread between its own
    repeats) and how many queries were slower in every repeat against how many would be by chance, because
    on a shared two-core machine a short query's repeats differ by more than the 10% a target asks about."""
    per_query: dict[str, dict] = {}
    totals: dict[str, dict] = {c: {"seconds": 0.0, "blocks_fetched": 0, "shuffle_bytes": 0} for c in configs}
    headline: dict[str, dict] = {}
    for n, by_config in sorted(runs.items()):
        row: dict[str, Any] = {}
        for c in configs:
            rs = by_config[c]
            hashes = sorted({r["hash"] for r in rs})
            row[c] = {"hash": hashes[0] if len(hashes) == 1 else hashes, "seconds": round(_median([r["seconds"] for r in rs]), 3),
                      "shuffle_bytes": int(_median([r["shuffle_bytes"] for r in rs])),
                      "blocks_fetched": int(_median([r["blocks_fetched"] for r in rs])), "rows": rs[0]["rows"]}
            if c != "off":
                row[c] |= {"merged_fraction": round(_median([r["merged_fraction"] for r in rs]), 3),
                           "merges_committed": int(_median([r["merges_committed"] for r in rs])),
                           "merged_shuffle": any(r["merged_shuffle"] for r in rs),
                           "cost_decisions": dict(sum((Counter(r["cost_decisions"]) for r in rs), Counter()))}
            totals[c]["seconds"] += row[c]["seconds"]
            totals[c]["blocks_fetched"] += row[c]["blocks_fetched"]
            totals[c]["shuffle_bytes"] += row[c]["shuffle_bytes"]
        off_hashes = {r["hash"] for r in by_config["off"]}
        row["off_deterministic"] = len(off_hashes) == 1
        for c in configs:
            if c != "off":
                row[c]["identical"] = {r["hash"] for r in by_config[c]} == off_hashes and len(off_hashes) == 1
                row[c]["time_ratio"] = round(row[c]["seconds"] / max(row["off"]["seconds"], 1e-3), 3)
        per_query[str(n)] = row
    for c in configs:
        if c == "off":
            continue
        merged = [q for q in per_query.values() if q[c]["merged_shuffle"]]
        off_blocks = sum(q["off"]["blocks_fetched"] for q in merged)
        on_blocks = sum(q[c]["blocks_fetched"] for q in merged)
        ratios = {n: q[c]["time_ratio"] for n, q in per_query.items()}
        worst = max(ratios, key=lambda k: ratios[k]) if ratios else None
        decisions = sum((Counter(q[c]["cost_decisions"]) for q in per_query.values()), Counter())
        repeats = min((min(len(v[c]), len(v["off"])) for v in runs.values()), default=0)
        every = sorted((str(n) for n, v in runs.items()
                        if slower_in_every_repeat([r["seconds"] for r in v[c]], [r["seconds"] for r in v["off"]])), key=int)
        low, high, p = noise_range([([r["seconds"] for r in v["off"]], [r["seconds"] for r in v[c]]) for v in runs.values()]) \
            if runs else (math.nan, math.nan, math.nan)
        headline[c] = {
            "identical": all(q[c]["identical"] for q in per_query.values()),
            "not_identical": [n for n, q in per_query.items() if not q[c]["identical"]],
            "total_time_ratio": round(totals[c]["seconds"] / max(totals["off"]["seconds"], 1e-3), 3),
            "max_query_time_ratio": ratios[worst] if worst else None, "slowest_query": worst,
            "queries_over_10pct_slower": sorted((n for n, r in ratios.items() if r > 1.10), key=int),
            "queries_slower_in_every_repeat": every,
            "expected_by_chance": round(len(runs) / math.comb(2 * repeats, repeats), 1) if repeats else None,
            "total_time_ratio_if_no_difference_95pct": [round(low, 3), round(high, 3)],
            "share_of_no_difference_ratios_at_or_above": round(p, 3),
            "merged_queries": len(merged),
            "merged_blocks_fetched_reduction_x": round(off_blocks / on_blocks, 2) if on_blocks else None,
            "cost_decisions": dict(decisions),
        }
    spreads = [max(xs) / max(min(xs), 1e-3) - 1 for xs in ([r["seconds"] for r in v["off"]] for v in runs.values()) if len(xs) > 1]
    head = head | {"vanilla_repeat_spread_median": round(_median(spreads), 3) if spreads else None}
    top = headline.get("on") or next(iter(headline.values()), {})
    return head | {k: top.get(k) for k in ("identical", "total_time_ratio", "max_query_time_ratio", "merged_blocks_fetched_reduction_x")} | {
        "configs": headline, "totals": {c: {k: round(v, 3) for k, v in t.items()} for c, t in totals.items()}, "queries": per_query}
