"""``riffle bench spark``: one shuffle of ``maps`` x ``reducers`` small blocks on local-cluster Spark
with real loopback mergers, run vanilla and with each N-way policy side by side in one session.

Blocks fetched come from Spark's own shuffle read metrics of the reduce stage; stage times from
Spark's stage submission/completion (both recorded by the lab's ``StageMetricsListener``). The run order is rotated across repeats so JIT warm-up and
page cache favour no configuration; medians are reported.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from riffle.driver.config import RiffleConfig
from srlab.storage.disks import LOCAL
from srlab.storage.model import DiskProfile
from srsupport.daemons import DaemonProcess
from srsupport.riffle_watch import set_merging, use_config, wait_idle

log = logging.getLogger("srlab.bench")

NEEDS_NODES = ("--storage hdd needs a standalone cluster (--nodes N): local-cluster executors share one machine's dirs, so "
               "no node would have a disk of its own")


def _shuffle_job(spark: Any, maps: int, reducers: int, rows_per_map: int, payload: int) -> tuple[int, int]:
    """Run one DataFrame shuffle; returns (map stage id, reduce stage id) of that job."""
    sc = spark.sparkContext
    before = set(sc.statusTracker().getJobIdsForGroup(None))
    df = (spark.range(0, maps * rows_per_map, 1, maps)
          .selectExpr(f"cast(id % {reducers * 7} as int) as k", f"repeat('x', {payload}) as v")
          .repartition(reducers, "k"))
    rows = df.selectExpr("k", "length(v) as n").groupBy().sum("n").collect()[0][0]
    assert rows == maps * rows_per_map * payload, rows
    jobs = sorted(set(sc.statusTracker().getJobIdsForGroup(None)) - before)
    stages = sorted(s for j in jobs for s in sc.statusTracker().getJobInfo(j).stageIds)
    return stages[0], stages[1]


def _metrics(listener: Any, stage: int) -> dict:
    """One stage's shuffle read metrics and time, as the lab's StageMetricsListener recorded them."""
    text = listener.stageJson(stage)
    if text is None:
        raise RuntimeError(f"no metrics for stage {stage}")
    m = json.loads(str(text))
    return {k: m[k] for k in ("blocks_fetched", "bytes_read", "tasks", "seconds")}


def bench_spark(maps: int, reducers: int, nways: list[int], repeats: int = 3, rows_per_map: int = 2000, payload: int = 20,
                master: str = "local-cluster[2,1,1024]", best_effort: list[float] | None = None, fsync: bool = False,
                nodes: int | None = None, storage: DiskProfile | None = None, cost_model: bool = True) -> dict:
    """With ``nodes``, an N-node standalone cluster (a merger per node, token auth) is started for the run, its
    nodes' local dirs on simulated disks of ``storage`` if given; otherwise ``master`` (local-cluster) with one
    loopback merger. ``cost_model`` False merges every group (the thesis's N-way figures), as Riffle does with
    ``spark.riffle.cost.enabled=false``."""
    if storage is not None and not nodes:
        raise ValueError(NEEDS_NODES)
    profile = LOCAL
    with ExitStack() as stack:
        # vanilla Spark never fsyncs its shuffle files; by default the mergers do not either, like for like
        fsync_flag = "--fsync" if fsync else "--no-fsync"
        conf = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(reducers),
                "spark.driver.memory": "1g", "spark.shuffle.sort.bypassMergeThreshold": "1"}
        if nodes:
            from srlab.cluster import spark_target

            target = stack.enter_context(spark_target(master, nodes, merger_args=(fsync_flag,), storage=storage))
            assert target.cluster is not None
            layout, profile = target.cluster.layout, target.cluster.storage
            master, conf = target.master, conf | target.conf
            base = RiffleConfig(enabled=True, mergers=tuple(layout.merger_address(n) for n in layout.nodes), best_effort=1.0,
                                hold_timeout=120.0, token=Path(layout.token_file).read_text().strip())
        else:
            root = Path(tempfile.mkdtemp(prefix="riffle-bench-"))
            daemon = stack.enter_context(DaemonProcess([root], fsync_flag))
            # one host emulates a cluster: blocks of the other executor travel over the network as on separate nodes
            conf |= {"spark.local.dir": str(root), "spark.shuffle.readHostLocalDisk": "false"}
            base = RiffleConfig(enabled=True, mergers=(daemon.address,), best_effort=1.0, hold_timeout=120.0)
        base = dataclasses.replace(base, cost=dataclasses.replace(base.cost, enabled=cost_model))
        runs = _run_configs(maps, reducers, nways, repeats, rows_per_map, payload, master, conf, base, best_effort, nodes or 0)
    return _summary(runs, maps, reducers, rows_per_map, payload, master, nodes, fsync, repeats) | {"storage_profile": profile}


def _run_configs(maps: int, reducers: int, nways: list[int], repeats: int, rows_per_map: int, payload: int, master: str,
                 conf: dict[str, str], base: RiffleConfig, best_effort: list[float] | None, executors: int) -> dict[str, list[dict]]:
    import riffle
    from srsupport.session import lab_instance, spark_session

    configs: list[tuple[str, RiffleConfig | None]] = [("vanilla", None)]
    configs += [(f"nway-{n}", dataclasses.replace(base, nway=n)) for n in nways]
    for frac in best_effort or []:
        configs.append((f"nway-{max(nways)}-besteffort-{frac}", dataclasses.replace(base, nway=max(nways), best_effort=frac)))
    runs: dict[str, list[dict]] = {name: [] for name, _ in configs}
    with spark_session("riffle-bench-spark", master, conf, executors) as spark:
        scheduler = riffle.attach(spark, base).scheduler
        assert scheduler is not None
        metrics = lab_instance(spark.sparkContext, "StageMetricsListener")
        spark.sparkContext._jsc.sc().addSparkListener(metrics)
        set_merging(scheduler, False)
        _shuffle_job(spark, maps, reducers, rows_per_map, payload)  # warm-up: JIT, executors, page cache
        for r in range(repeats):
            order = configs[r % len(configs):] + configs[: r % len(configs)]
            for name, cfg in order:
                use_config(scheduler, cfg or base)
                set_merging(scheduler, cfg is not None)
                t0 = time.monotonic()
                map_stage, reduce_stage = _shuffle_job(spark, maps, reducers, rows_per_map, payload)
                job = time.monotonic() - t0
                log.info("repeat %d/%d, %s: job %.2f s", r + 1, repeats, name, job)
                wait_idle(scheduler)
                last = next((s for s in scheduler.settled.values() if s.stage_id == map_stage), None) if cfg is not None else None
                runs[name].append({"job_seconds": round(job, 3), "map_stage": _metrics(metrics, map_stage),
                                   "reduce_stage": _metrics(metrics, reduce_stage),
                                   "merge": {k: getattr(last, k) for k in ("merges_requested", "merges_committed", "merges_failed",
                                                                "merges_cancelled", "hold_seconds")} if last else None})
        riffle.detach(spark)
    return runs


def _summary(runs: dict[str, list[dict]], maps: int, reducers: int, rows_per_map: int, payload: int, master: str, nodes: int | None,
             fsync: bool, repeats: int) -> dict:
    out: dict = {"maps": maps, "reducers": reducers, "rows_per_map": rows_per_map, "payload_bytes": payload, "master": master,
                 "nodes": nodes, "merger_fsync": fsync, "host_local_disk_reads": False,
                 "repeats": repeats, "configs": {}}
    for name, rs in runs.items():
        out["configs"][name] = {
            "blocks_fetched": int(statistics.median(r["reduce_stage"]["blocks_fetched"] for r in rs)),
            "reduce_stage_seconds": round(statistics.median(r["reduce_stage"]["seconds"] for r in rs), 3),
            "map_stage_seconds": round(statistics.median(r["map_stage"]["seconds"] for r in rs), 3),
            "job_seconds": round(statistics.median(r["job_seconds"] for r in rs), 3),
            "hold_seconds": (round(statistics.median(r["merge"]["hold_seconds"] or 0.0 for r in rs), 4) if rs[0]["merge"] else None),
            "runs": rs,
        }
    v = out["configs"]["vanilla"]
    for name, c in out["configs"].items():
        if name != "vanilla":
            c["blocks_fetched_reduction_x"] = round(v["blocks_fetched"] / max(c["blocks_fetched"], 1), 2)
            c["reduce_stage_speedup_x"] = round(v["reduce_stage_seconds"] / c["reduce_stage_seconds"], 3)
            c["job_time_ratio"] = round(c["job_seconds"] / v["job_seconds"], 3)
    return out
