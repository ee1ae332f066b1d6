"""The Merger gRPC service: validates requests, admits them under the memory budget, runs merges."""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from riffle.api import pb, pb_grpc
from riffle.merger.engine import DiskFull, MergeCancelled, MissingInput, merge_map_outputs
from riffle.merger.memory import Aborted, MemoryBudget, Overloaded, plan_buffers
from riffle.merger.paths import PathGuard, PathRefused
from riffle.shuffle.layout import (
    DEFAULT_SUB_DIRS,
    INT64_MAX,
    SYNTHETIC_MAP_ID_BASE,
    CorruptShuffleFile,
    block_file_path,
    data_file_name,
    index_file_name,
)

log = logging.getLogger("riffle.merger")
MAX_PARTITIONS = 1 << 24
MAX_FAN_IN = 4096
MERGED_FILE = re.compile(r"^shuffle_(\d+)_(\d+)_0\.(data|index)$")


@dataclass
class Config:
    read_buffer: int = 4 << 20
    write_buffer: int = 16 << 20
    memory: int = 2 << 30
    max_queue: int = 1024
    fsync: bool = True  # False matches Spark, which never fsyncs its own shuffle files


@dataclass
class _Counters:
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    bytes_merged: int = 0
    merge_seconds: float = 0.0


@dataclass
class _InFlight:
    cancel: threading.Event = field(default_factory=threading.Event)
    remaining_bytes: int = 0
    running: bool = False


class MergerService(pb_grpc.MergerServicer):
    def __init__(self, guard: PathGuard, config: Config):
        self.guard = guard
        self.config = config
        self.memory = MemoryBudget(config.memory, config.max_queue)
        self.counters = _Counters()
        self._lock = threading.Lock()
        self._inflight: dict[str, _InFlight] = {}
        self.shutting_down = threading.Event()

    # -- helpers -------------------------------------------------------------------------------
    def _validate(self, req: pb.MergeRequest) -> tuple[list[Path], int]:
        if not req.request_id or len(req.request_id) > 256:
            raise ValueError("request_id must be 1 to 256 characters")
        if req.shuffle_id < 0:
            raise ValueError(f"shuffle_id must be >= 0, got {req.shuffle_id}")
        if not 0 < req.num_partitions <= MAX_PARTITIONS:
            raise ValueError(f"num_partitions must be in 1..{MAX_PARTITIONS}, got {req.num_partitions}")
        if not 0 < len(req.map_ids) <= MAX_FAN_IN:
            raise ValueError(f"between 1 and {MAX_FAN_IN} map_ids are merged at once, got {len(req.map_ids)}")
        if any(m < 0 or m >= SYNTHETIC_MAP_ID_BASE for m in req.map_ids):
            raise ValueError("map_ids must be task attempt ids in [0, 2^62)")
        if len(set(req.map_ids)) != len(req.map_ids):
            raise ValueError("map_ids contains duplicates")
        if not SYNTHETIC_MAP_ID_BASE <= req.merged_map_id <= INT64_MAX:
            raise ValueError(f"merged_map_id must be in [2^62, 2^63), got {req.merged_map_id}")
        sub_dirs = req.sub_dirs_per_local_dir or DEFAULT_SUB_DIRS
        if not 0 < sub_dirs <= 1 << 16:
            raise ValueError(f"sub_dirs_per_local_dir out of range: {sub_dirs}")
        return self.guard.executor_dirs(req.local_dirs), sub_dirs

    @staticmethod
    def _abort(context: grpc.ServicerContext, code: grpc.StatusCode, message: str) -> None:
        log.warning("merge refused: %s: %s", code.name, message)
        context.abort(code, message)

    # -- RPCs ----------------------------------------------------------------------------------
    def Merge(self, request: pb.MergeRequest, context: grpc.ServicerContext) -> pb.MergeResponse:
        try:
            dirs, sub_dirs = self._validate(request)
        except PathRefused as exc:
            self._abort(context, grpc.StatusCode.PERMISSION_DENIED, str(exc))
        except ValueError as exc:
            self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if self.shutting_down.is_set():
            self._abort(context, grpc.StatusCode.UNAVAILABLE, "merger is shutting down")
        sid = request.shuffle_id
        inputs = [(block_file_path(dirs, data_file_name(sid, m), sub_dirs), block_file_path(dirs, index_file_name(sid, m), sub_dirs))
                  for m in request.map_ids]
        out_data = block_file_path(dirs, data_file_name(sid, request.merged_map_id), sub_dirs)
        out_index = block_file_path(dirs, index_file_name(sid, request.merged_map_id), sub_dirs)
        entry = _InFlight()
        with self._lock:
            if request.request_id in self._inflight:
                self._abort(context, grpc.StatusCode.ALREADY_EXISTS, f"request {request.request_id} is already in flight")
            self._inflight[request.request_id] = entry
        context.add_callback(entry.cancel.set)  # the caller went away or its deadline passed
        try:
            return self._run(request, context, entry, inputs, out_data, out_index)
        finally:
            with self._lock:
                self._inflight.pop(request.request_id, None)

    def _run(self, request, context, entry: _InFlight, inputs, out_data: Path, out_index: Path) -> pb.MergeResponse:
        c = self.config
        try:
            read_buf, write_buf = plan_buffers(len(inputs), c.read_buffer, c.write_buffer, c.memory)
        except ValueError as exc:
            self._abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        need = len(inputs) * read_buf + write_buf
        entry.remaining_bytes = sum(os.path.getsize(d) for d, _ in inputs if os.path.isfile(d))
        try:
            waited = self.memory.acquire(need, lambda: entry.cancel.is_set() or self.shutting_down.is_set())
        except Overloaded as exc:
            self._abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except Aborted as exc:
            with self._lock:
                self.counters.cancelled += 1
            self._abort(context, grpc.StatusCode.CANCELLED, str(exc))
        entry.running = True
        started = time.monotonic()

        def progress(n: int) -> None:
            entry.remaining_bytes -= n

        try:
            result = merge_map_outputs(self.guard, inputs, request.num_partitions, out_data, out_index,
                                       read_buf, write_buf, entry.cancel, progress, durable=c.fsync)
        except BaseException as exc:
            code, message = _status_for(exc)
            with self._lock:
                if code == grpc.StatusCode.CANCELLED:
                    self.counters.cancelled += 1
                else:
                    self.counters.failed += 1
            if code is None:
                log.exception("merge %s failed unexpectedly", request.request_id)
                code, message = grpc.StatusCode.INTERNAL, f"merge failed: {type(exc).__name__}: {exc}"
            self._abort(context, code, message)
        finally:
            self.memory.release(need)
            entry.running = False
        elapsed = time.monotonic() - started
        with self._lock:
            self.counters.completed += 1
            self.counters.bytes_merged += result.bytes_written
            self.counters.merge_seconds += elapsed
        log.info("merged %d outputs of app %s executor %s shuffle %d into %s: %d bytes in %.3fs (queued %.3fs)",
                 len(inputs), request.app_id, request.executor_id, request.shuffle_id, result.data_path.name,
                 result.bytes_written, elapsed, waited)
        return pb.MergeResponse(merged_map_id=request.merged_map_id, data_path=str(result.data_path),
                                index_path=str(result.index_path), partition_lengths=result.partition_lengths,
                                bytes_written=result.bytes_written, queue_seconds=waited, merge_seconds=elapsed)

    def Cancel(self, request: pb.CancelRequest, context: grpc.ServicerContext) -> pb.CancelResponse:
        with self._lock:
            entry = self._inflight.get(request.request_id)
        if entry is not None:
            entry.cancel.set()
            log.info("cancel requested for merge %s", request.request_id)
        return pb.CancelResponse(found=entry is not None)

    def cancel_all(self) -> None:
        with self._lock:
            for entry in self._inflight.values():
                entry.cancel.set()

    def in_flight(self) -> int:
        with self._lock:
            return len(self._inflight)

    def Status(self, request: pb.StatusRequest, context: grpc.ServicerContext) -> pb.StatusResponse:
        with self._lock:
            running = sum(1 for e in self._inflight.values() if e.running)
            pending = sum(e.remaining_bytes for e in self._inflight.values())
            total = len(self._inflight)
            c = self.counters
            m = self.memory.stats
            return pb.StatusResponse(
                queued=total - running, running=running, bytes_in_flight=max(pending, 0),
                memory_in_use=self.memory.in_use, memory_budget=self.memory.budget,
                merges_completed=c.completed, merges_failed=c.failed, merges_cancelled=c.cancelled,
                merges_rejected=m.rejected, requests_queued_total=m.queued_total, bytes_merged=c.bytes_merged,
                queue_seconds_total=m.queue_seconds_total, merge_seconds_total=c.merge_seconds,
                peak_memory_in_use=m.peak_in_use, load=float(total) + pending / float(1 << 30))

    def Cleanup(self, request: pb.CleanupRequest, context: grpc.ServicerContext) -> pb.CleanupResponse:
        if not request.all_shuffles and request.shuffle_id < 0:
            self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, "shuffle_id must be >= 0 unless all_shuffles is set")
        try:
            dirs = self.guard.executor_dirs(request.local_dirs)
        except PathRefused as exc:
            self._abort(context, grpc.StatusCode.PERMISSION_DENIED, str(exc))
        files, freed = delete_merged_files(dirs, None if request.all_shuffles else request.shuffle_id)
        log.info("cleanup of %s: %d merged files, %d bytes", "all shuffles" if request.all_shuffles else f"shuffle {request.shuffle_id}", files, freed)
        return pb.CleanupResponse(files_deleted=files, bytes_freed=freed)


def delete_merged_files(dirs: list[Path], shuffle_id: int | None) -> tuple[int, int]:
    """Delete merged outputs (synthetic map ids) under an executor's dirs; original map outputs stay."""
    files = freed = 0
    for d in dirs:
        for sub in d.iterdir():
            if not sub.is_dir() or sub.is_symlink():
                continue
            for f in sub.iterdir():
                m = MERGED_FILE.match(f.name)
                if not m or int(m.group(2)) < SYNTHETIC_MAP_ID_BASE:
                    continue
                if shuffle_id is not None and int(m.group(1)) != shuffle_id:
                    continue
                try:
                    size = f.lstat().st_size
                    f.unlink()
                except FileNotFoundError:
                    continue
                files += 1
                freed += size
    return files, freed


def _status_for(exc: BaseException) -> tuple[grpc.StatusCode | None, str]:
    if isinstance(exc, MergeCancelled):
        return grpc.StatusCode.CANCELLED, str(exc)
    if isinstance(exc, PathRefused):
        return grpc.StatusCode.PERMISSION_DENIED, str(exc)
    if isinstance(exc, MissingInput):
        return grpc.StatusCode.NOT_FOUND, str(exc)
    if isinstance(exc, CorruptShuffleFile):
        return grpc.StatusCode.DATA_LOSS, f"corrupt map output: {exc}"
    if isinstance(exc, DiskFull):
        return grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc.strerror or exc)
    if isinstance(exc, FileExistsError):
        return grpc.StatusCode.ALREADY_EXISTS, str(exc)
    if isinstance(exc, OSError):
        return grpc.StatusCode.INTERNAL, f"I/O error: {exc}"
    return None, ""
