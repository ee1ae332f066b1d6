"""Admission: a merge runs only when its memory, descriptors and a worker slot fit; the rest wait in a bounded FIFO.

A merge reserves what :func:`riffle.merger.concat.memory_needed` says before it allocates anything.
Waiting happens on the event loop (an ``asyncio`` future per waiter), never in a gRPC or merge
thread, so the queue bound is real and control calls are never starved: past ``max_queue`` waiting
merges, or past ``max_queue_bytes`` of memory held by waiting requests (their decoded messages and
paths), a new one is refused at once. All methods run on the event loop thread.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from riffle.merger.counters import Counters


class Overloaded(RuntimeError):
    """The wait queue is full."""


class Aborted(RuntimeError):
    """The wait was abandoned (cancelled, caller gone, or shutting down)."""


MIN_READ_BUFFER = 64 * 1024


def plan_buffers(fan_in: int, read_buffer: int, write_buffer: int, budget: int, need: Callable[[int, int], int]) -> tuple[int, int]:
    """Buffer sizes for one request, shrunk (not below 64 KiB) until ``need(read, write)`` fits the budget."""
    read, write = read_buffer, write_buffer
    while need(read, write) > budget and (read > MIN_READ_BUFFER or write > MIN_READ_BUFFER):
        read = max(MIN_READ_BUFFER, read // 2)
        write = max(MIN_READ_BUFFER, write // 2)
    if need(read, write) > budget:
        raise ValueError(f"a merge of {fan_in} inputs needs at least {need(read, write)} bytes, "
                         f"more than the whole memory budget of {budget} bytes")
    return read, write


@dataclass
class Ticket:
    memory: int
    fds: int
    queued_bytes: int = 0  # what the request holds while it waits (its decoded message), counted until it is granted
    future: asyncio.Future | None = None
    granted: bool = False


class Admission:
    def __init__(self, counters: Counters, memory: int, fds: int, slots: int, max_queue: int, max_queue_bytes: int,
                 clock: Callable[[], float] = time.monotonic):
        if memory <= 0 or fds <= 0 or slots <= 0:
            raise ValueError("memory, descriptor and slot budgets must be positive")
        self.budget, self.fd_budget, self.slots, self.max_queue = memory, fds, slots, max_queue
        self.max_queue_bytes = max_queue_bytes
        self.in_use = self.fds_in_use = self.running = 0
        self.queued_bytes = 0
        self.counters = counters  # what it counts: waits, their time, refusals, peak memory
        self._waiting: deque[Ticket] = deque()
        self._clock = clock

    @property
    def queued(self) -> int:
        return len(self._waiting)

    def _fits(self, t: Ticket) -> bool:
        return (self.in_use + t.memory <= self.budget and self.fds_in_use + t.fds <= self.fd_budget
                and self.running < self.slots)

    def _grant(self, t: Ticket) -> None:
        self.in_use += t.memory
        self.fds_in_use += t.fds
        self.running += 1
        t.granted = True
        self.counters.peak_memory = max(self.counters.peak_memory, self.in_use)

    def ticket(self, memory: int, fds: int, queued_bytes: int = 0) -> Ticket:
        """Reserve at once if nothing waits and it fits; else join the queue, or raise :class:`Overloaded`."""
        if memory > self.budget or fds > self.fd_budget:
            raise ValueError(f"request needs {memory} bytes and {fds} descriptors, over the budgets of {self.budget} and {self.fd_budget}")
        t = Ticket(memory, fds, queued_bytes)
        if not self._waiting and self._fits(t):
            self._grant(t)
            return t
        if len(self._waiting) >= self.max_queue:
            self.counters.overloaded += 1
            raise Overloaded(f"overloaded: {len(self._waiting)} merges already wait (--max-queue {self.max_queue})")
        if self.queued_bytes + queued_bytes > self.max_queue_bytes:
            self.counters.overloaded += 1
            raise Overloaded(f"overloaded: the {len(self._waiting)} merges that wait hold {self.queued_bytes >> 20} MiB "
                             f"(--max-queue-memory {self.max_queue_bytes >> 20}m)")
        self.queued_bytes += queued_bytes
        self.counters.queued_total += 1
        t.future = asyncio.get_running_loop().create_future()
        self._waiting.append(t)
        return t

    async def wait(self, t: Ticket) -> float:
        """Wait for a queued ticket's turn; returns seconds waited. Cancelling the caller leaves the queue."""
        if t.granted:
            return 0.0
        assert t.future is not None
        started = self._clock()
        try:
            await t.future
        except BaseException:
            if t in self._waiting:
                self._waiting.remove(t)
                self.queued_bytes -= t.queued_bytes
                self._wake()
            if t.granted:
                self.release(t)
            raise
        waited = self._clock() - started
        self.counters.queue_seconds += waited
        return waited

    def abort(self, t: Ticket, reason: str) -> None:
        """End a ticket's wait with :class:`Aborted` (cancel, shutdown)."""
        if t.future is not None and not t.future.done():
            t.future.set_exception(Aborted(reason))

    def release(self, t: Ticket) -> None:
        if not t.granted:
            return
        t.granted = False
        self.in_use -= t.memory
        self.fds_in_use -= t.fds
        self.running -= 1
        self._wake()

    def _wake(self) -> None:
        """First come first served: grant the head of the queue while it fits."""
        while self._waiting and self._fits(self._waiting[0]):
            t = self._waiting.popleft()
            self.queued_bytes -= t.queued_bytes
            if t.future is not None and t.future.done():
                continue
            self._grant(t)
            assert t.future is not None
            t.future.set_result(None)
