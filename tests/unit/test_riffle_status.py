"""The Riffle tab's model built from the scheduler's per-shuffle state: every group merged or fallen
back for one cause, every map output merged or left unmerged for one, the shuffles never held summarized
by cause, totals summed over settled shuffles, all as schema messages."""

from __future__ import annotations

import dataclasses
from collections import Counter

import grpc

from riffle import messages
from riffle.driver import status, tab_rows, unmerged_outputs
from riffle.driver.merges import Merge, ShuffleState
from riffle.driver.policy import MapOutput, NWayPolicy
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


def test_a_flood_of_shuffles_never_held_leaves_the_merged_one_listed():
    """spark.ml's own tiny shuffles (unsafe to merge) once filled the list of the latest finished shuffles, pushing the
    merged one off it: now each never-held cause is one summary, and the list keeps the settled shuffles."""
    rows = tab_rows.TabRows()
    rows.seen(5, True, "")
    rows.finished(settle(settled_shuffle(), "all merges finished", 101.0, "nway 2"), "")
    flood = range(6, 6 + 2 * tab_rows.MAX_FINISHED)
    for sid in flood:
        rows.seen(sid, False, "unsafe")
        never = ShuffleState(sid, 2 * sid, 1, 1, False, None, finalized=True, name="treeAggregate at RDDLossFunction.scala:61")
        rows.finished(settle(never, "unsafe to merge: serializer JavaSerializer", 0.0, ""), "unsafe")
    assert [r.shuffle for r in rows.rows(lambda sid: None)] == [5]
    (summary,) = rows.unmerged()
    assert (summary.cause, summary.shuffles, list(summary.latest)) == ("unsafe", len(flood), list(flood)[-messages.MAX_UNMERGED_LATEST:])
    assert (summary.stage, summary.name, summary.reason) == (2 * flood[-1], "treeAggregate at RDDLossFunction.scala:61",
                                                              "unsafe to merge: serializer JavaSerializer")
    assert rows.totals.unmerged == {"unsafe": len(flood)} and rows.totals.settled == 1 and 5 in rows and flood[-1] in rows


def test_a_settled_shuffle_says_why_its_unmerged_outputs_stayed_unmerged():
    """A shuffle with groups merged read "all merges finished" while most of its outputs stayed unmerged: each output is
    now counted merged or under one cause, the leftover of groups that never filled included."""
    policy = NWayPolicy(4)
    outs = {i: MapOutput(5, i, 100 + i, str(i % 2), "h", 0 if i == 9 else 100) for i in range(10)}  # 9 wrote no rows
    s = ShuffleState(5, 7, 10, 4, True, policy, outputs=outs, map_done_at=100.0)
    groups = [g for o in outs.values() if o.bytes for g in policy.add(o)]
    assert [[o.map_index for o in g] for g in groups] == [[0, 2, 4, 6], [1, 3, 5, 7]]  # 8 waits for 3 more on executor 0
    assert unmerged_outputs.why_unmerged({"unfilled": 1}, 10, policy.unfilled()) == (
        "1 of 10 outputs unmerged: 1 in a group that never filled (fewer than 4 outputs on their executor)")
    assert policy.flush() == [] and [o.map_index for o in policy.leftover()] == [8]  # alone at the map stage's end: kept
    merged, down = (Merge(r, 5, g, i, "m:1", ["/d"]) for i, (r, g) in enumerate(zip("ab", groups, strict=True)))
    merged.succeed([1, 1, 1, 1])
    down.fail("UNAVAILABLE: down", status.MERGER_DOWN)
    s.merges, s.committed, s.finalized = [merged, down], 1, True
    row = tab_rows.settled_row(settle(s, "all merges finished", 101.0, "nway 4"))
    assert (row.reason, row.outputs, row.outputs_unmerged) == ("all merges finished", 10, {"unfilled": 1, "merger_down": 4, "empty": 1})
    assert row.unmerged_why == ("6 of 10 outputs unmerged: 1 in a group that never filled (alone on its executor at the map stage's end); "
                                "4 in groups that fell back (merger down); 1 empty (no rows written: nothing to fetch)")
    s.committed = 0  # the shim refused the commit: the finished merge's outputs stayed unmerged too
    assert unmerged_outputs.outputs_unmerged(s) == {"unfilled": 1, "merger_down": 4, "empty": 1, "other": 4}
