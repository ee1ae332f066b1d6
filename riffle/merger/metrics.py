"""Prometheus metrics of the merger (served by ``--metrics-listen HOST:PORT``), on a bounded HTTP endpoint.

The endpoint is a side door any process that reaches it can knock on, so it is bounded like the gRPC side:
a fixed pool of threads serves at most :data:`MAX_CONNECTIONS` connections at once (more are closed at
once, and counted), and a connection idle for :data:`IDLE_TIMEOUT` seconds is dropped.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily

from riffle.merger.counters import Counters

log = logging.getLogger("riffle.merger")
MAX_CONNECTIONS = 16   # open metrics connections at once (served or waiting for a thread)
METRICS_THREADS = 2
IDLE_TIMEOUT = 5.0     # seconds a metrics connection may stay silent


class Metrics:
    """One registry per daemon; its counters are read from the service's :class:`Counters` at each scrape."""

    def __init__(self, counters: Counters, queue_depth: Callable[[], float], memory_reserved: Callable[[], float],
                 running: Callable[[], float]):
        self.registry = CollectorRegistry()
        r = self.registry
        c = counters
        _Collected(r, lambda: [
            _counter("riffle_merges", "Merge requests by outcome", c, "outcome", c.outcomes),
            _counter("riffle_merge_input_bytes", "Bytes read from map outputs by completed merges", c, None, {"": c.bytes_in}),
            _counter("riffle_merge_output_bytes", "Bytes written to merged files by completed merges", c, None, {"": c.bytes_out})])
        self.duration = Histogram("riffle_merge_duration_seconds", "Time a merge ran (after admission)", registry=r,
                                  buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
        self.inputs = Histogram("riffle_merge_inputs", "Map outputs per merge request", registry=r,
                                buckets=(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096))
        _Collected(r, lambda: [_counter("riffle_rpc_cancelled", "Merge calls the caller cancelled or whose deadline passed, "
                                        "by where the merge was", c, "stage", c.callers_gone)])
        self.metrics_refused = Counter("riffle_metrics_connections_refused", "Metrics connections closed at once: "
                                       f"{MAX_CONNECTIONS} were open already", registry=r)
        Gauge("riffle_queue_depth", "Merges waiting for admission", registry=r).set_function(queue_depth)
        Gauge("riffle_merges_running", "Merges running", registry=r).set_function(running)
        Gauge("riffle_memory_reserved_bytes", "Buffer memory reserved by running merges", registry=r).set_function(memory_reserved)
        self._server: _BoundedHTTPServer | None = None

    def serve(self, listen: str) -> int:
        """Start the HTTP endpoint on ``HOST:PORT``; returns the port."""
        host, _, port = listen.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"--metrics-listen wants HOST:PORT, got {listen!r}")
        try:
            self._server = _BoundedHTTPServer((host.strip("[]"), int(port)), self)
        except OSError as exc:
            raise ValueError(f"--metrics-listen {listen}: cannot listen: {exc.strerror or exc}") from None
        threading.Thread(target=self._server.serve_forever, name="metrics-accept", daemon=True).start()
        return self._server.server_address[1]

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server.pool.shutdown(wait=False, cancel_futures=True)


def _counter(name: str, doc: str, counters: Counters, label: str | None, values: dict[str, int]) -> CounterMetricFamily:
    """One counter family, as ``prometheus_client.Counter`` would expose it (``_total`` and ``_created`` samples)."""
    family = CounterMetricFamily(name, doc, labels=[label] if label else None)
    for key, value in values.items():
        family.add_metric([key] if label else [], float(value), created=counters.created)
    return family


class _Collected:
    """A collector of counter families computed at each scrape, registered where it is created (keeps the exposition order)."""

    def __init__(self, registry: CollectorRegistry, families: Callable[[], list[CounterMetricFamily]]):
        self.collect = families
        registry.register(self)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    timeout = IDLE_TIMEOUT  # applied to the socket: a silent client is dropped
    server: _BoundedHTTPServer

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path.split("?", 1)[0] not in ("/", "/metrics"):
            self.send_error(404)
            return
        body = generate_latest(self.server.metrics.registry)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's signature)
        pass


class _BoundedHTTPServer(HTTPServer):
    """Accepts on one thread, serves on a fixed pool; past MAX_CONNECTIONS open connections new ones are closed at once."""

    def __init__(self, address: tuple[str, int], metrics: Metrics):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.metrics = metrics
        self.pool = ThreadPoolExecutor(METRICS_THREADS, thread_name_prefix="metrics")
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, _Handler)

    def process_request(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        if not self.slots.acquire(blocking=False):
            self.metrics.metrics_refused.inc()
            self.shutdown_request(request)
            return
        try:
            self.pool.submit(self._serve_one, request, client_address)
        except RuntimeError:  # the pool is shut down
            self.slots.release()
            self.shutdown_request(request)

    def _serve_one(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        try:
            self.finish_request(request, client_address)
        except (OSError, ValueError) as exc:  # a client that went away or timed out
            log.debug("metrics connection from %s ended: %s", client_address, exc)
        finally:
            self.shutdown_request(request)
            self.slots.release()
