"""Merger Status calls off the scheduler's thread: the fleet asks, the calls run on threads of their own
(at most one in flight per merger, each under its deadline), and the fleet collects the answers at its
next step. A merger that hangs in Status delays only its own answer, never a shuffle's decision."""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from riffle.merger.storage import out_of_range, reported
from riffle.storage_cost import NodeStorage

STATUS_DEADLINE_SECONDS = 10.0  # every Status call's deadline (a token rotation may send it twice)
MAX_STATUS_THREADS = 4  # Status calls in flight at once, whatever the number of mergers
MAX_SERVED_DIRS, MAX_DIR_CHARS = 64, 4096  # of a merger's served dirs, as many are kept, each at most this long


class Pending(Enum):
    PENDING = "pending"


PENDING: Final = Pending.PENDING  # a merger's first Status answer is awaited


@dataclass(frozen=True)
class Answer:
    """A merger's Status reply, each figure checked: a load that is no number >= 0 is infinite (that merger is placed
    last), negative queue counts are 0, a storage figure out of range is unknown (``wrong`` says which), the served dirs
    bounded in number and length."""

    load: float
    queues: tuple[int, int]  # (queued, running)
    storage: NodeStorage
    served: tuple[str, ...]
    wrong: list[str]

    @classmethod
    def of(cls, status: Any) -> Answer:
        load = float(status.load)
        return cls(load if math.isfinite(load) and load >= 0 else float("inf"),
                   (max(int(status.queued), 0), max(int(status.running), 0)), reported(status),
                   tuple(str(d)[:MAX_DIR_CHARS] for d in status.local_dirs[:MAX_SERVED_DIRS]), out_of_range(status))


class StatusCalls:
    def __init__(self, threads: int = MAX_STATUS_THREADS):
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="riffle-status")
        self._asking: dict[str, Future] = {}

    def asking(self, address: str) -> bool:
        return address in self._asking

    def ask(self, address: str, call: Callable[[], Any]) -> None:
        """Runs ``call()`` (a Status request of ``address`` with its deadline) in the background unless one is in flight."""
        if address not in self._asking:
            try:
                self._asking[address] = self._pool.submit(call)
            except RuntimeError:  # closed (the fleet stopped, or the interpreter is exiting): nothing is asked any more
                pass

    def answers(self) -> list[tuple[str, Future]]:
        """The calls that returned or failed since the last look, each once."""
        done = [(a, f) for a, f in list(self._asking.items()) if f.done()]
        for address, _ in done:
            del self._asking[address]
        return done

    def close(self) -> None:
        """Drops calls not started; a running one ends by its deadline."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._asking.clear()


__all__ = ["PENDING", "STATUS_DEADLINE_SECONDS", "Answer", "Pending", "StatusCalls"]
