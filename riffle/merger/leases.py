"""Application leases: an application that sends nothing (no Merge, no KeepAlive) for its lease is taken for dead.

All on the event loop; times are ``time.monotonic()``.
"""

from __future__ import annotations

import time

from riffle.merger.refusals import Code, Refused

MAX_LEASES = 1 << 16  # applications whose lease is tracked; KeepAlive of one more is refused until some expire


class Leases:
    def __init__(self, lease: float):
        self.lease = lease
        self._seen: dict[str, float] = {}  # application -> when it last sent a Merge or KeepAlive
        self._since = time.monotonic()  # what an application on record but not heard from since start-up counts from

    def heard_from(self, app_id: str) -> None:
        self._seen[app_id] = time.monotonic()

    def keep_alive(self, app_id: str) -> float:
        """Renew ``app_id``'s lease (RESOURCE_EXHAUSTED when a new one would pass MAX_LEASES); returns its length."""
        if app_id not in self._seen and len(self._seen) >= MAX_LEASES:
            raise Refused(Code.RESOURCE_EXHAUSTED, f"{len(self._seen)} application leases already held (at most {MAX_LEASES}); retry later")
        self.heard_from(app_id)
        return self.lease

    def paused(self, seconds: float) -> None:
        """The daemon did not run for ``seconds`` (SIGSTOP, a frozen VM): nobody could reach it, so no lease
        runs down for that time."""
        self._seen = {app: t + seconds for app, t in self._seen.items()}
        self._since += seconds

    def expired(self, known: set[str], now: float) -> list[str]:
        """Of ``known`` and the applications holding a lease, those silent for longer than the lease at ``now``."""
        return [app for app in known | set(self._seen) if now - self._seen.get(app, self._since) > self.lease]

    def forget(self, app_id: str) -> None:
        self._seen.pop(app_id, None)
