"""What watches the epoch loop (like Ray Tune's scheduler callbacks): each epoch's allocation and
status, and each job's end. Override what you need; every hook defaults to nothing.

The runtime publishes each status to the Spark UI tab and the driver log through one; the lab and
the tests watch the loop through their own. A hook runs on the thread that caused it (the loop's
for allocations and statuses, a user's for a job's end) and must not block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slaq.live.allocation import Decision
from slaq.live.job import LiveJob


class LoopObserver:
    def on_allocated(self, jobs: Sequence[LiveJob], decision: Decision) -> None:
        """An allocation was decided for ``jobs`` (in ``decision.jobs`` order), before it is deposited."""

    def before_status(self) -> None:
        """This epoch's status is about to be built (after the deposit)."""

    def on_status(self, status: Any) -> None:
        """This epoch's ``epoch_status`` message (slaq.live.status), to every observer in turn."""

    def on_job_ended(self, job: LiveJob) -> None:
        """``job`` left the loop, with its whole history."""
