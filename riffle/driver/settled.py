"""What a finished shuffle ended as: one record, taken when the scheduler settles it (or finds it
unmergeable at its map stage's submission), from which the Riffle tab's row, the totals, the log
line and the benchmarks' numbers are all read. Pure."""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from riffle.driver import cost
from riffle.driver.cost import Decision
from riffle.driver.merges import MergeState, ShuffleState, map_files_after
from riffle.driver.status import bytes_merged, fell_back
from riffle.driver.unmerged_outputs import outputs_unmerged, why_unmerged


@dataclass(frozen=True)
class SettledShuffle:
    shuffle_id: int
    stage_id: int
    name: str  # the map stage's name (its call site; user input)
    maps: int  # the map stage's tasks
    map_outputs: int  # outputs the scheduler saw finish
    partitions: int
    mergeable: bool  # the shim found it safe to merge (only such a shuffle is held or counted as settled)
    held: bool  # its reducers were held, so its merges could be committed
    policy: str  # the merge policy as the tab shows it; "none" when never held
    merges_requested: int
    merges_committed: int
    merges_cancelled: int
    merges_failed: int
    map_files_after: int  # map files the reducers read once the committed merges replaced their members
    blocks_before: int
    blocks_after: int
    bytes: int  # the map outputs' bytes
    bytes_merged: int
    groups_fell_back: Mapping[str, int]  # groups left unmerged, by cause (riffle.driver.status)
    hold_seconds: float | None  # how long the reducers waited after the map stage (None: never held)
    reason: str  # why it settled, or why it was never merged
    cleaned: bool = False  # Spark cleaned the shuffle up since (its files are gone; what happened to it stays)
    outputs_unmerged: Mapping[str, int] = dataclasses.field(default_factory=dict)  # a held one's outputs left unmerged, by cause
    unmerged_why: str = ""  # those in words ("" when every output merged, or never held)


def blocks_of(s: ShuffleState) -> tuple[int, int]:
    """The blocks ``s``'s reducers fetch without and with its committed merges: one per map output and reduce partition. A
    shuffle never held is settled when it is declined (at its map stage's submission, or at its first output), before
    most of its outputs exist: each of its map stage's tasks writes one output, so those are counted, none merged."""
    partitions = max(s.num_partitions, 0)
    if not s.held:
        blocks = max(len(s.outputs), s.num_maps, 0) * partitions
        return blocks, blocks
    return len(s.outputs) * partitions, map_files_after(s) * partitions


def settle(s: ShuffleState, reason: str, now: float, policy: str) -> SettledShuffle:
    """``s`` as it ended at ``now`` for ``reason``; ``policy``: the policy label it was merged with, if held."""
    states = Counter(m.state for m in s.merges)
    blocks_before, blocks_after = blocks_of(s)
    unmerged = outputs_unmerged(s) if s.held else {}
    return SettledShuffle(
        shuffle_id=s.shuffle_id, stage_id=s.stage_id, name=s.name, maps=s.num_maps, map_outputs=len(s.outputs), partitions=s.num_partitions,
        mergeable=s.policy is not None, held=s.held, policy=policy if s.held else "none", merges_requested=len(s.merges),
        merges_committed=s.committed, merges_cancelled=states[MergeState.CANCELLED], merges_failed=states[MergeState.FAILED],
        map_files_after=map_files_after(s), blocks_before=blocks_before, blocks_after=blocks_after, bytes=s.map_bytes,
        bytes_merged=bytes_merged(s), groups_fell_back=fell_back(s),
        hold_seconds=round(now - s.map_done_at, 4) if s.map_done_at else None, reason=reason, outputs_unmerged=unmerged,
        unmerged_why=why_unmerged(unmerged, len(s.outputs), s.policy.unfilled() if s.policy is not None else ""))


def log_settled(log: logging.Logger, r: SettledShuffle, decisions: Sequence[Decision], reduce_tasks: int | None) -> None:
    """What the driver's log says of a mergeable shuffle once settled: its merges and files, and the cost model's decisions."""
    if not r.held:
        log.info("Riffle: shuffle %d is left unmerged: %s", r.shuffle_id, r.reason)
        return
    log.info("Riffle: shuffle %d: %d merges requested, %d committed, %d cancelled, %d failed; map files %d -> %d "
             "(blocks %d -> %d, %d bytes); reducers held %.3f s after the map stage (%s)",
             r.shuffle_id, r.merges_requested, r.merges_committed, r.merges_cancelled, r.merges_failed, r.map_outputs,
             r.map_files_after, r.blocks_before, r.blocks_after, r.bytes, r.hold_seconds or 0.0, r.reason)
    if decisions:
        log.info("Riffle: shuffle %d cost model (about %d reduce tasks): %s", r.shuffle_id, reduce_tasks or 0, cost.summary(decisions))


def cleaned(r: SettledShuffle) -> SettledShuffle:
    """``r`` once Spark cleaned its shuffle up."""
    return dataclasses.replace(r, cleaned=True)


__all__ = ["SettledShuffle", "blocks_of", "cleaned", "log_settled", "settle"]
