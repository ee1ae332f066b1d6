"""What the merge scheduler tells those who watch it (the lab's fault points, the tests' waits), in its
own thread and in its own order; an observer overrides only what it watches."""

from __future__ import annotations

from riffle import messages
from riffle.driver.merges import ShuffleState


class SchedulerObserver:
    """Each method does nothing unless overridden. Called in the scheduler's thread; an observer that
    raises fails that step (held shuffles are then released unmerged), so observers do little and return."""

    def on_event(self, event: messages.Message) -> None:
        """A shim event (``riffle.messages``), just before the scheduler handles it."""
        return None

    def on_settled(self, shuffle: ShuffleState) -> None:
        """A held shuffle settled: its merges committed or cancelled, its reducers released, its stats recorded."""
        return None


__all__ = ["SchedulerObserver"]
