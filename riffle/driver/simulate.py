"""Riffle at scale, by model: blocks fetched, I/O requests, read, merge and job time with and without N-way
merging for a cluster this project cannot run (thesis §4.3.5, extended from requests to seconds). Pure.

Every formula and constant is the driver's merge cost model (:mod:`riffle.driver.cost`): a request and a byte
cost what the storage profile says, a merge costs ``merge_cost_seconds``; the groups are those the driver's
:class:`~riffle.driver.policy.NWayPolicy` forms. What this module adds is the cluster around them:

* a shuffle of ``M`` map outputs read by ``R`` reduce tasks fetches ``M × R`` blocks; merged, one block per
  merged file and per output left alone, plus the merges' own requests (the thesis's ``M/N × R + 2 T / s``);
* the reduce stage's fetches, the map tasks' writes and the merges share the cluster's storage devices
  (``disks``; by default one per task slot, as in the local calibration, where a block's 35 µs was measured
  per core); merges run ``concurrent_merges`` at a time and delay the map stage (the reducers wait for them)
  by their total over that parallelism, and at least by one merge (the last group fills with the last map);
* a task also computes for ``task_seconds``; tasks run in waves of ``executors × cores``.

Merges are charged in full after the maps (no overlap, no best effort), so merged map stages are an upper bound.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

from riffle.driver.cost import StorageCost, decide, io_seconds, merge_cost_seconds, merge_requests
from riffle.driver.policy import MapOutput, NWayPolicy

SCOPES = ("executor", "node", "cluster")  # what a merge may combine: one executor's outputs (this driver), a node's, any


@dataclass(frozen=True)
class Profile:
    """A storage preset and where its figures come from."""

    name: str
    storage: StorageCost
    source: str


PROFILES: dict[str, Profile] = {
    "hdd": Profile("hdd", StorageCost(request_seconds=10e-3, byte_seconds=1 / 150e6),
                   "a 7,200 rpm disk: a random read costs a seek plus half a turn (4.2 ms), about 10 ms or 100 reads/s, "
                   "and it streams about 150 MB/s (typical datasheet figures of 7,200 rpm SATA/SAS drives)"),
    "ssd": Profile("ssd", StorageCost(request_seconds=100e-6, byte_seconds=1 / 500e6),
                   "a SATA SSD: about 100 µs per random read at queue depth 1 (some 10,000 reads/s), 500 MB/s "
                   "(the 6 Gb/s link's limit is about 550 MB/s)"),
    "measured": Profile("measured", StorageCost(),
                        "the driver's defaults, measured by `riffle bench spark --nodes 3` on this project's two-core "
                        "machine: 35 µs per block fetched per core, 7.5 ms per merge + 2.8 ms per output merged, 500 MB/s"),
}


@dataclass(frozen=True)
class Cluster:
    executors: int
    maps: int
    reducers: int
    shuffle_bytes: float
    cores: int = 1  # task slots per executor
    executors_per_node: int = 1  # one merger per node
    disks: int | None = None  # storage devices serving requests at once; None: one per task slot
    concurrent_merges: int | None = None  # merges running at once, cluster-wide; None: one per disk
    task_seconds: float = 0.0  # a task's time besides its shuffle I/O
    scope: str = "executor"

    def __post_init__(self) -> None:
        for name in ("executors", "maps", "reducers", "cores", "executors_per_node"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.shuffle_bytes <= 0:
            raise ValueError(f"shuffle bytes must be > 0, got {self.shuffle_bytes}")
        if self.disks is not None and self.disks < 1 or self.concurrent_merges is not None and self.concurrent_merges < 1:
            raise ValueError("disks and concurrent merges must be >= 1")
        if self.task_seconds < 0:
            raise ValueError(f"task seconds must be >= 0, got {self.task_seconds}")
        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {self.scope!r}")

    @property
    def slots(self) -> int:
        return self.executors * self.cores

    @property
    def nodes(self) -> int:
        return math.ceil(self.executors / self.executors_per_node)

    @property
    def io_parallelism(self) -> int:
        return self.disks or self.slots

    @property
    def merge_parallelism(self) -> int:
        return self.concurrent_merges or self.io_parallelism

    def waves(self, tasks: int) -> int:
        return math.ceil(tasks / self.slots)


@dataclass(frozen=True)
class Arm:
    """One configuration's shuffle: counts, and wall-clock seconds of the stages."""

    blocks_fetched: int
    merges: int
    merge_requests: int
    requests: int  # blocks fetched plus the merges' requests: the thesis's "shuffle I/O requests"
    read_seconds: float  # the reduce stage's fetches, wall clock
    merge_seconds: float  # the merges, wall clock, added to the map stage
    map_seconds: float
    reduce_seconds: float

    @property
    def job_seconds(self) -> float:
        return self.map_seconds + self.reduce_seconds


@dataclass(frozen=True)
class Prediction:
    cluster: Cluster
    fan_in: int
    profile: str
    storage: StorageCost
    vanilla: Arm
    merged: Arm
    groups_skipped: int = 0  # groups the cost model found not worth merging (with ``cost_model``)
    ratios: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        for arm in ("vanilla", "merged"):
            out[arm]["job_seconds"] = getattr(self, arm).job_seconds
        return out


@lru_cache(maxsize=256)
def nway_groups(outputs: int, fan_in: int) -> tuple[tuple[int, ...], int]:
    """The sizes of the groups the driver's N-way policy forms of ``outputs`` outputs of one scope (one executor,
    node or the cluster), and how many outputs it leaves unmerged."""
    policy = NWayPolicy(fan_in)
    groups = [g for i in range(outputs) for g in policy.add(MapOutput(0, i, i, "scope", "host", 1))] + policy.flush()
    sizes = tuple(len(g) for g in groups)
    return sizes, outputs - sum(sizes)


def _groups(cluster: Cluster, fan_in: int) -> tuple[dict[int, int], int]:
    """Group sizes (size -> count) and unmerged outputs over the cluster; maps are spread evenly over the scopes."""
    units = {"executor": cluster.executors, "node": cluster.nodes, "cluster": 1}[cluster.scope]
    base, extra = divmod(cluster.maps, units)
    counts: dict[int, int] = {}
    unmerged = 0
    for outputs, n_units in ((base + 1, extra), (base, units - extra)):
        if n_units == 0 or outputs == 0:
            continue
        sizes, left = nway_groups(outputs, fan_in)
        for k in sizes:
            counts[k] = counts.get(k, 0) + n_units
        unmerged += left * n_units
    return counts, unmerged


def predict(cluster: Cluster, fan_in: int, storage: StorageCost, profile: str = "custom", cost_model: bool = False) -> Prediction:
    """Vanilla vs N-way merging on ``cluster``. With ``cost_model``, groups the driver's cost model
    (``spark.riffle.cost.enabled``) finds not worth merging are left alone, as the driver would."""
    if fan_in < 2:
        raise ValueError(f"fan-in must be >= 2, got {fan_in}")
    c, m, r, total = cluster, cluster.maps, cluster.reducers, float(cluster.shuffle_bytes)
    output_bytes = total / m
    map_seconds = c.waves(m) * c.task_seconds + io_seconds(m, total, storage) / c.io_parallelism
    compute_reduce = c.waves(r) * c.task_seconds

    def read(blocks: int) -> float:
        return io_seconds(blocks, total, storage) / c.io_parallelism

    vanilla = Arm(m * r, 0, 0, m * r, read(m * r), 0.0, map_seconds, compute_reduce + read(m * r))
    counts, unmerged = _groups(cluster, fan_in)
    skipped = 0
    if cost_model:
        for k in [k for k in counts if not decide([math.ceil(output_bytes)] * k, r, storage).merge]:
            skipped += counts[k]
            unmerged += k * counts.pop(k)
    merges = sum(counts.values())
    files = merges + unmerged
    extra_requests = sum(n * merge_requests(k, k * output_bytes, storage) for k, n in counts.items())
    costs = {k: merge_cost_seconds(k, k * output_bytes, storage) for k in counts}
    # spread over the merges running at once, but never shorter than one merge: the last group fills at the last map
    merge_wall = max(sum(n * costs[k] for k, n in counts.items()) / c.merge_parallelism, max(costs.values(), default=0.0))
    blocks = files * r
    merged = Arm(blocks, merges, extra_requests, blocks + extra_requests, read(blocks), merge_wall,
                 map_seconds + merge_wall, compute_reduce + read(blocks))
    ratios = {"blocks_fetched": vanilla.blocks_fetched / merged.blocks_fetched,
              "requests": vanilla.requests / merged.requests,
              "read_time": vanilla.read_seconds / merged.read_seconds,
              "reduce_speedup": vanilla.reduce_seconds / merged.reduce_seconds,
              "job_time": merged.job_seconds / vanilla.job_seconds,
              "job_faster_pct": 100 * (1 - merged.job_seconds / vanilla.job_seconds)}
    return Prediction(cluster, fan_in, profile, storage, vanilla, merged, skipped, ratios)


def read_size_gap(small_bytes: int, large_bytes: int, storage: StorageCost) -> float:
    """How many times longer reading a volume takes in ``small_bytes`` requests than in ``large_bytes`` ones."""
    per_byte_small = io_seconds(1, small_bytes, storage) / small_bytes
    per_byte_large = io_seconds(1, large_bytes, storage) / large_bytes
    return per_byte_small / per_byte_large


def fit_to_vanilla(cluster: Cluster, storage: StorageCost, map_seconds: float, reduce_seconds: float) -> Cluster:
    """``cluster`` with the disks and the task time that make its vanilla map and reduce stages last as measured
    (two linear equations in ``task_seconds`` and ``1 / disks``); merged runs are then out-of-sample predictions."""
    m, r, total = cluster.maps, cluster.reducers, float(cluster.shuffle_bytes)
    wm, wr = cluster.waves(m), cluster.waves(r)
    io_map, io_reduce = io_seconds(m, total, storage), io_seconds(m * r, total, storage)
    # map = wm t + io_map / D;  reduce = wr t + io_reduce / D
    det = wm * io_reduce - wr * io_map
    inv_disks = (wm * reduce_seconds - wr * map_seconds) / det
    task = (map_seconds - io_map * inv_disks) / wm
    if inv_disks <= 0 or task < 0:
        raise ValueError("no positive disks and task time reproduce those stage times")
    return replace(cluster, disks=max(1, round(1 / inv_disks)), task_seconds=task)


def fit_task_seconds(cluster: Cluster, storage: StorageCost, seconds: float, stage: str = "job") -> Cluster:
    """``cluster`` with the task time that makes its vanilla ``stage`` last ``seconds`` (its disks as given): the
    ``job``, or the ``map`` stage, which reads no shuffle, so that the reduce stage and the job are predictions too."""
    if stage not in ("job", "map"):
        raise ValueError(f"stage must be job or map, got {stage!r}")
    zero = predict(replace(cluster, task_seconds=0.0), 2, storage).vanilla
    untimed, waves = zero.map_seconds, cluster.waves(cluster.maps)
    if stage == "job":
        untimed, waves = zero.job_seconds, waves + cluster.waves(cluster.reducers)
    return replace(cluster, task_seconds=max(seconds - untimed, 0.0) / waves)
