"""The Riffle tab's model built from the scheduler's per-shuffle state: every group merged or fallen
back for one cause, totals summed over settled shuffles, all as schema messages."""

from __future__ import annotations

import dataclasses
from collections import Counter

import grpc

from riffle import messages
from riffle.driver import status, tab_rows
from riffle.driver.merges import Merge, ShuffleState
from riffle.driver.policy import MapOutput
from riffle.driver.settled import cleaned, settle


def out(i: int) -> MapOutput:
    return MapOutput(5, i, 100 + i, "1", "h", 100)


def settled_shuffle() -> ShuffleState:
    s = ShuffleState(5, 7, 10, 4, True, None, outputs={i: out(i) for i in range(10)}, map_done_at=100.0, name="<b>x</b>")
    a, b, c, d = (Merge(r, 5, [out(2 * i), out(2 * i + 1)], i + 1, f"m:{1 + i // 2}", ["/d"]) for i, r in enumerate("abcd"))
    a.succeed([10, 0, 5, 1])
    b.fail("NOT_FOUND: gone", status.cause_of_code(grpc.StatusCode.NOT_FOUND))
    c.cancel(status.cause_of_release("best effort: 1/3"))
    d.fail("UNAVAILABLE: down", status.cause_of_code(grpc.StatusCode.UNAVAILABLE))
    s.merges = [a, b, c, d]
    s.unsent = Counter({status.MERGER_DOWN: 1})
    s.committed, s.finalized = 1, True
    return s


def test_every_unmerged_group_has_its_cause():
    s = settled_shuffle()
    assert status.fell_back(s) == {"merger_down": 2, "deleted_file": 1, "best_effort": 1}
    s.committed = 0  # the shim refused the commit: the finished merge fell back too
    assert status.fell_back(s)["other"] == 1
    assert status.cause_of_release("timeout after 30 s: 0/2 merges finished") == status.TIMED_OUT
    assert status.cause_of_release("the shim's hold timed out") == status.TIMED_OUT
    assert status.cause_of_release("map stage failed") == status.OTHER
    assert status.cause_of_code(grpc.StatusCode.PERMISSION_DENIED) == status.REFUSED
    assert status.cause_of_code(grpc.StatusCode.DEADLINE_EXCEEDED) == status.TIMED_OUT


def test_rows_and_totals_are_schema_messages_that_round_trip():
    s = settled_shuffle()
    row = tab_rows.settled_row(settle(s, "all merges finished", 101.25, "nway 2"))
    assert (row.groups_merged, row.bytes_merged, row.blocks_unmerged, row.blocks_merged, row.gate_wait_seconds, row.state) == (
        1, 16, 40, 36, 1.25, "settled")
    totals = tab_rows.seen(tab_rows.seen(tab_rows.seen(tab_rows.no_totals(), ""), ""), "unsafe")
    assert (totals.shuffles, totals.merging, totals.unmerged) == (3, 2, {"unsafe": 1})
    totals = tab_rows.add_to_totals(tab_rows.add_to_totals(totals, row), row)
    assert (totals.shuffles, totals.merging, totals.settled, totals.merged, totals.unmerged) == (3, 0, 2, 2, {"unsafe": 1})
    assert (totals.groups_merged, totals.groups_fell_back["merger_down"], totals.bytes_merged) == (2, 4, 32)
    merger = status.merger_row("m:1", status.UP, 0, 1, Counter(done=3, failed=1))
    model = status.riffle_status(3.0, [row], [merger], totals)
    assert messages.decode(messages.encode(model)) == model
    held = ShuffleState(6, 8, 4, 3, True, None, outputs={i: out(i) for i in range(2)})
    assert tab_rows.live_row(held, "nway 2").state == "merging"
    never = settle(ShuffleState(7, 9, 4, 3, False, None, finalized=True), "unsafe to merge: serializer X", 0.0, "nway 2")
    unmerged = tab_rows.settled_row(never)
    assert (unmerged.state, unmerged.reason, unmerged.policy, unmerged.cleaned) == ("unmerged", "unsafe to merge: serializer X", "none", False)
    assert tab_rows.settled_row(cleaned(never)) == dataclasses.replace(unmerged, cleaned=True)
