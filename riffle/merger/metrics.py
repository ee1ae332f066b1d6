"""Prometheus metrics of the merger (served by ``--metrics-listen HOST:PORT``)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

OUTCOMES = ("completed", "failed", "cancelled", "rejected")


class Metrics:
    """One registry per daemon; the service records into it whether or not it is served."""

    def __init__(self, queue_depth: Callable[[], float], memory_reserved: Callable[[], float], running: Callable[[], float]):
        self.registry = CollectorRegistry()
        r = self.registry
        self.merges = Counter("riffle_merges", "Merge requests by outcome", ["outcome"], registry=r)
        for outcome in OUTCOMES:
            self.merges.labels(outcome)
        self.bytes_in = Counter("riffle_merge_input_bytes", "Bytes read from map outputs by completed merges", registry=r)
        self.bytes_out = Counter("riffle_merge_output_bytes", "Bytes written to merged files by completed merges", registry=r)
        self.duration = Histogram("riffle_merge_duration_seconds", "Time a merge ran (after admission)", registry=r,
                                  buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
        self.inputs = Histogram("riffle_merge_inputs", "Map outputs per merge request", registry=r,
                                buckets=(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096))
        Gauge("riffle_queue_depth", "Merges waiting for admission", registry=r).set_function(queue_depth)
        Gauge("riffle_merges_running", "Merges running", registry=r).set_function(running)
        Gauge("riffle_memory_reserved_bytes", "Buffer memory reserved by running merges", registry=r).set_function(memory_reserved)

    def serve(self, listen: str) -> int:
        """Start the HTTP endpoint on ``HOST:PORT``; returns the port."""
        host, _, port = listen.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"--metrics-listen wants HOST:PORT, got {listen!r}")
        try:
            server, _thread = start_http_server(int(port), addr=host.strip("[]"), registry=self.registry)
        except OSError as exc:
            raise ValueError(f"--metrics-listen {listen}: cannot listen: {exc.strerror or exc}") from None
        return server.server_address[1]
