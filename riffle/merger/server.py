"""Runs the merger daemon: gRPC server with health service, optional token auth and TLS, clean shutdown."""

from __future__ import annotations

import hmac
import logging
import signal
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from riffle.api import pb_grpc
from riffle.merger.engine import remove_stale_temps
from riffle.merger.paths import PathGuard
from riffle.merger.service import Config, MergerService

log = logging.getLogger("riffle.merger")
SERVICE_NAME = "riffle.v1.Merger"


class TokenAuth(grpc.ServerInterceptor):
    """Rejects calls without ``authorization: Bearer <token>``; the health service stays open for probes."""

    def __init__(self, token: str):
        self._expected = f"Bearer {token}".encode()

        def deny(request, context):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    def intercept_service(self, continuation, handler_call_details):
        if handler_call_details.method.startswith("/grpc.health.v1.Health/"):
            return continuation(handler_call_details)
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization" and hmac.compare_digest(value.encode(), self._expected):
                return continuation(handler_call_details)
        return self._deny


@dataclass
class ServerOptions:
    listen: str = "127.0.0.1:7338"
    local_dirs: tuple[str, ...] = ()
    config: Config = field(default_factory=Config)
    token: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    workers: int = 32
    grace_seconds: float = 10.0


class MergerDaemon:
    def __init__(self, options: ServerOptions):
        self.options = options
        self.guard = PathGuard(options.local_dirs)
        removed = remove_stale_temps(self.guard)
        if removed:
            log.warning("removed %d temp files left by an earlier run: %s", len(removed), ", ".join(map(str, removed[:5])))
        self.service = MergerService(self.guard, options.config)
        interceptors = [TokenAuth(options.token)] if options.token else []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=options.workers, thread_name_prefix="merge"),
                                  interceptors=interceptors, options=[("grpc.so_reuseport", 0)])
        pb_grpc.add_MergerServicer_to_server(self.service, self.server)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        if options.tls_cert:
            if not options.tls_key:
                raise ValueError("--tls-cert needs --tls-key")
            creds = grpc.ssl_server_credentials([(Path(options.tls_key).read_bytes(), Path(options.tls_cert).read_bytes())])
            self.port = self.server.add_secure_port(options.listen, creds)
        else:
            self.port = self.server.add_insecure_port(options.listen)
        if self.port == 0:
            raise OSError(f"cannot listen on {options.listen}")
        self._stopped = threading.Event()

    def start(self) -> None:
        self.server.start()
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        c = self.options.config
        log.info("riffle merger listening on %s (port %d), local dirs %s, memory %d MiB, read buffer %d KiB, "
                 "write buffer %d KiB, auth %s, tls %s", self.options.listen, self.port, [str(r) for r in self.guard.roots],
                 c.memory >> 20, c.read_buffer >> 10, c.write_buffer >> 10, "token" if self.options.token else "none",
                 "on" if self.options.tls_cert else "off")

    def stop(self) -> None:
        """Stop taking merges, let running ones finish for the grace period, then cancel the rest."""
        if self._stopped.is_set():
            return
        log.info("shutting down: %d merges in flight, %.0fs grace", self.service.in_flight(), self.options.grace_seconds)
        self.health.enter_graceful_shutdown()
        self.service.shutting_down.set()
        deadline = time.monotonic() + self.options.grace_seconds
        while self.service.in_flight() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.service.cancel_all()
        while self.service.in_flight() and time.monotonic() < deadline + 30:
            time.sleep(0.05)
        self.server.stop(grace=1.0).wait()
        self._stopped.set()
        log.info("merger stopped")

    def serve_forever(self) -> None:
        self.start()
        stop_requested = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop_requested.set())
        stop_requested.wait()
        self.stop()
