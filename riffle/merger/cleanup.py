"""Deleting an application's merged files: on its Cleanup, when its lease runs out, and after an orphaned merge.

Merges of the application are cancelled and waited out first, so none publishes after its Cleanup; the
file-system work runs in the io pool, never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from riffle.merger.inflight import InFlight, InFlightMerges
from riffle.merger.journal import Journal
from riffle.merger.leases import Leases
from riffle.merger.paths import Location, Roots
from riffle.merger.record import under_any
from riffle.merger.refusals import Code, Refused
from riffle.merger.requests import CleanupScope

log = logging.getLogger("riffle.merger")
MAX_PENDING_CLEANUPS = 32  # Cleanups waiting for or running in the cleanup pool; more are refused, not queued
CLEANUP_WAIT_SECONDS = 20.0  # how long a Cleanup waits for its application's merges to stop


def delete_orphan_output(roots: Roots, journal: Journal, io_pool: ThreadPoolExecutor, entry: InFlight) -> None:
    """Delete (in the io pool) what a merge published after its application's Cleanup stopped waiting for it."""
    loc, sub, name = entry.output
    where = (roots.paths[loc.root], *loc.parts, sub)
    io_pool.submit(journal.delete, entry.app_id, lambda rec: rec.data_dir != where or rec.data != name)


class Cleaner:
    def __init__(self, roots: Roots, journal: Journal, inflight: InFlightMerges, leases: Leases, io_pool: ThreadPoolExecutor):
        self.roots, self.journal, self.inflight, self.leases, self.io_pool = roots, journal, inflight, leases, io_pool
        self.pending = 0  # Cleanups under way (event loop only)

    async def cleanup(self, scope: CleanupScope) -> tuple[int, int]:
        """Delete the scope's merged files; returns (files, bytes)."""
        if self.pending >= MAX_PENDING_CLEANUPS:
            raise Refused(Code.RESOURCE_EXHAUSTED, f"{self.pending} cleanups already pending (at most {MAX_PENDING_CLEANUPS}); retry later")
        app, sid, locs = scope.app_id, scope.shuffle_id, scope.locs
        self.pending += 1
        try:
            await self._end_merges_of(app, sid, locs)
            files, freed = await asyncio.get_running_loop().run_in_executor(
                self.io_pool, self.journal.delete, app,
                lambda rec: not under_any(rec, self.roots, locs) or (sid is not None and rec.shuffle_id != sid))
        finally:
            self.pending -= 1
        log.info("cleanup of app %s %s: %d merged files, %d bytes", app, scope.what, files, freed)
        return files, freed

    async def expire_leases(self) -> list[str]:
        """Delete the merged files (and cancel the merges) of every application silent for longer than its lease:
        its driver died without Cleanup. Returns the applications expired."""
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        recorded = await loop.run_in_executor(self.io_pool, self.journal.apps)
        running = self.inflight.apps()
        self.leases.hold_files(recorded)
        expired = self.leases.expired(recorded | running, now)
        for app in expired:
            self.leases.forget(app)
            if app not in recorded and app not in running:
                continue  # it cleaned up after itself
            await self._end_merges_of(app, None, None)
            files, freed = await loop.run_in_executor(self.io_pool, self.journal.delete, app, lambda rec: False)
            log.warning("application %s sent nothing for %.0fs (its lease): its merges cancelled, its %d merged files "
                        "deleted (%d bytes)", app, self.leases.lease, files, freed)
        return expired

    async def _end_merges_of(self, app_id: str, shuffle_id: int | None, locs: list[Location] | None) -> None:
        """Cancel the app's merges into ``locs`` and wait them out, so none publishes after its Cleanup; one that is
        past cancelling publishes first (and Cleanup then deletes it), one that outlasts the wait is deleted when it ends."""
        ending = self.inflight.of_app(app_id, shuffle_id, locs)
        if not ending:
            return
        for entry in ending:
            self.inflight.cancel(entry, f"application {app_id} cleaned up")
        log.info("cleanup of app %s waits for %d of its merges to end", app_id, len(ending))
        try:
            await asyncio.wait_for(asyncio.gather(*(e.done.wait() for e in ending)), CLEANUP_WAIT_SECONDS)
        except TimeoutError:
            stuck = [e for e in ending if not e.done.is_set()]
            log.warning("cleanup of app %s: %d merges did not end within %.0fs; their output is deleted when they do",
                        app_id, len(stuck), CLEANUP_WAIT_SECONDS)
            for e in stuck:
                e.orphaned = True
