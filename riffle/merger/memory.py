"""A fixed memory budget with a bounded FIFO queue of requests waiting for buffer memory.

A merge reserves ``fan_in × read_buffer + write_buffer`` bytes before it allocates anything and
waits, in arrival order, while the budget cannot cover it; past ``max_queue`` waiting requests new
ones are refused as overloaded. Concurrency therefore never decides how much memory the daemon uses.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass


class Overloaded(RuntimeError):
    """The wait queue is full."""


class Aborted(RuntimeError):
    """The wait was abandoned (cancelled, caller gone, or shutting down)."""


MIN_READ_BUFFER = 64 * 1024


def plan_buffers(fan_in: int, read_buffer: int, write_buffer: int, budget: int) -> tuple[int, int]:
    """Buffer sizes for one request, shrunk (not below 64 KiB reads) so a lone request fits the budget."""
    read, write = read_buffer, write_buffer
    while fan_in * read + write > budget and (read > MIN_READ_BUFFER or write > MIN_READ_BUFFER):
        read = max(MIN_READ_BUFFER, read // 2)
        write = max(MIN_READ_BUFFER, write // 2)
    if fan_in * read + write > budget:
        raise ValueError(f"a merge of {fan_in} inputs needs at least {fan_in * read + write} bytes of buffers, "
                         f"more than the whole memory budget of {budget} bytes")
    return read, write


@dataclass
class Stats:
    queued_total: int = 0
    rejected: int = 0
    queue_seconds_total: float = 0.0
    peak_in_use: int = 0


class MemoryBudget:
    def __init__(self, budget: int, max_queue: int = 1024):
        if budget <= 0:
            raise ValueError("memory budget must be positive")
        self.budget = budget
        self.max_queue = max_queue
        self.in_use = 0
        self.stats = Stats()
        self._cond = threading.Condition()
        self._waiting: deque[object] = deque()

    @property
    def queued(self) -> int:
        with self._cond:
            return len(self._waiting)

    def acquire(self, amount: int, should_abort=lambda: False, poll: float = 0.2) -> float:
        """Block until ``amount`` bytes are reserved, first come first served; returns seconds waited."""
        if amount > self.budget:
            raise ValueError(f"request needs {amount} bytes, over the budget of {self.budget}")
        ticket = object()
        started = time.monotonic()
        with self._cond:
            if self._waiting or self.in_use + amount > self.budget:
                if len(self._waiting) >= self.max_queue:
                    self.stats.rejected += 1
                    raise Overloaded(f"overloaded: {len(self._waiting)} merges already wait for memory")
                self.stats.queued_total += 1
            self._waiting.append(ticket)
            try:
                while self._waiting[0] is not ticket or self.in_use + amount > self.budget:
                    if should_abort():
                        raise Aborted("merge abandoned while waiting for memory")
                    self._cond.wait(poll)
            finally:
                self._waiting.remove(ticket)
                self._cond.notify_all()
            self.in_use += amount
            self.stats.peak_in_use = max(self.stats.peak_in_use, self.in_use)
            waited = time.monotonic() - started
            self.stats.queue_seconds_total += waited
            return waited

    def release(self, amount: int) -> None:
        with self._cond:
            self.in_use -= amount
            self._cond.notify_all()
