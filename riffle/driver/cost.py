"""Whether merging a group of map outputs pays (thesis §4.3.5, "Analysis of I/O operation savings"). Pure.

A merge of ``k`` outputs saves the reducers ``(k - 1)`` read requests per reduce task that fetches from
them, and costs a sequential read and write of the group's ``T`` bytes (``2 T / s`` requests with the
merger's buffer ``s``) plus a fixed cost per merge (its RPCs and commit) and one per output merged. The thesis counts requests; on
storage where a request is cheap the bytes dominate, so both are priced in seconds with this node's
storage parameters. Reduce tasks are an RDD shuffle's partitions; a Spark SQL exchange's, when adaptive
execution coalesces them, are about as many as the coalescing would make of the shuffle's estimated bytes.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from riffle.storage_cost import NodeStorage, StorageCost
from riffle.storage_cost import probe as probe  # defined once there (a merger measures its node with it); the model's callers find it here
from riffle.units import parse_spark_size
from sparkshim.wording import counted

WORTH_IT = "worth_it"
NOT_WORTH_IT = "not_worth_it"


@dataclass(frozen=True)
class CostConfig:
    """``spark.riffle.cost.*``: on by default (off: every group the policy forms is merged, every mergeable shuffle held).
    ``storage`` is every node's unless its merger reports its own (:func:`node_storage_cost`); a time per request or
    bandwidth set in the conf (``*_set``) is every node's whatever its merger reports."""

    enabled: bool = True
    storage: StorageCost = StorageCost()
    request_time_set: bool = False  # spark.riffle.cost.requestTime was given
    bandwidth_set: bool = False  # spark.riffle.cost.bandwidth was given
    coalesce: bool = True  # a SQL exchange's partitions are coalesced (adaptive execution, on by Spark's defaults)
    advisory_bytes: int = 64 << 20  # spark.sql.adaptive.advisoryPartitionSizeInBytes
    min_partition_bytes: int = 1 << 20  # spark.sql.adaptive.coalescePartitions.minPartitionSize
    parallelism_first: bool = True  # spark.sql.adaptive.coalescePartitions.parallelismFirst


@dataclass(frozen=True)
class Decision:
    merge: bool
    reason: str  # WORTH_IT or NOT_WORTH_IT
    saved_seconds: float
    cost_seconds: float


def for_shuffle(base: CostConfig, sql: bool, adaptive: Mapping[str, str]) -> CostConfig:
    """The model for one shuffle: an RDD shuffle's reducers are never coalesced; a Spark SQL exchange's are when its
    job's ``spark.sql.adaptive.*`` (``adaptive``, the session's settings) or else the application's conf say so. A value
    Spark would not have accepted leaves the application's."""
    if not sql:
        return replace(base, coalesce=False)
    prefix = "spark.sql.adaptive."

    def flag(key: str, default: bool = True) -> bool:  # Spark's default for both coalescing switches
        value = adaptive.get(prefix + key)
        return default if value is None else value.strip().lower() == "true"

    def size(key: str, default: int) -> int:
        try:
            return parse_spark_size(adaptive[prefix + key]) if prefix + key in adaptive else default
        except (ValueError, argparse.ArgumentTypeError):
            return default

    keys = (prefix + "enabled", prefix + "coalescePartitions.enabled")
    coalesce = flag("enabled") and flag("coalescePartitions.enabled") if any(k in adaptive for k in keys) else base.coalesce
    return replace(base, coalesce=coalesce, advisory_bytes=size("advisoryPartitionSizeInBytes", base.advisory_bytes),
                   min_partition_bytes=size("coalescePartitions.minPartitionSize", base.min_partition_bytes),
                   parallelism_first=flag("coalescePartitions.parallelismFirst", base.parallelism_first))


def reduce_tasks(partitions: int, shuffle_bytes: float, config: CostConfig, parallelism: int) -> int:
    """Reduce tasks that will read the shuffle: its partitions, or as many as adaptive execution's coalescing
    of ``shuffle_bytes`` makes (Spark's target size: the advisory size, lowered to spread the bytes over
    the default parallelism when parallelism comes first, never under the minimum partition size)."""
    partitions = max(int(partitions), 1)
    if not config.coalesce:
        return partitions
    target = float(config.advisory_bytes)
    if config.parallelism_first:
        target = min(target, max(shuffle_bytes / max(parallelism, 1), float(config.min_partition_bytes)))
    return max(1, min(partitions, math.ceil(max(shuffle_bytes, 0.0) / max(target, 1.0))))


def io_seconds(requests: float, nbytes: float, storage: StorageCost) -> float:
    """Time to serve ``requests`` read or write requests moving ``nbytes`` in all: a cost per request plus one per byte."""
    return requests * storage.request_seconds + nbytes * storage.byte_seconds


def merge_requests(k: int, total: float, storage: StorageCost) -> int:
    """I/O requests of one merge of ``k`` outputs holding ``total`` bytes: one per input opened, and a sequential
    read and write of the bytes through the merger's buffer (the thesis's ``2 T / s``)."""
    return k + 2 * math.ceil(max(total, 0) / max(storage.buffer_bytes, 1))


def merge_cost_seconds(k: int, total: float, storage: StorageCost) -> float:
    """Time of one merge: its fixed cost (RPCs, commit), its cost per output merged, its requests and the bytes it
    reads and writes."""
    return (storage.merge_seconds + k * storage.input_seconds
            + io_seconds(merge_requests(k, total, storage), 2 * max(total, 0), storage))


def node_storage_cost(config: CostConfig, node: NodeStorage | None) -> StorageCost:
    """The storage a group on a node is priced with: the conf's, with the time per request and the bandwidth its
    merger reported (``node``; None or a figure unknown: the conf's) unless the conf sets them. A reducer's fetch of a
    block costs at least Spark's own per-block fetch path (the conf's time per request), so a node's request is never
    priced below it; nor is its bandwidth above the conf's (a probe may have read the page cache, not the disk). The
    costs per merge and per output merged are always the conf's."""
    s = config.storage
    if node is None:
        return s
    request = s.request_seconds
    if node.request_seconds is not None and not config.request_time_set:
        request = max(request, node.request_seconds)
    per_byte = s.byte_seconds
    if node.bytes_per_second is not None and not config.bandwidth_set:  # a probe that hits the page cache must not make merges cheap
        per_byte = max(per_byte, 1 / node.bytes_per_second)
    return replace(s, request_seconds=request, byte_seconds=per_byte)


def decide(group_bytes: Sequence[int], readers: int, storage: StorageCost) -> Decision:
    """Merge a group of outputs (their sizes in bytes) read by ``readers`` reduce tasks, if it saves more than it costs."""
    k = len(group_bytes)
    saved = (k - 1) * max(readers, 0) * storage.request_seconds
    cost = merge_cost_seconds(k, sum(max(b, 0) for b in group_bytes), storage)
    return Decision(k >= 2 and saved > cost, WORTH_IT if k >= 2 and saved > cost else NOT_WORTH_IT, saved, cost)


def summary(decisions: Sequence[Decision]) -> str:
    """One line for a shuffle's decisions (logged once per shuffle, not per group)."""
    merged = [d for d in decisions if d.merge]
    skipped = [d for d in decisions if not d.merge]
    text = f"{counted(len(merged), 'group')} worth merging, {len(skipped)} skipped as not worth it"
    if decisions:
        saved = sum(d.saved_seconds for d in decisions) * 1e3
        cost = sum(d.cost_seconds for d in decisions) * 1e3
        text += f" (all groups: would save {saved:.1f} ms of reads, cost {cost:.1f} ms of merging)"
    return text
