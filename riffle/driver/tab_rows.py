"""The Riffle tab's shuffles and totals: every shuffle seen is counted once in one state (``merging``,
``settled`` or ``unmerged``, see :mod:`riffle.driver.status`); the rows list every merging shuffle and
the latest settled ones, in the order seen, after Spark cleaned them up too. A settled shuffle's row is
derived from its :class:`~riffle.driver.settled.SettledShuffle`, a merging one's from its live state.

A shuffle never held (``unmerged``) gets no row: it is counted in one summary per cause (its count, the latest ids, the
latest one's why). An application's own tiny shuffles can all be unmergeable (spark.ml's ``treeAggregate`` of JVM objects
is unsafe, and on a fast disk none is worth merging); listed one per row they pushed every merged shuffle off the list."""

from __future__ import annotations

import dataclasses
from collections import Counter, OrderedDict
from collections.abc import Callable

from riffle import messages
from riffle.driver.merges import ShuffleState
from riffle.driver.settled import SettledShuffle, cleaned
from riffle.driver.status import MERGING, SETTLED, UNMERGED, fell_back

MAX_FINISHED = messages.MAX_FINISHED_SHUFFLES  # finished rows kept (the tab lists them; the benchmarks read their records); the
# schema's, so the JVM holds its model (live and in the History Server) to the same bound


def live_row(s: ShuffleState, policy: str) -> messages.RiffleShuffle:
    """A shuffle not finished yet: merging (held, or mergeable and not yet decided)."""
    merging = s.held or (s.policy is not None and not s.finalized)
    blocks = len(s.outputs) * max(s.num_partitions, 0)
    return messages.RiffleShuffle(
        shuffle=s.shuffle_id, stage=s.stage_id, name=s.name, maps=s.num_maps, reducers=max(s.num_partitions, 0),
        policy=policy if merging else "none", state=MERGING if merging else UNMERGED, groups_merged=0, groups_fell_back=fell_back(s),
        bytes_merged=0, blocks_unmerged=blocks, blocks_merged=blocks, gate_wait_seconds=0.0, reason="", cleaned=False,
        outputs=len(s.outputs), outputs_unmerged={}, unmerged_why="")


def settled_row(r: SettledShuffle) -> messages.RiffleShuffle:
    """A finished shuffle: settled when its reducers were held, else unmerged (never held, for ``r.reason``)."""
    return messages.RiffleShuffle(
        shuffle=r.shuffle_id, stage=r.stage_id, name=r.name, maps=r.maps, reducers=max(r.partitions, 0), policy=r.policy,
        state=SETTLED if r.held else UNMERGED, groups_merged=r.merges_committed if r.held else 0, groups_fell_back=dict(r.groups_fell_back),
        bytes_merged=r.bytes_merged if r.held else 0, blocks_unmerged=r.blocks_before, blocks_merged=r.blocks_after,
        gate_wait_seconds=float(r.hold_seconds or 0.0) if r.held else 0.0,
        reason=r.reason, cleaned=r.cleaned, outputs=r.map_outputs, outputs_unmerged=dict(r.outputs_unmerged), unmerged_why=r.unmerged_why)


def count_unmerged(summary: messages.RiffleUnmerged | None, r: SettledShuffle, cause: str) -> messages.RiffleUnmerged:
    """``summary`` of the shuffles never held for ``cause`` with ``r`` counted in: the latest ids and the latest one's why."""
    latest = [*(summary.latest if summary is not None else ()), r.shuffle_id][-messages.MAX_UNMERGED_LATEST:]
    return messages.RiffleUnmerged(cause=cause, shuffles=(summary.shuffles if summary is not None else 0) + 1, latest=latest,
                                   stage=r.stage_id, name=r.name, reason=r.reason)


def no_totals() -> messages.RiffleTotals:
    return messages.RiffleTotals(shuffles=0, merging=0, settled=0, merged=0, unmerged={}, groups_merged=0, groups_fell_back={},
                                 bytes_merged=0, blocks_unmerged=0, blocks_merged=0, gate_wait_seconds=0.0)


def seen(totals: messages.RiffleTotals, not_held: str) -> messages.RiffleTotals:
    """``totals`` with one more shuffle: merging when its reducers are held (``not_held`` empty), else unmerged for that cause."""
    if not not_held:
        return dataclasses.replace(totals, shuffles=totals.shuffles + 1, merging=totals.merging + 1)
    unmerged = Counter(totals.unmerged)
    unmerged[not_held] += 1
    return dataclasses.replace(totals, shuffles=totals.shuffles + 1, unmerged=dict(unmerged))


def never_held(totals: messages.RiffleTotals, cause: str) -> messages.RiffleTotals:
    """``totals`` once a mergeable shuffle (counted as merging when seen) ended without being held, for ``cause``."""
    unmerged = Counter(totals.unmerged)
    unmerged[cause] += 1
    return dataclasses.replace(totals, merging=max(totals.merging - 1, 0), unmerged=dict(unmerged))


def unmerged_blocks(totals: messages.RiffleTotals, row: messages.RiffleShuffle) -> messages.RiffleTotals:
    """``totals`` with the blocks of ``row``'s shuffle, never held, fetched as they were written: the totals' blocks are the
    application's, so a first trial where nothing pays to merge does not read "blocks fetched 0 -> 0"."""
    return dataclasses.replace(totals, blocks_unmerged=totals.blocks_unmerged + row.blocks_unmerged,
                               blocks_merged=totals.blocks_merged + row.blocks_unmerged)


def add_to_totals(totals: messages.RiffleTotals, row: messages.RiffleShuffle) -> messages.RiffleTotals:
    """``totals`` once the held shuffle of ``row`` settled: merging no more, settled (and merged when a group of it merged)."""
    causes = Counter(totals.groups_fell_back)
    causes.update(row.groups_fell_back)
    return dataclasses.replace(
        totals, merging=max(totals.merging - 1, 0), settled=totals.settled + 1, merged=totals.merged + (row.groups_merged > 0),
        groups_merged=totals.groups_merged + row.groups_merged, groups_fell_back=dict(causes),
        bytes_merged=totals.bytes_merged + row.bytes_merged, blocks_unmerged=totals.blocks_unmerged + row.blocks_unmerged,
        blocks_merged=totals.blocks_merged + row.blocks_merged, gate_wait_seconds=totals.gate_wait_seconds + row.gate_wait_seconds)


class TabRows:
    """The listed shuffles (a merging one as None: its row is built from its live state when asked), the summaries of the
    shuffles never held and the totals. Written by the scheduler's thread; any thread may read."""

    def __init__(self, keep: int = MAX_FINISHED):
        self.keep = keep
        self.totals = no_totals()
        self._listed: OrderedDict[int, SettledShuffle | None] = OrderedDict()
        self._unheld: OrderedDict[int, SettledShuffle] = OrderedDict()  # the latest ``keep`` never held: not listed, but known
        self._unmerged: dict[str, messages.RiffleUnmerged] = {}

    def __contains__(self, sid: int) -> bool:
        return sid in self._listed or sid in self._unheld

    def seen(self, sid: int, mergeable: bool, not_held: str) -> None:
        """A map stage submitted: counted, and listed as merging when ``mergeable``."""
        self.totals = seen(self.totals, "" if mergeable else not_held)
        if mergeable:
            self._listed[sid] = None

    def finished(self, r: SettledShuffle, cause: str) -> None:
        """``r`` settled replaces its merging row; never held, it leaves the list and is counted unmerged for ``cause`` in
        the totals and that cause's summary. Only the latest ``keep`` settled rows stay listed."""
        if not r.held:
            self.totals = unmerged_blocks(never_held(self.totals, cause) if r.mergeable else self.totals, settled_row(r))
            self._unmerged[cause] = count_unmerged(self._unmerged.get(cause), r, cause)
            self._listed.pop(r.shuffle_id, None)
            self._unheld[r.shuffle_id] = r
            while len(self._unheld) > self.keep:
                self._unheld.popitem(last=False)
            return
        self.totals = add_to_totals(self.totals, settled_row(r))
        self._listed[r.shuffle_id] = r
        finished = [sid for sid, f in self._listed.items() if f is not None]
        for sid in finished[:max(len(finished) - self.keep, 0)]:
            del self._listed[sid]

    def clean(self, sid: int) -> bool:
        """Marks the finished shuffle ``sid`` cleaned; whether it was listed."""
        r = self._listed.get(sid)
        if r is None:
            return False
        self._listed[sid] = cleaned(r)
        return True

    def settled(self) -> dict[int, SettledShuffle]:
        """The records of the listed settled shuffles and of the latest mergeable ones never held, by shuffle id."""
        records = [r for r in [*list(self._listed.values()), *list(self._unheld.values())] if r is not None and r.mergeable]
        return {r.shuffle_id: r for r in sorted(records, key=lambda r: r.shuffle_id)}

    def unmerged(self) -> list[messages.RiffleUnmerged]:
        """The summary of the shuffles never held, one per cause with any, in the schema's order of causes."""
        summaries = dict(self._unmerged)
        return [summaries[c] for c in messages.NOT_HELD_CAUSES if c in summaries] + [
            s for c, s in summaries.items() if c not in messages.NOT_HELD_CAUSES]

    def rows(self, live: Callable[[int], messages.RiffleShuffle | None]) -> list[messages.RiffleShuffle]:
        """Every listed shuffle's row in the order seen; ``live(sid)`` builds a merging one's (None: no longer known)."""
        rows = []
        for sid, r in list(self._listed.items()):
            row = live(sid) if r is None else settled_row(r)
            if row is not None:
                rows.append(row)
        return rows


__all__ = ["MAX_FINISHED", "TabRows", "add_to_totals", "count_unmerged", "live_row", "never_held", "no_totals", "seen", "settled_row", "unmerged_blocks"]
