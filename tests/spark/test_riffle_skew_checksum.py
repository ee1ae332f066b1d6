"""Riffle with AQE's skew splitting, local shuffle reader and coalescing, and with Spark's order-independent
row checksums, on real local-cluster Spark and a real merger: results equal vanilla Spark's, a skewed
partition's largest split reads no more than vanilla's, and a corrupted merged block is caught."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyspark
import pytest

import riffle
from riffle.driver.config import RiffleConfig
from riffle.driver.cost import CostConfig
from riffle.driver.settled import SettledShuffle
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from sparkshim.bridge import major_minor
from srlab.riffle_bench.skew import stage_read
from srsupport.riffle_watch import checksum_report, set_merging, wait_idle
from srsupport.session import lab_instance

SKEW_SPLIT_TOLERANCE = 1.25  # the largest split with Riffle, as a multiple of vanilla's

SKEW_CONF = {"spark.sql.adaptive.enabled": "true", "spark.sql.autoBroadcastJoinThreshold": "-1",
             "spark.sql.adaptive.skewJoin.enabled": "true", "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "2",
             "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "100", "spark.sql.adaptive.advisoryPartitionSizeInBytes": "200",
             "spark.sql.adaptive.coalescePartitions.enabled": "false", "spark.sql.shuffle.partitions": "8"}
CHECKSUM_CONF = {"spark.sql.shuffle.orderIndependentChecksum.enabled": "true",
                 "spark.sql.shuffle.orderIndependentChecksum.enableFullRetryOnMismatch": "true"}


@pytest.fixture(scope="module")
def scheduler(spark, merger):
    config = RiffleConfig(enabled=True, mergers=(merger.address,), nway=2, best_effort=1.0, hold_timeout=30.0, rpc_timeout=30.0, cost=CostConfig(enabled=False))
    s = riffle.attach(spark, config).scheduler
    assert s is not None
    set_merging(s, True)
    yield s
    riffle.detach(spark)


@pytest.fixture(scope="module")
def stage_metrics(spark):
    listener = lab_instance(spark.sparkContext, "StageMetricsListener")
    spark.sparkContext._jsc.sc().addSparkListener(listener)
    yield listener
    spark.sparkContext._jsc.sc().removeSparkListener(listener)


@contextmanager
def sql_conf(spark: Any, conf: dict[str, str]) -> Iterator[None]:
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k in conf:
            spark.conf.unset(k)


def jobs_of(spark: Any, fn: Callable[[], Any]) -> tuple[Any, list[int]]:
    """``fn()`` and the ids of the Spark jobs it ran."""
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    result = fn()
    return result, sorted(set(tracker.getJobIdsForGroup(None)) - before)


def stages_of(spark: Any, jobs: list[int]) -> list[int]:
    tracker = spark.sparkContext.statusTracker()
    return sorted({s for j in jobs for s in tracker.getJobInfo(j).stageIds})


def run(spark: Any, scheduler: Any, fn: Callable[[], Any], merging: bool) -> tuple[Any, list[int], list[dict]]:
    """``fn()`` with merging on or off: its result, its jobs, and the records of the shuffles Riffle settled for it."""
    set_merging(scheduler, merging)
    before = set(scheduler.settled)
    result, jobs = jobs_of(spark, fn)
    assert wait_idle(scheduler, 60)
    return result, jobs, [v for k, v in scheduler.settled.items() if k not in before]


def committed(stats: list[SettledShuffle]) -> int:
    return sum(s.merges_committed for s in stats)


def merged_data_files(root: Path, shuffle_id: int) -> list[Path]:
    return [p for p in root.rglob(f"shuffle_{shuffle_id}_*_0.data") if int(p.name.split("_")[2]) >= SYNTHETIC_MAP_ID_BASE]


def test_skewed_partition_is_still_split_evenly(spark, scheduler, stage_metrics):
    """AQE splits the skewed partition by map-index ranges; committed groups never straddle a range, so
    the largest split reads about what it reads without Riffle, whether AQE plans before or after the commit."""
    with sql_conf(spark, SKEW_CONF):
        skewed = spark.range(0, 60000, 1, 16).selectExpr("case when id % 10 < 8 then 0 else id % 40 end as k", "id as v")
        small = spark.range(0, 40, 1, 16).selectExpr("id as k", "id * 3 as w")
        plans: list[str] = []

        def fn():  # a new DataFrame per run: a reused one would reuse its shuffle files
            df = skewed.join(small, "k")
            rows = sorted(df.collect())
            plans.append(df._jdf.queryExecution().executedPlan().toString())
            return rows

        vanilla, vanilla_jobs, _ = run(spark, scheduler, fn, merging=False)
        merged, merged_jobs, stats = run(spark, scheduler, fn, merging=True)
    assert merged == vanilla
    assert committed(stats) > 0, stats
    for plan in plans:
        assert "SortMergeJoin(skew=true)" in plan and "AQEShuffleRead skewed" in plan, plan
    join_vanilla = stage_read(spark, stage_metrics, stages_of(spark, vanilla_jobs)[-1])
    join_merged = stage_read(spark, stage_metrics, stages_of(spark, merged_jobs)[-1])
    assert join_vanilla["tasks"] > 8 and join_merged["tasks"] > 8, (join_vanilla, join_merged)  # the skewed partition was split
    assert abs(join_merged["bytes_read"] - join_vanilla["bytes_read"]) <= 0.02 * join_vanilla["bytes_read"]  # separate runs' files
    assert join_merged["max_task_bytes_read"] <= SKEW_SPLIT_TOLERANCE * join_vanilla["max_task_bytes_read"], (join_vanilla, join_merged)


def test_local_shuffle_reader_and_coalescing_on_merged_shuffles(spark, scheduler):
    """A join AQE turns into a broadcast join at run time reads the merged probe side through the local
    shuffle reader (by map index); an aggregate's many small partitions are coalesced."""
    conf = {"spark.sql.adaptive.enabled": "true", "spark.sql.autoBroadcastJoinThreshold": "10KB",
            "spark.sql.adaptive.localShuffleReader.enabled": "true", "spark.sql.adaptive.coalescePartitions.enabled": "true",
            "spark.sql.shuffle.partitions": "24"}
    with sql_conf(spark, conf):
        left = spark.range(0, 20000, 1, 12).selectExpr("id % 97 as k", "id as v")
        right = spark.range(0, 100000, 1, 12).where("id % 5000 = 0").selectExpr("id % 97 as k", "id as w")  # small only at run time
        for build, expect in ((lambda: left.join(right, "k"), "AQEShuffleRead local"),
                              (lambda: left.groupBy("k").agg({"v": "sum", "*": "count"}), "AQEShuffleRead coalesced")):
            plans: list[str] = []

            def fn(build=build, plans=plans):
                df = build()
                rows = sorted(df.collect())
                plans.append(df._jdf.queryExecution().executedPlan().toString())
                return rows

            vanilla, _, _ = run(spark, scheduler, fn, merging=False)
            merged, _, stats = run(spark, scheduler, fn, merging=True)
            assert merged == vanilla
            assert committed(stats) > 0, stats
            assert all(expect in p for p in plans), plans


def stage_attempts(spark: Any, jobs: list[int]) -> list[int]:
    tracker = spark.sparkContext.statusTracker()
    return [info.currentAttemptId for info in (tracker.getStageInfo(s) for s in stages_of(spark, jobs)) if info is not None]


@pytest.mark.skipif(major_minor(pyspark.__version__) < (4, 1), reason="Spark 4.0's map statuses carry no row checksum")
def test_row_checksums_pass_on_merged_shuffles(spark, scheduler):
    """With order-independent checksums on, every status carries one, merged shuffles are committed and no
    stage is retried; a corrupted merged block is caught by the fetch, its maps re-run, and their checksums
    still match what the merged statuses kept (no checksum-mismatch retry), with the same rows."""
    with sql_conf(spark, CHECKSUM_CONF | {"spark.sql.adaptive.enabled": "true", "spark.sql.autoBroadcastJoinThreshold": "-1"}):
        left = spark.range(0, 20000, 1, 12).selectExpr("id % 97 as k", "id as v")
        right = spark.range(0, 600, 1, 12).selectExpr("id % 97 as k", "id * 2 as w")
        df = left.join(right, "k").groupBy("k").agg({"w": "sum", "v": "max"})
        vanilla, _, _ = run(spark, scheduler, lambda: sorted(left.join(right, "k").groupBy("k").agg({"w": "sum", "v": "max"}).collect()),
                            merging=False)
        merged, jobs, stats = run(spark, scheduler, lambda: sorted(df.collect()), merging=True)
        assert merged == vanilla
        assert committed(stats) > 0, stats
        assert max(stage_attempts(spark, jobs)) == 0
        merged_shuffles = [s.shuffle_id for s in stats if s.merges_committed > 0]
        for sid in merged_shuffles:
            report = checksum_report(scheduler, sid)
            assert report["statuses"] > 0 and report["nonzero_checksums"] == report["statuses"], report
            assert report["mismatched_indexes"] == 0, report

        root = Path(spark.sparkContext.getConf().get("spark.local.dir"))
        corrupted = [p for sid in merged_shuffles for p in merged_data_files(root, sid)]
        assert corrupted
        for p in corrupted:  # in place, after the commit and before the next read of the same shuffle
            data = bytearray(p.read_bytes())
            lo, hi = len(data) // 3, max(len(data) // 3 + 1, 2 * len(data) // 3)
            data[lo:hi] = bytes(b ^ 0xFF for b in data[lo:hi])
            p.write_bytes(bytes(data))
        again, jobs, _ = run(spark, scheduler, lambda: sorted(df.collect()), merging=True)  # same DataFrame: same shuffle files
        assert again == vanilla
        assert max(stage_attempts(spark, jobs)) >= 1, "the corrupted merged block was not detected"
        for sid in merged_shuffles:
            assert checksum_report(scheduler, sid)["mismatched_indexes"] == 0, checksum_report(scheduler, sid)
