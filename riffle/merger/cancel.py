"""Cancelling a merge: honoured until the merge commits to publishing, refused after, never both.

A Cancel that reports found=true must mean the merge publishes nothing, and one that comes too late
must say so (found=false) rather than be ignored; one lock orders the two decisions.
"""

from __future__ import annotations

import threading

from riffle.merger.errors import MergeCancelled


class CancelToken:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._committed = False

    def cancel(self) -> bool:
        """Ask the merge to stop; False if it already committed to publishing (it will publish)."""
        with self._lock:
            if self._committed:
                return False
            self._cancelled = True
            return True

    def is_set(self) -> bool:
        """Whether the merge was cancelled (checked by the copy loop between partitions)."""
        return self._cancelled

    def commit(self, what: str) -> None:
        """The point of no return, just before the first final name appears: raises if cancelled, else no cancel counts any more."""
        with self._lock:
            if self._cancelled:
                raise MergeCancelled(f"merge into {what} cancelled before publishing")
            self._committed = True
