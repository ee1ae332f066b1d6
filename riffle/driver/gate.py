"""The cost model's say over a shuffle (thesis §4.3.5) and the storage it is priced with: whether a
shuffle is worth holding its reducers for at all, and whether each group its policy forms pays. Only
what the fleet already knows of the mergers' storage is read, never asked for on the spot: while a
merger's first Status answer is awaited there is no verdict yet, and no merge is made on a guess."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from riffle.driver import cost
from riffle.driver import status as causes
from riffle.driver.config import RiffleConfig
from riffle.driver.cost import Decision, StorageCost, node_storage_cost
from riffle.driver.fleet import MergerFleet
from riffle.driver.merges import ShuffleState
from riffle.driver.policy import MapOutput, full_group
from riffle.driver.status_calls import PENDING


def node_storage(fleet: MergerFleet, host: str) -> StorageCost | None:
    """The storage a group of outputs on ``host`` is priced with: the conf's, with the figures a reachable merger there
    reported (:func:`riffle.driver.cost.node_storage_cost`); None while that merger's first answer is awaited."""
    for address in fleet.reachable(host):
        reported = fleet.reported_storage(address)
        if reported is PENDING:
            return None
        if reported is not None:
            return node_storage_cost(fleet.config.cost, reported)
    return fleet.config.cost.storage


def priciest_storage(fleet: MergerFleet) -> StorageCost | None:
    """Of the listed mergers' nodes, the storage whose read request costs most (where merging saves most): what a shuffle
    whose outputs' nodes are not known yet is priced with at best. None while a listed merger's first answer is awaited."""
    storages = [node_storage(fleet, a.rpartition(":")[0]) for a in fleet.config.mergers]
    known = [s for s in storages if s is not None]
    return max(known, key=lambda s: s.request_seconds) if known and len(known) == len(storages) else None


@dataclass(frozen=True)
class Verdict:
    """Whether a full group of a shuffle's outputs could pay: if not, the shuffle is never held (or no longer)."""

    decision: Decision
    fan_in: int

    def declined(self, when: str) -> str:
        d = self.decision
        return (f"not worth merging ({when}): a group of {self.fan_in} would save {d.saved_seconds * 1e3:.1f} ms, "
                f"cost {d.cost_seconds * 1e3:.1f} ms")


class CostGate:
    """The cost model of the fleet's configuration, with the default parallelism of Spark's context ``sc`` for the reducers
    a SQL exchange's coalescing makes."""

    def __init__(self, fleet: MergerFleet, sc: Any):
        self.fleet = fleet
        self.sc = sc

    def parallelism(self) -> int:
        try:
            return int(self.sc.defaultParallelism)
        except Exception:  # no context, or it is stopping: any estimate will do
            return 1

    def known(self, s: ShuffleState, host: str) -> bool:
        """Whether a group of ``s`` on ``host`` can be priced and placed now (else a merger's first Status answer is awaited)."""
        return (not s.cost.enabled or node_storage(self.fleet, host) is not None) and self.fleet.placeable(host)

    def at_submission(self, s: ShuffleState) -> Verdict | None:
        """Whether any group of ``s`` could pay whatever its bytes and node (mergers listed); None: not known yet."""
        storage = priciest_storage(self.fleet)
        return None if storage is None else self._verdict(s, None, max(s.num_partitions, 1), storage)

    def at_first_output(self, s: ShuffleState, first: MapOutput) -> Verdict | None:
        """Whether a full group of outputs of ``first``'s size could pay, priced with its node's storage; None: not known yet."""
        readers = self.reduce_tasks(s)
        storage = node_storage(self.fleet, first.host)
        return None if storage is None else self._verdict(s, first, readers, storage)

    def _verdict(self, s: ShuffleState, first: MapOutput | None, readers: int, storage: StorageCost) -> Verdict:
        c = self.fleet.config
        fan_in = full_group(c.policy, c.nway, c.target_block_bytes, s.num_maps, s.num_partitions, None if first is None else first.bytes)
        best = cost.decide([0 if first is None else first.bytes] * fan_in, readers, storage)
        if not best.merge:
            s.decisions.append(best)
        return Verdict(best, fan_in)

    def worth_it(self, s: ShuffleState, group: list[MapOutput]) -> bool | None:
        """The cost model's decision on ``group`` (always yes when it is off), kept on ``s`` and counted by reason; None while
        the storage of its node is not known yet."""
        if not s.cost.enabled:
            return True
        readers = self.reduce_tasks(s)
        storage = node_storage(self.fleet, group[0].host)
        if storage is None:
            return None
        decision = cost.decide([o.bytes for o in group], readers, storage)
        s.decisions.append(decision)
        if not decision.merge:
            s.unsend(group, decision.reason)
        return decision.merge

    def reduce_tasks(self, s: ShuffleState) -> int:
        """The shuffle's bytes, estimated from its outputs so far, decide the coalesced reducers (once per shuffle)."""
        if s.reduce_tasks is None:
            sizes = [o.bytes for o in s.outputs.values() if o.bytes > 0]
            estimate = (sum(sizes) / len(sizes)) * max(s.num_maps, len(s.outputs)) if sizes else 0.0
            s.reduce_tasks = cost.reduce_tasks(s.num_partitions, estimate, s.cost, self.parallelism())
        return s.reduce_tasks


HOLD_MARGIN_SECONDS = 5.0  # the shim holds reducers this much longer than the scheduler would: the scheduler decides first


def shim_hold_seconds(config: RiffleConfig) -> float:
    """The shim's own hold timeout while merging: a backstop should the scheduler stop deciding."""
    return config.hold_timeout + HOLD_MARGIN_SECONDS


class HoldGate:
    """Whether a mergeable shuffle's reducers are held (asked of the shim through ``tracker``): at once when the cost model is
    off; else once the cost model found a full group of its outputs could pay, priced at its map stage's submission (mergers
    listed) or at its first output with data. ``decline(s, reason, cause)`` settles a shuffle left unmerged."""

    def __init__(self, costs: CostGate, tracker: Any, decline: Callable[[ShuffleState, str, str], None]):
        self.costs = costs
        self.tracker = tracker
        self.decline = decline

    def submitted(self, s: ShuffleState) -> None:
        if not s.cost.enabled:
            self._hold(s)  # every group is merged: the shim held it at its map stage's submission already
        elif self.costs.fleet.config.mergers:
            self.price_at_submission(s)

    def _hold(self, s: ShuffleState) -> bool:
        """Asks the shim to hold the shuffle's reducers; if a reader already runs, the shuffle is left unmerged."""
        s.held = bool(self.tracker.hold(s.shuffle_id))
        if not s.held:
            self.decline(s, "a stage reading the shuffle was already running", causes.READER_RUNNING)
        return s.held

    def price_at_submission(self, s: ShuffleState) -> None:
        """With the mergers listed, whether a group of ``s`` could pay at all, whatever its bytes and node (asked again at
        each step while a merger's storage is awaited, until its first output with data decides instead)."""
        verdict = self.costs.at_submission(s)
        s.priced_at_submission = verdict is not None or bool(s.undecided)
        if verdict is not None and not verdict.decision.merge:
            self.decline(s, verdict.declined("at the map stage's submission, whatever its bytes and node"), causes.NOT_WORTH_IT)

    def admit(self, s: ShuffleState, out: MapOutput) -> list[MapOutput]:
        """The outputs to group now that ``out`` (with data) finished: itself once held; else it waits for the decision."""
        if s.held:
            return [out]
        s.undecided.append(out)
        return self.decide(s)

    def decide(self, s: ShuffleState) -> list[MapOutput]:
        """An undecided shuffle's first output with data: whether a full group of outputs that size could pay at all, priced
        with the storage of its node. If so its reducers are held from now on and its waiting outputs are returned to be
        grouped; if not, nothing of it is merged and nothing waits for it. Without that storage yet, asked again later."""
        verdict = self.costs.at_first_output(s, s.undecided[0])
        if verdict is None:
            return []
        waiting, s.undecided = s.undecided, []
        if not verdict.decision.merge:
            self.decline(s, verdict.declined("at its first output"), causes.NOT_WORTH_IT)
        return waiting if not s.finalized and self._hold(s) else []


__all__ = ["HOLD_MARGIN_SECONDS", "CostGate", "HoldGate", "Verdict", "node_storage", "priciest_storage", "shim_hold_seconds"]
