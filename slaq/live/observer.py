"""What watches the epoch loop (like Ray Tune's scheduler callbacks): each drain, each epoch's
allocation and status, and each job's end. Override what you need; every hook defaults to nothing.

The runtime publishes each status to the Spark UI tab and the driver log through one, and tracks
Spark Connect fits through another (:class:`slaq.integrations.connect.ConnectFits`); the lab and the tests watch
the loop through their own. A hook runs on the thread that caused it (the loop's for allocations and
statuses, a user's for a job's end, either for a drain) and must not block.
"""

from __future__ import annotations

from collections.abc import Sequence

from slaq.live.allocation import Decision
from slaq.live.job import LiveJob
from slaq.messages import EpochStatus


class LoopObserver:
    def before_drain(self) -> None:
        """The loop is about to drain the shim (one drain at a time): a job added now gets its losses from this drain on."""

    def after_drain(self) -> None:
        """That drain's losses are in the histories: a job removed now leaves with its last ones."""

    def on_allocated(self, jobs: Sequence[LiveJob], decision: Decision) -> None:
        """An allocation was decided for ``jobs`` (in ``decision.jobs`` order), before it is deposited."""

    def before_status(self) -> None:
        """This epoch's status is about to be built (after the deposit)."""

    def on_status(self, status: EpochStatus) -> None:
        """This epoch's ``epoch_status`` message (slaq.live.status), to every observer in turn."""

    def on_job_ended(self, job: LiveJob) -> None:
        """``job`` left the loop, with its whole history."""
