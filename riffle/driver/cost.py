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
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from riffle.units import parse_spark_size

WORTH_IT = "worth_it"
NOT_WORTH_IT = "not_worth_it"


@dataclass(frozen=True)
class StorageCost:
    """A node's storage, in seconds: per read request (seek, open, the fetch's round trip) and per byte moved.

    The defaults are those ``riffle bench spark --nodes 3`` measured on a two-core machine with a fast local
    disk: 150,596 fewer blocks fetched saved 1.77 s of a reduce stage on three cores (35 us a block), and
    merging the same 400 outputs in 81, 42 and 21 merges (N = 5, 10, 20) added 1.83, 1.22 and 1.44 s to the
    map stage: a least-squares fit gives 7.5 ms a merge plus 2.8 ms an output merged (a fixed 70 ms a merge,
    fitted to N=20 alone, overpriced small groups 3-fold). On spinning disks a request costs ms."""

    request_seconds: float = 35e-6
    byte_seconds: float = 1 / 500e6
    merge_seconds: float = 7.5e-3  # fixed per merge: its RPCs, the merged index, the commit
    input_seconds: float = 2.8e-3  # per output merged: opening it, reading its index, its segments' copy setup
    buffer_bytes: int = 4 << 20  # the merger's I/O buffer: a sequential pass costs one request per buffer


@dataclass(frozen=True)
class CostConfig:
    """``spark.riffle.cost.*``: on by default (off: every group the policy forms is merged, every mergeable shuffle held)."""

    enabled: bool = True
    storage: StorageCost = StorageCost()
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

    def flag(key: str) -> bool:
        return str(adaptive.get(prefix + key, "true")).strip().lower() == "true"

    def size(key: str, default: int) -> int:
        try:
            return parse_spark_size(adaptive[prefix + key]) if prefix + key in adaptive else default
        except (ValueError, argparse.ArgumentTypeError):
            return default

    keys = (prefix + "enabled", prefix + "coalescePartitions.enabled")
    coalesce = flag("enabled") and flag("coalescePartitions.enabled") if any(k in adaptive for k in keys) else base.coalesce
    first = adaptive.get(prefix + "coalescePartitions.parallelismFirst")
    return replace(base, coalesce=coalesce, advisory_bytes=size("advisoryPartitionSizeInBytes", base.advisory_bytes),
                   min_partition_bytes=size("coalescePartitions.minPartitionSize", base.min_partition_bytes),
                   parallelism_first=base.parallelism_first if first is None else first.strip().lower() == "true")


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
    text = f"{len(merged)} groups worth merging, {len(skipped)} skipped as not worth it"
    if decisions:
        saved = sum(d.saved_seconds for d in decisions) * 1e3
        cost = sum(d.cost_seconds for d in decisions) * 1e3
        text += f" (all groups: would save {saved:.1f} ms of reads, cost {cost:.1f} ms of merging)"
    return text


def probe(directory: str | os.PathLike[str], file_bytes: int = 8 << 20, requests: int = 64) -> StorageCost:
    """Measures ``directory``'s storage once: one sequential write and read of ``file_bytes`` (per byte), then
    ``requests`` small reads at spread offsets of a reopened file (per request). Page cache included, as the
    shuffle sees it. Takes well under a second on a local disk."""
    path = Path(directory) / f".riffle-cost-probe-{os.getpid()}"
    chunk = os.urandom(1 << 20)
    try:
        t = time.perf_counter()
        with open(path, "wb") as f:
            for _ in range(max(file_bytes >> 20, 1)):
                f.write(chunk)
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass
        per_byte = (time.perf_counter() - t) / (2 * max(file_bytes >> 20, 1) * (1 << 20))
        size = path.stat().st_size
        t = time.perf_counter()
        for i in range(requests):
            with open(path, "rb") as f:
                f.seek((i * 7919 * 4096) % max(size - 4096, 1))
                f.read(4096)
        per_request = (time.perf_counter() - t) / requests
    finally:
        path.unlink(missing_ok=True)
    return StorageCost(request_seconds=per_request, byte_seconds=per_byte)
