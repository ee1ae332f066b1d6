"""``riffle bench skew``: a skewed sort-merge join under AQE's skew-join splitting on local-cluster Spark
with a real loopback merger, vanilla and with Riffle side by side in one session.

AQE splits the skewed partition into map-index ranges; a merged group publishes its bytes at one map
index, so a group straddling a split boundary would pile several splits' bytes into one task. The
figure is the most bytes one task of the join stage read (the largest split), from Spark's own
shuffle read metrics (the lab's ``StageMetricsListener``), with Riffle and without, and their ratio.
Each run uses a new DataFrame (new shuffle files); the order alternates across repeats; medians are
reported. The result's row count and hash must be equal in both modes.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from riffle.driver.config import RiffleConfig
from riffle.driver.cost import CostConfig
from srsupport.daemons import DaemonProcess
from srsupport.riffle_watch import set_merging, wait_idle


def skew_conf(reducers: int, advisory: str) -> dict[str, str]:
    """AQE with skew-join splitting on, coalescing off (so every non-skewed partition is one task), no broadcast."""
    return {"spark.sql.adaptive.enabled": "true", "spark.sql.adaptive.skewJoin.enabled": "true",
            "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "2", "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "1KB",
            "spark.sql.adaptive.advisoryPartitionSizeInBytes": advisory, "spark.sql.adaptive.coalescePartitions.enabled": "false",
            "spark.sql.autoBroadcastJoinThreshold": "-1", "spark.sql.shuffle.partitions": str(reducers)}


def _frames(spark: Any, maps: int, rows_per_map: int, skew: float, keys: int, payload: int) -> tuple[Any, Any]:
    """A big side where a ``skew`` fraction of rows has key 0, and a small side with one row per key."""
    hot = int(round(skew * 1000))
    big = spark.range(0, maps * rows_per_map, 1, maps).selectExpr(
        f"case when (id * 7919) % 1000 < {hot} then 0 else id % {keys} end as k", f"repeat('x', {payload}) as v", "id")
    small = spark.range(0, keys, 1, maps).selectExpr("id as k", "id * 3 as w")
    return big, small


def _join_stage(spark: Any, fn: Any) -> int:
    """Runs ``fn()``; returns the id of its last stage (the join's result stage)."""
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    fn()
    jobs = sorted(set(tracker.getJobIdsForGroup(None)) - before)
    return max(s for j in jobs for s in tracker.getJobInfo(j).stageIds)


def stage_read(spark: Any, listener: Any, stage: int, timeout: float = 30.0) -> dict:
    """The stage's shuffle read metrics (``StageMetricsListener.stageJson``) once every finished task's end
    event reached the listener: the listener bus delivers them after the job returns."""
    info = spark.sparkContext.statusTracker().getStageInfo(stage)
    deadline = time.monotonic() + timeout
    while True:
        text = listener.stageJson(stage)
        m = json.loads(str(text)) if text is not None else None
        if m is not None and info is not None and m["tasks"] >= info.numCompletedTasks:
            return m
        if time.monotonic() > deadline:
            raise RuntimeError(f"no complete metrics for stage {stage}: {m}")
        time.sleep(0.05)


def _one_run(spark: Any, scheduler: Any, listener: Any, merging: bool, args: tuple, args_reducers: int) -> dict:
    """One noop write of the join; ``skew_split``: the join ran more tasks than partitions (AQE split a skewed one)."""
    set_merging(scheduler, merging)
    before = set(scheduler.settled)
    big, small = _frames(spark, *args)
    df = big.join(small, "k")
    stage = _join_stage(spark, lambda: df.write.format("noop").mode("overwrite").save())
    wait_idle(scheduler)
    set_merging(scheduler, False)
    m = stage_read(spark, listener, stage)
    stats = [v for k, v in scheduler.settled.items() if k not in before]
    done = sum(s.merges_requested - s.merges_cancelled - s.merges_failed for s in stats)
    committed = sum(s.merges_committed for s in stats)
    return {"largest_split_bytes": m["max_task_bytes_read"], "join_bytes_read": m["bytes_read"], "join_tasks": m["tasks"],
            "skew_split": m["tasks"] > args_reducers, "merges_finished": done, "merges_committed": committed,
            "left_unmerged_at_commit": done - committed}


def _result(spark: Any, scheduler: Any, merging: bool, args: tuple) -> list:
    set_merging(scheduler, merging)
    big, small = _frames(spark, *args)
    row = big.join(small, "k").selectExpr("count(*) as n", "bit_xor(xxhash64(k, v, id, w)) as h").collect()[0]
    wait_idle(scheduler)
    return [int(row["n"]), int(row["h"])]


def bench_skew(maps: int = 32, rows_per_map: int = 20000, reducers: int = 16, skew: float = 0.6, keys: int = 64, payload: int = 20,
               advisory: str = "1MB", nway: int = 4, repeats: int = 3, master: str = "local-cluster[2,1,1024]") -> dict:
    import riffle
    from srsupport.session import lab_instance, spark_session

    args = (maps, rows_per_map, skew, keys, payload)
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="riffle-bench-skew-")))
        daemon = stack.enter_context(DaemonProcess([root], "--no-fsync"))
        conf = skew_conf(reducers, advisory) | {"spark.local.dir": str(root), "spark.driver.memory": "1g",
                                                 "spark.shuffle.readHostLocalDisk": "false"}
        config = RiffleConfig(enabled=True, mergers=(daemon.address,), nway=nway, best_effort=1.0, hold_timeout=120.0, cost=CostConfig(enabled=False))
        runs: dict[str, list[dict]] = {"vanilla": [], "riffle": []}
        with spark_session("riffle-bench-skew", master, conf) as spark:
            scheduler = riffle.attach(spark, config).scheduler
            assert scheduler is not None
            listener = lab_instance(spark.sparkContext, "StageMetricsListener")
            spark.sparkContext._jsc.sc().addSparkListener(listener)
            results = {"vanilla": _result(spark, scheduler, False, args), "riffle": _result(spark, scheduler, True, args)}
            for r in range(repeats):
                for name in (("vanilla", "riffle") if r % 2 == 0 else ("riffle", "vanilla")):
                    runs[name].append(_one_run(spark, scheduler, listener, name == "riffle", args, reducers))
            riffle.detach(spark)
    med = {name: statistics.median(x["largest_split_bytes"] for x in rs) for name, rs in runs.items()}
    return {"maps": maps, "rows_per_map": rows_per_map, "reducers": reducers, "skew": skew, "keys": keys, "payload_bytes": payload,
            "advisory_partition_size": advisory, "nway": nway, "repeats": repeats, "master": master,
            "results_identical": results["vanilla"] == results["riffle"],
            "largest_split_bytes": {"vanilla": med["vanilla"], "riffle": med["riffle"]},
            "ratio": round(med["riffle"] / med["vanilla"], 3) if med["vanilla"] else None, "runs": runs}
