"""Application leases: an application that sends nothing (no Merge, no KeepAlive) for its lease is taken for dead.

Who gets a lease: an application with merged files on record here is always renewed (its files are its
claim, also after a restart: the journal says which applications they belong to), so nobody can crowd it
out; their number is bounded by the disk. Every other application (nothing merged here yet) takes one of at
most ``max_apps`` leases, by KeepAlive or Merge alike; one more is refused (RESOURCE_EXHAUSTED) until some
lapse. A refused application has nothing here to lose.

All on the event loop; times are ``time.monotonic()``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from riffle.merger.refusals import Code, Refused


class Leases:
    def __init__(self, lease: float, max_apps: int, holders: Iterable[str] = ()):
        self.lease, self.max_apps = lease, max_apps
        self._seen: dict[str, float] = {}  # application -> when it last sent a Merge or KeepAlive
        self._holders = set(holders)  # applications with merged files on record here
        self._without_files: set[str] = set()  # the applications of ``_seen`` that are not holders: at most max_apps
        self._since = time.monotonic()  # what an application on record but not heard from since start-up counts from

    def renew(self, app_id: str) -> float:
        """``app_id`` was heard from (a Merge or KeepAlive): renew its lease, or refuse a new one without merged files
        here past ``max_apps`` (RESOURCE_EXHAUSTED). Returns the lease's length."""
        if app_id not in self._seen and app_id not in self._holders:
            if len(self._without_files) >= self.max_apps:
                raise Refused(Code.RESOURCE_EXHAUSTED, f"{len(self._without_files)} applications without merged files here already "
                                                       f"hold a lease (at most {self.max_apps}, --max-apps); retry later")
            self._without_files.add(app_id)
        self._seen[app_id] = time.monotonic()
        return self.lease

    def hold_files(self, apps: Iterable[str]) -> None:
        """``apps`` have merged files on record (one just published, or all of them at a lease check): from now on
        their lease is renewed whatever the table holds."""
        for app in apps:
            self._holders.add(app)
            self._without_files.discard(app)

    def paused(self, seconds: float) -> None:
        """The daemon did not run for ``seconds`` (SIGSTOP, a frozen VM): nobody could reach it, so no lease
        runs down for that time."""
        self._seen = {app: t + seconds for app, t in self._seen.items()}
        self._since += seconds

    def expired(self, known: set[str], now: float) -> list[str]:
        """Of ``known``, the holders and the applications holding a lease, those silent for longer than the lease at ``now``."""
        return [app for app in known | self._holders | set(self._seen) if now - self._seen.get(app, self._since) > self.lease]

    def forget(self, app_id: str) -> None:
        """``app_id``'s lease ran out and its merged files are gone."""
        self._seen.pop(app_id, None)
        self._holders.discard(app_id)
        self._without_files.discard(app_id)
