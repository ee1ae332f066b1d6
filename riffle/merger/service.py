"""The Merger gRPC service (asyncio): each RPC handler parses its request, makes one domain call and builds the reply.

RPC handlers never block: a merge waits for admission as an ``asyncio`` future and runs in the
daemon's own merge threads (:mod:`riffle.merger.merges`), and file-system work of Cleanup runs in a
separate small pool (:mod:`riffle.merger.cleanup`), so Status, Cancel and the health check are
answered at once whatever the merge load. A refused request is aborted in one place
(:func:`riffle.merger.refusals.answers_refusals`).
"""

from __future__ import annotations

import functools
import logging
from concurrent.futures import ThreadPoolExecutor

import grpc

from riffle.merger import requests
from riffle.merger.cleanup import Cleaner, delete_orphan_output
from riffle.merger.config import Config
from riffle.merger.counters import Counters
from riffle.merger.inflight import InFlightMerges
from riffle.merger.journal import Journal
from riffle.merger.leases import Leases
from riffle.merger.memory import Admission
from riffle.merger.merges import Merges
from riffle.merger.metrics import Metrics
from riffle.merger.paths import Roots
from riffle.merger.refusals import answers_refusals
from riffle.protocol import pb, pb_grpc
from riffle.storage_cost import NodeStorage
from riffle.version import package_version

log = logging.getLogger("riffle.merger")
CLEANUP_THREADS = 2


class MergerService(pb_grpc.MergerServicer):
    def __init__(self, roots: Roots, journal: Journal, config: Config):
        self.roots, self.config = roots, config
        self.storage = NodeStorage()  # the node's storage, as the daemon found it at start (riffle.merger.storage)
        self.counters = Counters()
        self.admission = a = Admission(self.counters, config.memory, config.fd_budget, config.merge_threads, config.max_queue,
                                       config.max_queue_memory)
        self.metrics = Metrics(self.counters, lambda: a.queued, lambda: a.in_use, lambda: a.running)
        self.merge_pool = ThreadPoolExecutor(config.merge_threads, thread_name_prefix="merge")
        self.io_pool = ThreadPoolExecutor(CLEANUP_THREADS, thread_name_prefix="cleanup")
        self.inflight = InFlightMerges(self.admission, functools.partial(delete_orphan_output, roots, journal, self.io_pool))
        self.leases = Leases(config.app_lease, config.max_apps, journal.apps())
        self.merges = Merges(roots, journal, config, self.admission, self.inflight, self.leases, self.counters, self.metrics,
                             self.merge_pool)
        self.cleaner = Cleaner(roots, journal, self.inflight, self.leases, self.io_pool)
        self.version = package_version()

    @answers_refusals
    async def Merge(self, request: pb.MergeRequest, context: grpc.aio.ServicerContext) -> pb.MergeResponse:
        spec, locs = requests.merge_request(request, self.roots, self.config.max_fan_in)
        done = await self.merges.run(request.request_id, request.executor_id, spec, locs, requests.queued_cost(request))
        r = done.result
        return pb.MergeResponse(merged_map_id=spec.merged_map_id, data_path=r.data_path, index_path=r.index_path,
                                partition_lengths=r.partition_lengths, bytes_written=r.bytes_written,
                                queue_seconds=done.queue_seconds, merge_seconds=done.merge_seconds)

    async def Cancel(self, request: pb.CancelRequest, context: grpc.aio.ServicerContext) -> pb.CancelResponse:
        entry = self.inflight.get(request.request_id)
        found = entry is not None and self.inflight.cancel(entry, f"merge {request.request_id} cancelled while waiting for admission")
        if entry is not None:
            log.info("cancel requested for merge %s%s", request.request_id, "" if found else ": too late, it is publishing")
        return pb.CancelResponse(found=found)

    async def Status(self, request: pb.StatusRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        queued, running, pending = self.inflight.load()
        c, a = self.counters, self.admission
        return pb.StatusResponse(
            queued=queued, running=running, bytes_in_flight=pending,
            memory_in_use=a.in_use, memory_budget=a.budget,
            merges_completed=c.outcomes["completed"], merges_failed=c.outcomes["failed"], merges_cancelled=c.outcomes["cancelled"],
            merges_rejected=c.overloaded, requests_queued_total=c.queued_total, bytes_merged=c.bytes_out,
            queue_seconds_total=c.queue_seconds, merge_seconds_total=c.merge_seconds,
            peak_memory_in_use=c.peak_memory, load=float(queued + running) + pending / float(1 << 30),
            version=self.version, max_queue=a.max_queue, max_fan_in=self.config.max_fan_in,
            # a figure unknown (None) is left unset
            storage_request_seconds=self.storage.request_seconds, storage_bytes_per_second=self.storage.bytes_per_second,
            storage_source=self.storage.source, local_dirs=list(self.roots.paths))

    @answers_refusals
    async def Cleanup(self, request: pb.CleanupRequest, context: grpc.aio.ServicerContext) -> pb.CleanupResponse:
        files, freed = await self.cleaner.cleanup(requests.cleanup_request(request, self.roots))
        return pb.CleanupResponse(files_deleted=files, bytes_freed=freed)

    @answers_refusals
    async def KeepAlive(self, request: pb.KeepAliveRequest, context: grpc.aio.ServicerContext) -> pb.KeepAliveResponse:
        return pb.KeepAliveResponse(lease_seconds=self.leases.renew(requests.keep_alive_request(request)))
