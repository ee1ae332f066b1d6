"""The merges in flight (waiting for admission or running), by request id and by output, and cancelling them.

Only the event loop touches the registry; a merge thread's end reaches it through ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from riffle.merger.cancel import CancelToken
from riffle.merger.memory import Admission, Ticket
from riffle.merger.paths import Location
from riffle.merger.refusals import Code, Refused

Output = tuple[Location, str, str]  # (local dir, sub dir, data file name) of a merged pair


@dataclass
class InFlight:
    output: Output
    app_id: str
    shuffle_id: int
    cancel: CancelToken = field(default_factory=CancelToken)
    ticket: Ticket | None = None
    remaining_bytes: int = 0
    running: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)  # set once its thread (or its wait) is over
    orphaned: bool = False  # its application was cleaned up while it ran: whatever it publishes is deleted


class InFlightMerges:
    def __init__(self, admission: Admission, on_orphan_done: Callable[[InFlight], None]):
        self.admission = admission
        self.on_orphan_done = on_orphan_done  # deletes what an orphaned merge published
        self._by_id: dict[str, InFlight] = {}
        self._outputs: set[Output] = set()

    def __len__(self) -> int:
        return len(self._by_id)

    def check_free(self, request_id: str, output: Output, shown_output: str) -> None:
        """Refuse a request id or an output already in flight (ALREADY_EXISTS)."""
        if request_id in self._by_id:
            raise Refused(Code.ALREADY_EXISTS, f"request {request_id} is already in flight")
        if output in self._outputs:
            raise Refused(Code.ALREADY_EXISTS, f"a merge into {shown_output} is already in flight")

    def add(self, request_id: str, entry: InFlight) -> None:
        self._by_id[request_id] = entry
        self._outputs.add(entry.output)

    def get(self, request_id: str) -> InFlight | None:
        return self._by_id.get(request_id)

    def finish(self, request_id: str, entry: InFlight) -> None:
        """Called once the merge thread (or the wait) is over: its resources and its output name are free again."""
        if entry.ticket is not None:
            self.admission.release(entry.ticket)
        entry.running = False
        if self._by_id.get(request_id) is entry:
            del self._by_id[request_id]
        self._outputs.discard(entry.output)
        entry.done.set()
        if entry.orphaned:  # published after its application's Cleanup gave up waiting: delete it now
            self.on_orphan_done(entry)

    def cancel(self, entry: InFlight, reason: str) -> bool:
        """Cancel one merge; False when it is too late (it committed to publishing and will)."""
        if not entry.cancel.cancel():
            return False
        if entry.ticket is not None:
            self.admission.abort(entry.ticket, reason)
        return True

    def cancel_all(self, reason: str) -> None:
        for entry in list(self._by_id.values()):
            self.cancel(entry, reason)

    def abort_queued(self, reason: str) -> None:
        for entry in list(self._by_id.values()):
            if not entry.running:
                self.cancel(entry, reason)

    def of_app(self, app_id: str, shuffle_id: int | None = None, locs: list[Location] | None = None) -> list[InFlight]:
        """The app's merges (of one shuffle, into some dirs, when given)."""
        return [e for e in self._by_id.values()
                if e.app_id == app_id and (shuffle_id is None or e.shuffle_id == shuffle_id) and (locs is None or e.output[0] in locs)]

    def apps(self) -> set[str]:
        return {e.app_id for e in self._by_id.values()}

    def load(self) -> tuple[int, int, int]:
        """(merges waiting for admission, merges running, bytes they still have to merge)."""
        running = sum(1 for e in self._by_id.values() if e.running)
        remaining = sum(max(e.remaining_bytes, 0) for e in self._by_id.values())
        return len(self._by_id) - running, running, remaining
