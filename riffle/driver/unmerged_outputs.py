"""Why a settled shuffle's map outputs that were not merged stayed unmerged. A shuffle can settle "all merges finished"
with most of its outputs unmerged: outputs whose executor never had enough to fill a group are in no merge at all, so
counting only the groups that fell back says nothing of them. Here every output the scheduler saw is either in a
committed merge or counted once under one cause of ``messages.OUTPUT_CAUSES``. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from riffle import messages
from riffle.driver.merges import MergeState, ShuffleState, merged_outputs
from riffle.driver.policy import has_data
from riffle.driver.status import OTHER
from sparkshim.wording import counted

UNFILLED = "unfilled"  # in a group of its executor's outputs that never filled (the policy's leftover)
LEFT_ALONE = "left_alone"  # the policy leaves it alone: its blocks were at the target size already (or of unknown size)
EMPTY = "empty"  # it wrote no rows: nothing to merge
assert {UNFILLED, LEFT_ALONE, EMPTY, *messages.FALLBACK_CAUSES} == set(messages.OUTPUT_CAUSES), messages.OUTPUT_CAUSES


def outputs_unmerged(s: ShuffleState) -> dict[str, int]:
    """The outputs of settled ``s`` left unmerged, by cause: its groups' fallback causes (never sent, failed, cancelled, or
    finished but not committed), its policy's leftover and skipped outputs, and the outputs with no data."""
    counts: Counter[str] = Counter(s.unsent_outputs)
    for m in s.merges:
        if m.state in (MergeState.FAILED, MergeState.CANCELLED):
            counts[m.cause or OTHER] += len(m.members)
    counts[OTHER] += sum(len(m.members) for m in s.merges if m.state is MergeState.DONE) - merged_outputs(s) + len(s.undecided)
    if s.policy is not None:
        counts[LEFT_ALONE] += len(s.policy.skipped)
        counts[UNFILLED] += len(s.policy.leftover()) - len(s.policy.skipped)
    counts[EMPTY] += sum(1 for o in s.outputs.values() if not has_data(o))
    return {c: counts[c] for c in messages.OUTPUT_CAUSES if counts[c] > 0}


def why_unmerged(counts: Mapping[str, int], outputs: int, unfilled: str) -> str:
    """``counts`` (:func:`outputs_unmerged`) in words, for the Riffle tab's row: ``36 of 64 outputs unmerged: 36 in groups
    that never filled (fewer than 4 outputs on their executor)``; ``unfilled``: the policy's why. Empty when none."""
    unmerged = sum(counts.values())
    if unmerged == 0:
        return ""
    parts = []
    for cause in messages.OUTPUT_CAUSES:
        n = counts.get(cause, 0)
        groups = "a group" if n == 1 else "groups"
        if n == 0:
            continue
        if cause == UNFILLED:
            parts.append(f"{n} in {groups} that never filled ({unfilled})")
        elif cause == LEFT_ALONE:
            parts.append(f"{n} left alone (blocks at the target size already, or of unknown size)")
        elif cause == EMPTY:
            parts.append(f"{n} empty (no rows written: nothing to fetch)")
        else:
            parts.append(f"{n} in {groups} that fell back ({cause.replace('_', ' ')})")
    return f"{unmerged} of {counted(outputs, 'output')} unmerged: {'; '.join(parts)}"


__all__ = ["EMPTY", "LEFT_ALONE", "UNFILLED", "outputs_unmerged", "why_unmerged"]
