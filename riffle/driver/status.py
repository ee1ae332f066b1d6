"""What the merge scheduler did, as the ``riffle_status`` message (riffle/messages.json) the
driver JVM shows: the Riffle tab of the Spark UI and its JSON, Riffle's metric source, and the
summary logged at application end (``riffle/java/io/slaqriffle/riffle/RiffleStatus.java``).

Every shuffle seen is in one state: ``merging`` (its reducers held now, or mergeable and not decided yet), ``settled`` (held, then released)
or ``unmerged`` (never held, for one cause of ``messages.NOT_HELD_CAUSES``); the totals count every one
of them, the rows only the ones the scheduler still lists. Every group of map outputs of a settled
shuffle either merged (and committed) or fell back to the original files for one cause of
``messages.FALLBACK_CAUSES``. Pure functions over the scheduler's state: no Spark, no I/O (the rows and
totals themselves: :mod:`riffle.driver.tab_rows`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import grpc

from riffle import messages
from riffle.driver import cost
from riffle.driver.merges import MergeState, ShuffleState

MERGER_DOWN = "merger_down"  # no merger reachable on the host, or the merger went away mid-merge
REFUSED = "refused"  # the merger refused the request (token, TLS, paths, version, full queue or disk)
TIMED_OUT = "timed_out"  # the RPC deadline or the reducers' hold timeout passed first
DELETED_FILE = "deleted_file"  # a map output file was gone when the merger read it
BEST_EFFORT = "best_effort"  # cancelled: enough merges had finished (the best-effort fraction)
NOT_WORTH_IT = cost.NOT_WORTH_IT  # never sent: the cost model found the merge would cost more than it saves
OTHER = "other"  # map stage failed or retried, Riffle stopped, commit refused, local dirs unknown, merge error, no sub dir known for the merged files
MERGING_OFF = "merging_off"  # never held: Riffle stopped (or had stopped) merging before it was
READER_RUNNING = "reader_running"  # never held: a stage reading the shuffle was already running
RETRIED = "retried"  # never held: its map stage failed or was retried first
CAUSES: tuple[str, ...] = messages.FALLBACK_CAUSES
assert set(CAUSES) == {MERGER_DOWN, REFUSED, TIMED_OUT, DELETED_FILE, BEST_EFFORT, NOT_WORTH_IT, OTHER}, CAUSES
assert {MERGING_OFF, READER_RUNNING, RETRIED, NOT_WORTH_IT} <= set(messages.NOT_HELD_CAUSES), messages.NOT_HELD_CAUSES

_CODE_CAUSES = {
    grpc.StatusCode.UNAVAILABLE: MERGER_DOWN, grpc.StatusCode.DEADLINE_EXCEEDED: TIMED_OUT, grpc.StatusCode.NOT_FOUND: DELETED_FILE,
    grpc.StatusCode.UNAUTHENTICATED: REFUSED, grpc.StatusCode.PERMISSION_DENIED: REFUSED, grpc.StatusCode.UNIMPLEMENTED: REFUSED,
    grpc.StatusCode.INVALID_ARGUMENT: REFUSED, grpc.StatusCode.FAILED_PRECONDITION: REFUSED,
    grpc.StatusCode.RESOURCE_EXHAUSTED: REFUSED, grpc.StatusCode.ALREADY_EXISTS: REFUSED,
}
UP, DOWN = "up", "down"  # a merger's health; REFUSED too
MERGING, SETTLED, UNMERGED = "merging", "settled", "unmerged"  # a shuffle's state (riffle_shuffle.state)


def cause_of_code(code: grpc.StatusCode) -> str:
    """The fallback cause of a merge whose RPC failed with ``code``."""
    return _CODE_CAUSES.get(code, OTHER)


def cause_of_release(reason: str) -> str:
    """The fallback cause of a merge still running when its shuffle's reducers were released for ``reason``
    (the scheduler's own wording: :func:`riffle.driver.merges.settle_reason` and the hold's expiry)."""
    if reason.startswith("best effort"):
        return BEST_EFFORT
    if reason.startswith("timeout") or "timed out" in reason:
        return TIMED_OUT
    return OTHER


def fell_back(s: ShuffleState) -> dict[str, int]:
    """Groups of ``s`` left unmerged, by cause: never sent, failed, cancelled, or finished but not committed."""
    counts: Counter[str] = Counter(s.unsent)
    counts.update(m.cause or OTHER for m in s.merges if m.state in (MergeState.FAILED, MergeState.CANCELLED))
    done = sum(1 for m in s.merges if m.state is MergeState.DONE)
    if s.finalized and done > s.committed:
        counts[OTHER] += done - s.committed
    return {c: counts[c] for c in CAUSES if counts[c]}


def bytes_merged(s: ShuffleState) -> int:
    """Bytes in the committed merged files (averaged over the finished merges when the shim skipped some)."""
    done = [sum(m.lengths) for m in s.merges if m.state is MergeState.DONE]
    if not done or s.committed <= 0:
        return 0
    return sum(done) if s.committed >= len(done) else round(s.committed * sum(done) / len(done))


def merger_row(address: str, health: str, queued: int, running: int, outcomes: Mapping[str, int]) -> messages.RiffleMerger:
    """One merger's ``riffle_merger``: ``outcomes`` counts its merges by final state (done, failed, cancelled)."""
    return messages.RiffleMerger(address=address, health=health, queued=int(queued), running=int(running),
                                 merges_done=int(outcomes.get(MergeState.DONE, 0)), merges_failed=int(outcomes.get(MergeState.FAILED, 0)),
                                 merges_cancelled=int(outcomes.get(MergeState.CANCELLED, 0)))


def riffle_status(t: float, rows: Iterable[messages.RiffleShuffle], mergers: Iterable[messages.RiffleMerger],
                  totals: messages.RiffleTotals, unmerged: Iterable[messages.RiffleUnmerged] = ()) -> messages.RiffleStatus:
    return messages.RiffleStatus(t=float(t), shuffles=list(rows), unmerged=list(unmerged), mergers=list(mergers), totals=totals)


def policy_label(policy: str, nway: int, target_block_bytes: int) -> str:
    """The merge policy as the tab shows it."""
    return f"nway {nway}" if policy == "nway" else f"{policy}, target block {target_block_bytes} B"
