"""The Merger gRPC service (asyncio): validates requests, admits them on the event loop, runs merges in worker threads.

RPC handlers never block: a merge waits for admission as an ``asyncio`` future and runs in the
daemon's own merge threads, and file-system work of Cleanup runs in a separate small pool, so Status,
Cancel and the health check are answered at once whatever the merge load.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import grpc

from riffle.merger.cancel import CancelToken
from riffle.merger.concat import memory_needed
from riffle.merger.engine import MergeResult, MergeSpec, fds_needed, merge_map_outputs
from riffle.merger.errors import DISK_FULL_ERRNOS, DiskFull, MergeCancelled, shown
from riffle.merger.faults import NO_FAULTS, Faults
from riffle.merger.journal import Journal, under_any
from riffle.merger.memory import Aborted, Admission, Overloaded, Ticket, plan_buffers
from riffle.merger.metrics import Metrics
from riffle.merger.paths import Location, PathRefused, Roots
from riffle.protocol import pb, pb_grpc
from riffle.shuffle.layout import DEFAULT_SUB_DIRS, INT64_MAX, SYNTHETIC_MAP_ID_BASE, CorruptShuffleFile, block_location, data_file_name
from riffle.version import package_version

log = logging.getLogger("riffle.merger")
MAX_PARTITIONS = 1 << 24
MAX_FAN_IN = 4096
MAX_LOCAL_DIRS = 64
MAX_PENDING_CLEANUPS = 32  # Cleanups waiting for or running in the cleanup pool; more are refused, not queued
CLEANUP_WAIT_SECONDS = 20.0  # how long a Cleanup waits for its application's merges to stop
DEFAULT_APP_LEASE = 600.0  # seconds an application may send nothing (no Merge, no KeepAlive) before its merged files go
MAX_LEASE_CHECK_SECONDS = 30.0  # expired leases are looked for every min(lease / 4, this)
MAX_LEASES = 1 << 16  # applications whose lease is tracked; KeepAlive of one more is refused until some expire
MAX_ID = 256               # characters of a request id or application id
MAX_PATH = 4096            # characters of a local dir (PATH_MAX)
MAX_NAME = 255             # characters of one of its components (NAME_MAX)
MAX_MESSAGE = 1024         # characters of an error message sent back or logged
EXECUTOR_ID = re.compile(r"[A-Za-z0-9._:-]{0,128}")  # Spark's executor ids: "driver", "0", "17"


QUEUED_BASE_BYTES = 16 << 10  # gRPC's and the handler's own state per waiting call
QUEUED_BYTES_PER_BYTE = 5     # a waiting request's decoded message, its paths as strings and located, per byte it took on the wire


def queued_cost(request: pb.MergeRequest) -> int:
    """Memory a request holds while it waits for admission (measured: about 4 bytes of RSS per byte of message)."""
    return QUEUED_BASE_BYTES + QUEUED_BYTES_PER_BYTE * request.ByteSize()


def check_id(field: str, value: str) -> None:
    """A request or application id: 1 to MAX_ID printable characters (it is logged and recorded)."""
    if not 0 < len(value) <= MAX_ID or not value.isprintable():
        raise ValueError(f"{field} must be 1 to {MAX_ID} printable characters, got {shown(value)!r}")


def check_local_dir(path: str) -> None:
    if len(path) > MAX_PATH or any(len(part) > MAX_NAME for part in path.split("/")):
        raise ValueError(f"local dir {shown(path)!r} is longer than {MAX_PATH} characters or has a component longer than {MAX_NAME}")


@dataclass
class Config:
    read_buffer: int = 4 << 20
    write_buffer: int = 16 << 20
    memory: int = 2 << 30
    max_queue: int = 1024
    max_queue_memory: int = 32 << 20  # what waiting requests may hold (see queued_cost); inside the 64 MB over --memory
    fsync: bool = True  # False matches Spark, which never fsyncs its own shuffle files
    merge_threads: int = 8
    fd_budget: int = 1024
    max_fan_in: int = MAX_FAN_IN
    faults: Faults = NO_FAULTS  # crash injection for the crash tests; riffle-merger serve reads it from the environment
    app_lease: float = DEFAULT_APP_LEASE

    @property
    def lease_check_seconds(self) -> float:
        return min(self.app_lease / 4, MAX_LEASE_CHECK_SECONDS)


@dataclass
class _Counters:
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    bytes_merged: int = 0
    merge_seconds: float = 0.0


@dataclass
class _InFlight:
    output: tuple  # (Location, sub dir, data file name)
    app_id: str
    shuffle_id: int
    cancel: CancelToken = field(default_factory=CancelToken)
    ticket: Ticket | None = None
    remaining_bytes: int = 0
    running: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)  # set once its thread (or its wait) is over
    orphaned: bool = False  # its application was cleaned up while it ran: whatever it publishes is deleted


class MergerService(pb_grpc.MergerServicer):
    def __init__(self, roots: Roots, journal: Journal, config: Config):
        self.roots, self.journal, self.config = roots, journal, config
        self.admission = Admission(config.memory, config.fd_budget, config.merge_threads, config.max_queue, config.max_queue_memory)
        self.counters = _Counters()
        self._inflight: dict[str, _InFlight] = {}
        self._outputs: set[tuple] = set()
        self.merge_pool = ThreadPoolExecutor(config.merge_threads, thread_name_prefix="merge")
        self.io_pool = ThreadPoolExecutor(2, thread_name_prefix="cleanup")
        self.cleanups_pending = 0  # only touched on the event loop
        self._seen: dict[str, float] = {}  # application -> when it last sent a Merge or KeepAlive (event loop only)
        self._since = time.monotonic()  # what an application on record but not heard from since start-up counts from
        self.shutting_down = False
        self.version = package_version()
        self.metrics = Metrics(lambda: self.admission.queued, lambda: self.admission.in_use, lambda: self.admission.running)

    # -- helpers -------------------------------------------------------------------------------
    def _validate(self, req: pb.MergeRequest) -> tuple[MergeSpec, list[Location]]:
        check_id("request_id", req.request_id)
        check_id("app_id", req.app_id)
        if not EXECUTOR_ID.fullmatch(req.executor_id):
            raise ValueError(f"executor_id must be up to 128 letters, digits and ._:- characters, got {shown(req.executor_id)!r}")
        if req.shuffle_id < 0:
            raise ValueError(f"shuffle_id must be >= 0, got {req.shuffle_id}")
        if not 0 < req.num_partitions <= MAX_PARTITIONS:
            raise ValueError(f"num_partitions must be in 1..{MAX_PARTITIONS}, got {req.num_partitions}")
        if not 0 < len(req.map_ids) <= self.config.max_fan_in:
            raise ValueError(f"between 1 and {self.config.max_fan_in} map_ids are merged at once (open-file limit), got {len(req.map_ids)}")
        if any(m < 0 or m >= SYNTHETIC_MAP_ID_BASE for m in req.map_ids):
            raise ValueError("map_ids must be task attempt ids in [0, 2^62)")
        if len(set(req.map_ids)) != len(req.map_ids):
            raise ValueError("map_ids contains duplicates")
        if not SYNTHETIC_MAP_ID_BASE <= req.merged_map_id <= INT64_MAX:
            raise ValueError(f"merged_map_id must be in [2^62, 2^63), got {req.merged_map_id}")
        sub_dirs = req.sub_dirs_per_local_dir or DEFAULT_SUB_DIRS
        if not 0 < sub_dirs <= 1 << 16:
            raise ValueError(f"sub_dirs_per_local_dir out of range: {sub_dirs}")
        locs = self._locate(req.local_dirs)
        spec = MergeSpec(req.app_id, req.shuffle_id, tuple(req.map_ids), req.merged_map_id, req.num_partitions, sub_dirs)
        return spec, locs

    def _locate(self, local_dirs) -> list[Location]:
        if len(local_dirs) > MAX_LOCAL_DIRS:
            raise ValueError(f"at most {MAX_LOCAL_DIRS} local dirs per executor, got {len(local_dirs)}")
        for d in local_dirs:
            check_local_dir(d)
        locs = [self.roots.locate(d) for d in local_dirs]
        if not locs:
            raise PathRefused("the request names no executor local dirs")
        return locs

    @staticmethod
    async def _abort(context: grpc.aio.ServicerContext, code: grpc.StatusCode, message: str) -> None:
        message = shown(message, MAX_MESSAGE)
        log.warning("request refused: %s: %s", code.name, message)
        await context.abort(code, message)

    # -- RPCs ----------------------------------------------------------------------------------
    async def Merge(self, request: pb.MergeRequest, context: grpc.aio.ServicerContext) -> pb.MergeResponse:
        try:
            spec, locs = self._validate(request)
        except PathRefused as exc:
            await self._abort(context, grpc.StatusCode.PERMISSION_DENIED, str(exc))
        except ValueError as exc:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if self.shutting_down:
            await self._abort(context, grpc.StatusCode.UNAVAILABLE, "merger is shutting down")
        self._seen[spec.app_id] = time.monotonic()
        name = data_file_name(spec.shuffle_id, spec.merged_map_id)
        index, sub = block_location(len(locs), name, spec.sub_dirs)
        output = (locs[index], sub, name)
        if request.request_id in self._inflight:
            await self._abort(context, grpc.StatusCode.ALREADY_EXISTS, f"request {request.request_id} is already in flight")
        if output in self._outputs:
            await self._abort(context, grpc.StatusCode.ALREADY_EXISTS,
                              f"a merge into {self.roots.display(locs[index], sub, name)} is already in flight")
        c = self.config
        fan_in = len(spec.map_ids)
        try:
            read_buf, write_buf = plan_buffers(fan_in, c.read_buffer, c.write_buffer, c.memory,
                                               lambda r, w: memory_needed(fan_in, spec.num_partitions, r, w))
            ticket = self.admission.ticket(memory_needed(fan_in, spec.num_partitions, read_buf, write_buf), fds_needed(fan_in, len(locs)),
                                           queued_cost(request))
        except Overloaded as exc:
            self.metrics.merges.labels("rejected").inc()
            await self._abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except ValueError as exc:
            self.metrics.merges.labels("rejected").inc()
            await self._abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        entry = _InFlight(output, spec.app_id, spec.shuffle_id, ticket=ticket)
        self._inflight[request.request_id] = entry
        self._outputs.add(output)
        self.metrics.inputs.observe(fan_in)
        handed_off = False
        try:
            try:
                waited = await self.admission.wait(ticket)
            except Aborted as exc:
                self._count("cancelled")
                await self._abort(context, grpc.StatusCode.CANCELLED, str(exc))
            except asyncio.CancelledError:
                self._caller_gone(request.request_id, "queued")
                raise
            entry.running = True
            loop = asyncio.get_running_loop()
            started = time.monotonic()
            work = self.merge_pool.submit(self._merge_in_thread, spec, locs, read_buf, write_buf, entry)
            handed_off = True
            work.add_done_callback(lambda _: loop.call_soon_threadsafe(self._finish, request.request_id, entry))
            try:
                result = await asyncio.wrap_future(work)
            except asyncio.CancelledError:  # the caller went away or its deadline passed
                entry.cancel.cancel()
                self._caller_gone(request.request_id, "running")
                raise
            except BaseException as exc:
                code, message = _status_for(exc)
                self._count("cancelled" if code == grpc.StatusCode.CANCELLED else "failed")
                if code is None:
                    log.error("merge %s failed unexpectedly: %s: %s", request.request_id, type(exc).__name__, exc, exc_info=exc)
                    code, message = grpc.StatusCode.INTERNAL, f"merge failed: {type(exc).__name__}: {exc}"
                await self._abort(context, code, message)
        finally:
            if not handed_off:
                self._finish(request.request_id, entry)
        elapsed = time.monotonic() - started
        self.counters.completed += 1
        self.counters.bytes_merged += result.bytes_written
        self.counters.merge_seconds += elapsed
        self.metrics.merges.labels("completed").inc()
        self.metrics.bytes_in.inc(result.bytes_written)
        self.metrics.bytes_out.inc(result.bytes_written)
        self.metrics.duration.observe(elapsed)
        log.info("merged %d outputs of app %s executor %s shuffle %d into %s: %d bytes in %.3fs (queued %.3fs)",
                 fan_in, spec.app_id, request.executor_id, spec.shuffle_id, result.data_path, result.bytes_written, elapsed, waited)
        return pb.MergeResponse(merged_map_id=spec.merged_map_id, data_path=result.data_path, index_path=result.index_path,
                                partition_lengths=result.partition_lengths, bytes_written=result.bytes_written,
                                queue_seconds=waited, merge_seconds=elapsed)

    def _merge_in_thread(self, spec: MergeSpec, locs: list[Location], read_buf: int, write_buf: int, entry: _InFlight) -> MergeResult:
        def progress(n: int) -> None:
            entry.remaining_bytes -= n

        return merge_map_outputs(self.roots, self.journal, locs, spec, read_buf, write_buf, entry.cancel, progress,
                                 durable=self.config.fsync, faults=self.config.faults)

    def _finish(self, request_id: str, entry: _InFlight) -> None:
        """Called once the merge thread (or the wait) is over: its resources and its output name are free again."""
        if entry.ticket is not None:
            self.admission.release(entry.ticket)
        entry.running = False
        if self._inflight.get(request_id) is entry:
            del self._inflight[request_id]
        self._outputs.discard(entry.output)
        entry.done.set()
        if entry.orphaned:  # published after its application's Cleanup gave up waiting: delete it now
            loc, sub, name = entry.output
            where = (self.roots.paths[loc.root], *loc.parts, sub)
            self.io_pool.submit(self.journal.delete, entry.app_id, lambda rec: rec.data_dir != where or rec.data != name)

    def _caller_gone(self, request_id: str, stage: str) -> None:
        """A call gRPC cancelled (the client went away, or its deadline passed): counted and logged, since its
        client sees CANCELLED and nothing else would show it."""
        self._count("cancelled")
        self.metrics.rpc_cancelled.labels(stage).inc()
        log.warning("merge %s ended while %s: the caller cancelled it or its deadline passed", request_id, stage)

    def _count(self, outcome: str) -> None:
        if outcome == "cancelled":
            self.counters.cancelled += 1
        else:
            self.counters.failed += 1
        self.metrics.merges.labels(outcome).inc()

    def _cancel(self, request_id: str, entry: _InFlight, reason: str) -> bool:
        """Cancel one merge; False when it is too late (it committed to publishing and will)."""
        if not entry.cancel.cancel():
            return False
        if entry.ticket is not None:
            self.admission.abort(entry.ticket, reason)
        return True

    async def Cancel(self, request: pb.CancelRequest, context: grpc.aio.ServicerContext) -> pb.CancelResponse:
        entry = self._inflight.get(request.request_id)
        found = entry is not None and self._cancel(request.request_id, entry, f"merge {request.request_id} cancelled while waiting for admission")
        if entry is not None:
            log.info("cancel requested for merge %s%s", request.request_id, "" if found else ": too late, it is publishing")
        return pb.CancelResponse(found=found)

    def cancel_all(self, reason: str) -> None:
        for rid, entry in list(self._inflight.items()):
            self._cancel(rid, entry, reason)

    def abort_queued(self, reason: str) -> None:
        for rid, entry in list(self._inflight.items()):
            if not entry.running:
                self._cancel(rid, entry, reason)

    def in_flight(self) -> int:
        return len(self._inflight)

    async def Status(self, request: pb.StatusRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        entries = list(self._inflight.values())
        running = sum(1 for e in entries if e.running)
        pending = sum(max(e.remaining_bytes, 0) for e in entries)
        c, a = self.counters, self.admission
        return pb.StatusResponse(
            queued=len(entries) - running, running=running, bytes_in_flight=pending,
            memory_in_use=a.in_use, memory_budget=a.budget,
            merges_completed=c.completed, merges_failed=c.failed, merges_cancelled=c.cancelled,
            merges_rejected=a.stats.rejected, requests_queued_total=a.stats.queued_total, bytes_merged=c.bytes_merged,
            queue_seconds_total=a.stats.queue_seconds_total, merge_seconds_total=c.merge_seconds,
            peak_memory_in_use=a.stats.peak_in_use, load=float(len(entries)) + pending / float(1 << 30),
            version=self.version, max_queue=a.max_queue, max_fan_in=self.config.max_fan_in)

    async def Cleanup(self, request: pb.CleanupRequest, context: grpc.aio.ServicerContext) -> pb.CleanupResponse:
        try:
            check_id("app_id", request.app_id)
        except ValueError as exc:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"cleanup needs the app_id whose merged files are deleted: {exc}")
        has_shuffle = request.HasField("shuffle_id")
        if not has_shuffle and not request.all_shuffles:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, "cleanup needs a shuffle_id, or all_shuffles set explicitly")
        if has_shuffle and request.all_shuffles:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, "cleanup takes a shuffle_id or all_shuffles, not both")
        if has_shuffle and request.shuffle_id < 0:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"shuffle_id must be >= 0, got {request.shuffle_id}")
        try:
            locs = self._locate(request.local_dirs)
        except PathRefused as exc:
            await self._abort(context, grpc.StatusCode.PERMISSION_DENIED, str(exc))
        except ValueError as exc:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if self.cleanups_pending >= MAX_PENDING_CLEANUPS:
            await self._abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"{self.cleanups_pending} cleanups already pending (at most {MAX_PENDING_CLEANUPS}); retry later")
        sid = request.shuffle_id if has_shuffle else None
        self.cleanups_pending += 1
        try:
            await self._end_merges_of(request.app_id, sid, locs)
            files, freed = await asyncio.get_running_loop().run_in_executor(
                self.io_pool, self.journal.delete, request.app_id,
                lambda rec: not under_any(rec, self.roots, locs) or (sid is not None and rec.shuffle_id != sid))
        finally:
            self.cleanups_pending -= 1
        log.info("cleanup of app %s %s: %d merged files, %d bytes", request.app_id,
                 "all shuffles" if sid is None else f"shuffle {sid}", files, freed)
        return pb.CleanupResponse(files_deleted=files, bytes_freed=freed)


    async def KeepAlive(self, request: pb.KeepAliveRequest, context: grpc.aio.ServicerContext) -> pb.KeepAliveResponse:
        try:
            check_id("app_id", request.app_id)
        except ValueError as exc:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if request.app_id not in self._seen and len(self._seen) >= MAX_LEASES:
            await self._abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"{len(self._seen)} application leases already held (at most {MAX_LEASES}); retry later")
        self._seen[request.app_id] = time.monotonic()
        return pb.KeepAliveResponse(lease_seconds=self.config.app_lease)

    def paused(self, seconds: float) -> None:
        """The daemon did not run for ``seconds`` (SIGSTOP, a frozen VM): nobody could reach it, so no lease
        runs down for that time."""
        self._seen = {app: t + seconds for app, t in self._seen.items()}
        self._since += seconds

    async def expire_leases(self) -> list[str]:
        """Delete the merged files (and cancel the merges) of every application silent for longer than its lease:
        its driver died without Cleanup. Returns the applications expired."""
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        recorded = await loop.run_in_executor(self.io_pool, self.journal.apps)
        running = {e.app_id for e in self._inflight.values()}
        expired = [app for app in recorded | running | set(self._seen)
                   if now - self._seen.get(app, self._since) > self.config.app_lease]
        for app in expired:
            self._seen.pop(app, None)
            if app not in recorded and app not in running:
                continue  # it cleaned up after itself
            await self._end_merges_of(app, None, None)
            files, freed = await loop.run_in_executor(self.io_pool, self.journal.delete, app, lambda rec: False)
            log.warning("application %s sent nothing for %.0fs (its lease): its merges cancelled, its %d merged files "
                        "deleted (%d bytes)", app, self.config.app_lease, files, freed)
        return expired

    async def _end_merges_of(self, app_id: str, shuffle_id: int | None, locs: list[Location] | None) -> None:
        """Cancel the app's merges into ``locs`` and wait them out, so none publishes after its Cleanup; one that is
        past cancelling publishes first (and Cleanup then deletes it), one that outlasts the wait is deleted when it ends."""
        ending = [(rid, e) for rid, e in self._inflight.items()
                  if e.app_id == app_id and (shuffle_id is None or e.shuffle_id == shuffle_id) and (locs is None or e.output[0] in locs)]
        if not ending:
            return
        for rid, entry in ending:
            self._cancel(rid, entry, f"application {app_id} cleaned up")
        log.info("cleanup of app %s waits for %d of its merges to end", app_id, len(ending))
        try:
            await asyncio.wait_for(asyncio.gather(*(e.done.wait() for _, e in ending)), CLEANUP_WAIT_SECONDS)
        except TimeoutError:
            stuck = [e for _, e in ending if not e.done.is_set()]
            log.warning("cleanup of app %s: %d merges did not end within %.0fs; their output is deleted when they do",
                        app_id, len(stuck), CLEANUP_WAIT_SECONDS)
            for e in stuck:
                e.orphaned = True


def _status_for(exc: BaseException) -> tuple[grpc.StatusCode | None, str]:
    if isinstance(exc, MergeCancelled):
        return grpc.StatusCode.CANCELLED, str(exc)
    if isinstance(exc, PathRefused):
        return grpc.StatusCode.PERMISSION_DENIED, str(exc)
    if isinstance(exc, FileNotFoundError):  # a missing input, or a directory removed while the merge ran
        return grpc.StatusCode.NOT_FOUND, str(exc)
    if isinstance(exc, CorruptShuffleFile):
        return grpc.StatusCode.DATA_LOSS, f"corrupt map output: {exc}"
    if isinstance(exc, DiskFull):
        return grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc.strerror or exc)
    if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:  # any other step the disk filled at
        return grpc.StatusCode.RESOURCE_EXHAUSTED, f"disk full: {exc}"
    if isinstance(exc, FileExistsError):
        return grpc.StatusCode.ALREADY_EXISTS, str(exc)
    if isinstance(exc, OSError):
        return grpc.StatusCode.INTERNAL, f"I/O error: {exc}"
    return None, ""
