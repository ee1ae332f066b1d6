"""Merge policies (thesis §4.3.1): which finished map outputs to merge together. Pure.

Every group holds outputs of one executor only: a merged file lives in that executor's dirs, and
all statuses of a group must carry its BlockManagerId so a lost merged file unregisters them all.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class MapOutput:
    shuffle_id: int
    map_index: int
    map_id: int
    executor: str
    host: str
    bytes: int


def has_data(output: MapOutput) -> bool:
    """Whether an output has bytes to merge. A map task that wrote no rows leaves no ``.data`` file
    (only an index of zeros): it is never put in a group, so it can never fail one. Unknown sizes
    (-1) are merged; the merger treats a missing ``.data`` behind an all-zero index as empty."""
    return output.bytes != 0


class MergePolicy(Protocol):
    """Groups one shuffle's finished map outputs into merges; one instance per shuffle."""

    skipped: list[MapOutput]  # outputs it leaves alone (their blocks are large already): never grouped, by design

    def add(self, output: MapOutput) -> list[list[MapOutput]]:
        """Takes one finished output; returns the groups it completed (merged at once)."""
        ...

    def leftover(self) -> list[MapOutput]:
        """Outputs not (yet) in any group: in groups that never filled, and the skipped ones."""
        ...

    def flush(self) -> list[list[MapOutput]]:
        """At the end of the map stage: the last groups worth merging (an output alone on its executor stays leftover)."""
        ...

    def unfilled(self) -> str:
        """Why a group still open has not filled, in words for the Riffle tab (``fewer than 4 outputs on their executor``)."""
        ...


class NWayPolicy:
    """Merge every ``n`` outputs of the same executor as soon as the ``n``-th finishes."""

    def __init__(self, n: int):
        if n < 2:
            raise ValueError(f"N-way merge needs n >= 2, got {n}")
        self.n = n
        self._pending: dict[str, list[MapOutput]] = defaultdict(list)
        self.skipped: list[MapOutput] = []
        self.flushed = False

    def add(self, output: MapOutput) -> list[list[MapOutput]]:
        pending = self._pending[output.executor]
        pending.append(output)
        if len(pending) >= self.n:
            self._pending[output.executor] = []
            return [pending]
        return []

    def leftover(self) -> list[MapOutput]:
        return [o for p in self._pending.values() for o in p]

    def flush(self) -> list[list[MapOutput]]:
        """At the end of the map stage: each executor's remaining outputs (two or more) as one last group."""
        self.flushed = True
        return last_groups(self._pending)

    def unfilled(self) -> str:
        return ALONE if self.flushed else f"fewer than {self.n} outputs on their executor"


class BlockSizePolicy:
    """Merge an executor's outputs once their average block (bytes / partitions) reaches the target;
    outputs whose blocks are already that large are left alone."""

    def __init__(self, target_block_bytes: int, num_partitions: int):
        self.target = max(int(target_block_bytes), 1)
        self.partitions = max(int(num_partitions), 1)
        self._pending: dict[str, list[MapOutput]] = defaultdict(list)
        self.skipped: list[MapOutput] = []
        self.flushed = False

    def add(self, output: MapOutput) -> list[list[MapOutput]]:
        if output.bytes < 0 or output.bytes / self.partitions >= self.target:
            self.skipped.append(output)
            return []
        pending = self._pending[output.executor]
        pending.append(output)
        if len(pending) >= 2 and sum(o.bytes for o in pending) / self.partitions >= self.target:
            self._pending[output.executor] = []
            return [pending]
        return []

    def leftover(self) -> list[MapOutput]:
        return [o for p in self._pending.values() for o in p] + self.skipped

    def flush(self) -> list[list[MapOutput]]:
        self.flushed = True
        return last_groups(self._pending)

    def unfilled(self) -> str:
        return ALONE if self.flushed else f"their executor's outputs short of the {self.target} B target block"


ALONE = "alone on its executor at the map stage's end"  # why a group never filled once the last groups were formed


def last_groups(pending: dict[str, list[MapOutput]]) -> list[list[MapOutput]]:
    """Takes each executor's pending outputs, two or more, out of ``pending`` as one last group; an output alone stays
    there, so the policy's leftover still counts it."""
    groups = [p for p in pending.values() if len(p) >= 2]
    for executor in [e for e, p in pending.items() if len(p) >= 2]:
        del pending[executor]
    return groups


# name -> factory(nway, target_block_bytes, num_partitions); the one list of merge policy names
MERGE_POLICIES: dict[str, Callable[[int, int, int], MergePolicy]] = {
    "nway": lambda nway, target, partitions: NWayPolicy(nway),
    "blocksize": lambda nway, target, partitions: BlockSizePolicy(target, partitions),
}


def make_merge_policy(name: str, nway: int, target_block_bytes: int, num_partitions: int) -> MergePolicy:
    try:
        factory = MERGE_POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown merge policy {name!r}; expected one of {', '.join(MERGE_POLICIES)}") from None
    return factory(nway, target_block_bytes, num_partitions)


def full_group(policy: str, nway: int, target_block_bytes: int, maps: int, partitions: int, output_bytes: int | None) -> int:
    """Outputs a full group of a shuffle holds: N for N-way; for block size, as many outputs of ``output_bytes`` as make
    the target block (every map output when no size is known yet). Never more than the shuffle's outputs, never under 2."""
    if policy == "nway":
        return min(nway, max(maps, 2))
    if output_bytes is None:
        return max(maps, 2)
    return min(max(2, -(-target_block_bytes * max(partitions, 1) // max(output_bytes, 1))), max(maps, 2))
