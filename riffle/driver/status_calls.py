"""Merger Status calls off the scheduler's thread: the fleet asks, the calls run on threads of their own
(at most one in flight per merger, each under its deadline), and the fleet collects the answers at its
next step. A merger that hangs in Status delays only its own answer, never a shuffle's decision."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

STATUS_DEADLINE_SECONDS = 10.0  # every Status call's deadline (a token rotation may send it twice)
MAX_STATUS_THREADS = 4  # Status calls in flight at once, whatever the number of mergers


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


__all__ = ["STATUS_DEADLINE_SECONDS", "StatusCalls"]
