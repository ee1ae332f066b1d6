"""Runs the merger daemon: asyncio gRPC server with health service, token auth, TLS, metrics and a bounded shutdown."""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import resource
import signal
import threading
import time
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from riffle.merger.config import MAX_FAN_IN, Config
from riffle.merger.engine import fds_needed
from riffle.merger.journal import Journal
from riffle.merger.paths import Roots
from riffle.merger.publish import remove_stale_temps
from riffle.merger.requests import MAX_LOCAL_DIRS
from riffle.merger.service import MergerService
from riffle.merger.storage import node_storage
from riffle.protocol import SERVER_MESSAGE_LIMITS, pb_grpc
from sparkshim.safe_read import read_config_file

log = logging.getLogger("riffle.merger")
SERVICE_NAME = "riffle.v1.Merger"
FD_RESERVE = 256      # descriptors kept for sockets, logs, the journal and Python itself
# gRPC reads a request before the daemon sees it; with its receive windows kept at their 64 KiB start (no bandwidth
# probing, which grows them to megabytes) a request over the size cap is refused after at most a window of it is read.
# Requests are a few KiB, so nothing real waits on the window
RECEIVE_WINDOW = [("grpc.http2.bdp_probe", 0)]
HARD_EXIT_SLACK = 4.5  # seconds after the grace period before the process exits whatever its threads do


class ListenError(OSError):
    """The gRPC port could not be bound: a start-up error, reported in one line."""


class TokenAuth(grpc.aio.ServerInterceptor):
    """Rejects calls without ``authorization: Bearer <token>``; the health service stays open for probes."""

    def __init__(self, token: str):
        self._expected = f"Bearer {token}".encode()

        async def deny(request, context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    async def intercept_service(self, continuation, handler_call_details):
        if handler_call_details.method.startswith("/grpc.health.v1.Health/"):
            return await continuation(handler_call_details)
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization" and isinstance(value, str) and hmac.compare_digest(value.encode(), self._expected):
                return await continuation(handler_call_details)
        return self._deny


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one; returns the limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, target, exc)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def fan_in_limit(fd_budget: int) -> int:
    """The largest fan-in (a power of two) whose descriptors, with the most local dirs a request may name, fit the budget."""
    fan_in = MAX_FAN_IN
    while fan_in > 1 and fds_needed(fan_in, MAX_LOCAL_DIRS) > fd_budget:
        fan_in //= 2
    return fan_in


@dataclass
class ServerOptions:
    listen: str = "127.0.0.1:7338"
    local_dirs: tuple[str, ...] = ()
    config: Config = field(default_factory=Config)
    token: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    grace_seconds: float = 10.0
    state_dir: str | None = None
    metrics_listen: str | None = None
    prune_interval: float = 3600.0  # seconds between sweeps that forget merged pairs whose files are gone
    # the daemon owns its process (riffle-merger serve): SIGTERM/SIGINT stop it, and a shutdown that overruns the grace
    # period ends the process. Off for a daemon embedded in another process (tests), which stops it with stop()
    owns_process: bool = True


class MergerDaemon:
    """Everything that can fail at start-up happens in ``__init__`` (a clear error), serving in :meth:`serve_forever`."""

    def __init__(self, options: ServerOptions):
        self.options = options
        if options.tls_cert and not options.tls_key or options.tls_key and not options.tls_cert:
            raise ValueError("--tls-cert and --tls-key go together")
        self.tls_pair = None
        if options.tls_cert:
            assert options.tls_key is not None
            self.tls_pair = (read_config_file(options.tls_key, "--tls-key", private=True), read_config_file(options.tls_cert, "--tls-cert"))
        nofile = raise_open_file_limit()
        config = options.config
        config.fd_budget = max(nofile - FD_RESERVE, 64)
        config.max_fan_in = min(config.max_fan_in, fan_in_limit(config.fd_budget))
        self.roots = Roots(options.local_dirs)
        self.journal = Journal(self.roots, options.state_dir, durable=config.fsync, faults=config.faults)
        kept, undone = self.journal.recover()
        if kept or undone:
            log.warning("recovered interrupted publishes of an earlier run: %d completed, %d undone", kept, undone)
        pruned = self.journal.prune()
        if pruned:
            log.info("forgot %d merged pairs whose files are gone", pruned)
        removed = remove_stale_temps(self.roots)
        if removed:
            log.warning("removed %d temp files left by an earlier run: %s", len(removed), ", ".join(removed[:5]))
        self.service = MergerService(self.roots, self.journal, config)
        self.metrics_port = self.service.metrics.serve(options.metrics_listen) if options.metrics_listen else None
        self.port = 0
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _serve(self) -> None:
        o = self.options
        interceptors = [TokenAuth(o.token)] if o.token else []
        server = grpc.aio.server(interceptors=interceptors, options=[("grpc.so_reuseport", 0), *SERVER_MESSAGE_LIMITS, *RECEIVE_WINDOW])
        pb_grpc.add_MergerServicer_to_server(self.service, server)
        health_service = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_service, server)
        why = "the address is in use or not on this host" + (", or --tls-cert/--tls-key are not a valid PEM pair" if self.tls_pair else "")
        try:
            if self.tls_pair:
                self.port = server.add_secure_port(o.listen, grpc.ssl_server_credentials([self.tls_pair]))
            else:
                self.port = server.add_insecure_port(o.listen)
        except RuntimeError as exc:  # grpc's "Failed to bind" (port in use, address not on this host)
            raise ListenError(f"cannot listen on {o.listen}: {why}") from exc
        if self.port == 0:
            raise ListenError(f"cannot listen on {o.listen}: {why}")
        c = o.config  # the node's storage, once every start-up refusal is past and before any call is answered
        self.service.storage = node_storage(self.roots.paths, c.storage_request_seconds, c.storage_bytes_per_second, c.storage_probe)
        await server.start()
        for name in ("", SERVICE_NAME):
            await health_service.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info("riffle merger %s listening on %s (port %d), local dirs %s, state %s, memory %d MiB, read buffer %d KiB, "
                 "write buffer %d KiB, %d merge threads, max queue %d (%d MiB), max fan-in %d, app lease %.0fs (at most %d held without "
                 "merged files), auth %s, tls %s, metrics %s",
                 self.service.version, o.listen, self.port, self.roots.paths, self.journal.path, c.memory >> 20,
                 c.read_buffer >> 10, c.write_buffer >> 10, c.merge_threads, c.max_queue, c.max_queue_memory >> 20, c.max_fan_in,
                 c.app_lease, c.max_apps,
                 "token" if o.token else "none", "on" if self.tls_pair else "off",
                 f"port {self.metrics_port}" if self.metrics_port else "off")
        stop = self._stop = asyncio.Event()
        loop = self._loop = asyncio.get_running_loop()
        if o.owns_process:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
        self._started.set()
        pruner = asyncio.create_task(self._prune_periodically())
        expirer = asyncio.create_task(self._expire_periodically())
        await stop.wait()
        pruner.cancel()
        expirer.cancel()
        if o.owns_process:  # whatever the merges do, the process ends within the grace period plus a few seconds
            watchdog = threading.Timer(o.grace_seconds + HARD_EXIT_SLACK, _hard_exit)
            watchdog.daemon = True
            watchdog.start()
        await self._shutdown(server, health_service)

    async def _prune_periodically(self) -> None:
        """Forget, while running, the records of merged pairs that are gone (an application that ended without
        Cleanup: Spark removed its dirs), so the state dir does not grow with every application the node ran."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.options.prune_interval)
            try:
                dropped = await loop.run_in_executor(self.service.io_pool, self.journal.prune)
            except OSError as exc:
                log.warning("pruning the merge records failed: %s", exc)
                continue
            if dropped:
                log.info("forgot %d merged pairs whose files are gone", dropped)

    async def _expire_periodically(self) -> None:
        """Every lease check interval, end the applications whose lease ran out (see ``Cleaner.expire_leases``).
        A tick much later than planned means the process was stopped: that time does not count against any lease."""
        interval = self.options.config.lease_check_seconds
        last = time.monotonic()
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            if now - last > 2 * interval:
                self.service.leases.paused(now - last - interval)
            last = now
            try:
                await self.service.cleaner.expire_leases()
            except OSError as exc:
                log.warning("expiring application leases failed: %s", exc)

    async def _shutdown(self, server: grpc.aio.Server, health_service: health.aio.HealthServicer) -> None:
        """Stop taking merges, let running ones finish for the grace period, then cancel the rest."""
        o, s = self.options, self.service
        log.info("shutting down: %d merges in flight, %.1fs grace", len(s.inflight), o.grace_seconds)
        s.merges.shutting_down = True
        s.inflight.abort_queued("merger is shutting down")
        await health_service.enter_graceful_shutdown()
        deadline = time.monotonic() + o.grace_seconds
        while s.admission.running and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        s.inflight.cancel_all("merger is shutting down")
        while s.inflight and time.monotonic() < deadline + 3:
            await asyncio.sleep(0.05)
        await server.stop(0.5)

    def wait_started(self, timeout: float) -> bool:
        """True once the daemon serves (its port bound, health SERVING), False if ``timeout`` seconds pass first."""
        return self._started.wait(timeout)

    def stop(self) -> None:
        """Begin the shutdown SIGTERM begins, from any thread (for a daemon embedded in another process)."""
        if self._loop is None or self._stop is None:
            raise RuntimeError("the daemon is not serving")
        self._loop.call_soon_threadsafe(self._stop.set)

    def serve_forever(self) -> None:
        try:
            asyncio.run(self._serve())
            stuck = self.service.admission.running
            if stuck and self.options.owns_process:
                log.error("%d merges did not stop after cancellation (blocked in I/O); exiting anyway", stuck)
                _hard_exit()
            elif stuck:
                log.error("%d merges did not stop after cancellation (blocked in I/O)", stuck)
        finally:  # also when serving failed to start (a port taken): the state dir's lock and the pools are released
            self.service.merge_pool.shutdown(wait=False)
            self.service.io_pool.shutdown(wait=False)
            self.service.metrics.close()
            self.journal.close()
            self.roots.close()
        log.info("merger stopped")


def _hard_exit() -> None:
    log.error("merger did not stop in time; exiting")
    logging.shutdown()
    os._exit(0 if threading.current_thread() is threading.main_thread() else 1)
