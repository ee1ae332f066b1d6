"""What the driver knows about one shuffle's merges, and the pure decisions over it: when the held
reducers may go, what a finished merge tells the shim, and how many map files the reducers read after it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import StrEnum

from riffle import messages
from riffle.driver.cost import CostConfig, Decision
from riffle.driver.policy import MapOutput, MergePolicy


class MergeState(StrEnum):
    """Where a merge is: running until its RPC returns (done or failed) or its shuffle settles first (cancelled).
    The values are the words the Riffle tab's counters and the benchmarks' reports use."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class IllegalTransition(RuntimeError):
    """A merge left ``running`` twice: a bug in the scheduler or the fleet, never the mergers' doing."""


@dataclass
class Merge:
    """One merge request: a group of one executor's map outputs sent to one merger. It leaves ``running``
    once, through :meth:`succeed`, :meth:`fail` or :meth:`cancel` (the fleet and the scheduler call them)."""

    request_id: str
    shuffle_id: int
    members: list[MapOutput]
    merged_map_id: int
    merger: str
    local_dirs: list[str]
    future: Future | None = None
    state: MergeState = field(default=MergeState.RUNNING, init=False)
    lengths: list[int] = field(default_factory=list, init=False)  # the merged file's partition lengths, once done
    error: str = field(default="", init=False)
    cause: str = field(default="", init=False)  # why it did not merge, once failed or cancelled (riffle.driver.status causes)

    def succeed(self, lengths: Sequence[int]) -> None:
        self._leave_running(MergeState.DONE)
        self.lengths = list(lengths)

    def fail(self, error: str, cause: str) -> None:
        self._leave_running(MergeState.FAILED)
        self.error, self.cause = error, cause

    def cancel(self, cause: str) -> None:
        """Its shuffle settled first (``cause``: why the reducers were released)."""
        self._leave_running(MergeState.CANCELLED)
        self.cause = cause

    def _leave_running(self, to: MergeState) -> None:
        if self.state is not MergeState.RUNNING:
            raise IllegalTransition(f"merge {self.request_id}: {self.state} -> {to}")
        self.state = to


@dataclass
class ShuffleState:
    shuffle_id: int
    stage_id: int
    num_maps: int
    num_partitions: int
    held: bool  # its reducers are held (the cost model found its merges can pay, or it is off)
    policy: MergePolicy | None
    outputs: dict[int, MapOutput] = field(default_factory=dict)
    merges: list[Merge] = field(default_factory=list)
    map_done_at: float | None = None
    finalized: bool = False  # no more merges or commits for this shuffle
    settled: bool = False  # finalized, reducers released and stats recorded
    committed: int = 0
    map_bytes: int = 0
    name: str = ""  # the map stage's name (its call site; user input)
    unsent: Counter[str] = field(default_factory=Counter)  # groups never sent to a merger, by cause
    unsent_outputs: Counter[str] = field(default_factory=Counter)  # the outputs in those groups, by cause
    decisions: list[Decision] = field(default_factory=list)  # the cost model's, one per group the policy formed
    reduce_tasks: int | None = None  # the cost model's estimate, made at the shuffle's first decision
    cost: CostConfig = CostConfig()  # the cost model for this shuffle (an RDD shuffle's or a SQL exchange's reducers)
    undecided: list[MapOutput] = field(default_factory=list)  # outputs with data waiting for the cost model (a merger's storage unknown yet)
    priced_at_submission: bool = True  # False while its pricing at submission waits for the listed mergers' storage
    parked: list[list[MapOutput]] = field(default_factory=list)  # full groups waiting for a merger's first Status answer

    def unsend(self, group: Sequence[MapOutput], cause: str) -> None:
        """``group`` is never sent to a merger, for ``cause``: counted as a group fallen back, and its outputs as unmerged."""
        self.unsent[cause] += 1
        self.unsent_outputs[cause] += len(group)


def settle_reason(map_done_at: float | None, states: Sequence[MergeState], now: float, best_effort: float,
                  hold_timeout: float) -> str | None:
    """Why the held reducers may go now (committing the merges that finished), or None to keep
    holding them: nothing is decided before the map stage is done."""
    if map_done_at is None:
        return None
    total = len(states)
    done = sum(1 for st in states if st is MergeState.DONE)
    running = sum(1 for st in states if st is MergeState.RUNNING)
    if running == 0:
        return "all merges finished"
    if total and done / total >= best_effort:
        return f"best effort: {done}/{total} merges finished"
    if now - map_done_at >= hold_timeout:
        return f"timeout after {hold_timeout:.3g} s: {done}/{total} merges finished"
    return None


def merge_group(m: Merge) -> messages.MergeGroup:
    """A finished merge as the shim's ``merge_group`` message: the owner is the group's lowest map index."""
    return messages.MergeGroup(owner=min(o.map_index for o in m.members), merged_map_id=m.merged_map_id, executor=m.members[0].executor,
                               map_indexes=[o.map_index for o in m.members], map_ids=[o.map_id for o in m.members], lengths=list(m.lengths))


def merged_outputs(s: ShuffleState) -> int:
    """Map outputs in the ``s.committed`` merges. The shim reports how many groups it committed, not which: members per
    group are averaged when it skipped some."""
    members = [len(m.members) for m in s.merges if m.state is MergeState.DONE]
    return round(s.committed * (sum(members) / len(members))) if members else 0


def map_files_after(s: ShuffleState) -> int:
    """Map files the reducers read once ``s.committed`` merges replaced their members."""
    return len(s.outputs) - merged_outputs(s) + s.committed
