"""Running one Merge: admitted on the event loop, merged in the merge pool, counted and logged when it ends.

Nothing here blocks the event loop: the wait for admission is an ``asyncio`` future and the merge itself
runs in the daemon's own merge threads. A call gRPC cancels (caller gone, deadline passed) cancels its merge.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from riffle.merger.concat import memory_needed
from riffle.merger.config import Config
from riffle.merger.counters import Counters
from riffle.merger.engine import MergeResult, MergeSpec, fds_needed, merge_map_outputs
from riffle.merger.inflight import InFlight, InFlightMerges, Output
from riffle.merger.journal import Journal
from riffle.merger.leases import Leases
from riffle.merger.memory import Aborted, Admission, Overloaded, Ticket, plan_buffers
from riffle.merger.metrics import Metrics
from riffle.merger.paths import Location, Roots
from riffle.merger.refusals import Code, Refused, merge_failure
from riffle.shuffle.layout import block_location, data_file_name

log = logging.getLogger("riffle.merger")


@dataclass(frozen=True)
class Merged:
    result: MergeResult
    queue_seconds: float
    merge_seconds: float


class Merges:
    def __init__(self, roots: Roots, journal: Journal, config: Config, admission: Admission, inflight: InFlightMerges,
                 leases: Leases, counters: Counters, metrics: Metrics, pool: ThreadPoolExecutor):
        self.roots, self.journal, self.config = roots, journal, config
        self.admission, self.inflight, self.leases = admission, inflight, leases
        self.counters, self.metrics, self.pool = counters, metrics, pool
        self.shutting_down = False

    async def run(self, request_id: str, executor_id: str, spec: MergeSpec, locs: list[Location], queued_bytes: int) -> Merged:
        if self.shutting_down:
            raise Refused(Code.UNAVAILABLE, "merger is shutting down")
        try:
            self.leases.renew(spec.app_id)
        except Refused:
            self.counters.count("rejected")
            raise
        name = data_file_name(spec.shuffle_id, spec.merged_map_id)
        index, sub = block_location(len(locs), name, spec.sub_dirs)
        output: Output = (locs[index], sub, name)
        self.inflight.check_free(request_id, output, self.roots.display(*output))
        read_buf, write_buf, ticket = self._admit(spec, len(locs), queued_bytes)
        entry = InFlight(output, spec.app_id, spec.shuffle_id, ticket=ticket)
        self.inflight.add(request_id, entry)
        self.metrics.inputs.observe(len(spec.map_ids))
        handed_off = False
        try:
            waited = await self._wait(request_id, ticket)
            entry.running = True
            loop = asyncio.get_running_loop()
            started = time.monotonic()
            work = self.pool.submit(self._merge_in_thread, spec, locs, read_buf, write_buf, entry)
            handed_off = True
            work.add_done_callback(lambda _: loop.call_soon_threadsafe(self._ended, request_id, entry, work))
            try:
                result = await asyncio.wrap_future(work)
            except asyncio.CancelledError:  # the caller went away or its deadline passed
                entry.cancel.cancel()
                self._caller_gone(request_id, "running")
                raise
            except BaseException as exc:
                raise self._failed(request_id, exc) from exc
        finally:
            if not handed_off:
                self.inflight.finish(request_id, entry)
        elapsed = time.monotonic() - started
        self.counters.merged(result.bytes_read, result.bytes_written, elapsed)
        self.metrics.duration.observe(elapsed)
        log.info("merged %d outputs of app %s executor %s shuffle %d into %s: %d bytes in %.3fs (queued %.3fs)", len(spec.map_ids),
                 spec.app_id, executor_id, spec.shuffle_id, result.data_path, result.bytes_written, elapsed, waited)
        return Merged(result, waited, elapsed)

    def _ended(self, request_id: str, entry: InFlight, work: Future[MergeResult]) -> None:
        """The merge thread is over: a merge that published makes its application a holder of merged files here
        (also when its caller went away), then the merge leaves the registry."""
        if not work.cancelled() and work.exception() is None:
            self.leases.hold_files((entry.app_id,))
        self.inflight.finish(request_id, entry)

    def _admit(self, spec: MergeSpec, num_dirs: int, queued_bytes: int) -> tuple[int, int, Ticket]:
        """Buffer sizes that fit the memory budget, and a ticket for them (RESOURCE_EXHAUSTED when there is no room)."""
        c, fan_in = self.config, len(spec.map_ids)
        try:
            read_buf, write_buf = plan_buffers(fan_in, c.read_buffer, c.write_buffer, c.memory,
                                               lambda r, w: memory_needed(fan_in, spec.num_partitions, r, w))
            ticket = self.admission.ticket(memory_needed(fan_in, spec.num_partitions, read_buf, write_buf), fds_needed(fan_in, num_dirs),
                                           queued_bytes)
        except (Overloaded, ValueError) as exc:
            self.counters.count("rejected")
            raise Refused(Code.RESOURCE_EXHAUSTED, str(exc)) from exc
        return read_buf, write_buf, ticket

    async def _wait(self, request_id: str, ticket: Ticket) -> float:
        """Seconds the merge waited for admission (CANCELLED when the wait was aborted)."""
        try:
            return await self.admission.wait(ticket)
        except Aborted as exc:
            self.counters.count("cancelled")
            raise Refused(Code.CANCELLED, str(exc)) from exc
        except asyncio.CancelledError:
            self._caller_gone(request_id, "queued")
            raise

    def _merge_in_thread(self, spec: MergeSpec, locs: list[Location], read_buf: int, write_buf: int, entry: InFlight) -> MergeResult:
        def progress(n: int) -> None:
            entry.remaining_bytes -= n

        return merge_map_outputs(self.roots, self.journal, locs, spec, read_buf, write_buf, entry.cancel, progress,
                                 durable=self.config.fsync, faults=self.config.faults)

    def _failed(self, request_id: str, exc: BaseException) -> Refused:
        """The answer to a merge that raised ``exc``, counted; a failure nobody foresaw is logged with its traceback."""
        refused = merge_failure(exc)
        self.counters.count("cancelled" if refused is not None and refused.code == Code.CANCELLED else "failed")
        if refused is None:
            log.error("merge %s failed unexpectedly: %s: %s", request_id, type(exc).__name__, exc, exc_info=exc)
            refused = Refused(Code.INTERNAL, f"merge failed: {type(exc).__name__}: {exc}")
        return refused

    def _caller_gone(self, request_id: str, stage: str) -> None:
        """A call gRPC cancelled (the client went away, or its deadline passed): counted and logged, since its
        client sees CANCELLED and nothing else would show it."""
        self.counters.caller_gone(stage)
        log.warning("merge %s ended while %s: the caller cancelled it or its deadline passed", request_id, stage)
