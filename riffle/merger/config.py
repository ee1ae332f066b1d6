"""The daemon's settings (``riffle-merger serve`` flags) and the defaults of its limits."""

from __future__ import annotations

from dataclasses import dataclass

from riffle.merger.faults import NO_FAULTS, Faults

MAX_FAN_IN = 4096
DEFAULT_APP_LEASE = 600.0  # seconds an application may send nothing (no Merge, no KeepAlive) before its merged files go
DEFAULT_MAX_APPS = 1 << 16  # leases of applications without merged files here (see riffle.merger.leases)
MAX_LEASE_CHECK_SECONDS = 30.0  # expired leases are looked for every min(lease / 4, this)


@dataclass
class Config:
    read_buffer: int = 4 << 20
    write_buffer: int = 16 << 20
    memory: int = 2 << 30
    max_queue: int = 1024
    max_queue_memory: int = 32 << 20  # what waiting requests may hold (see requests.queued_cost); inside the 64 MB over --memory
    fsync: bool = True  # False matches Spark, which never fsyncs its own shuffle files
    merge_threads: int = 8
    fd_budget: int = 1024
    max_fan_in: int = MAX_FAN_IN
    faults: Faults = NO_FAULTS  # crash injection for the crash tests; riffle-merger serve reads it from the environment
    app_lease: float = DEFAULT_APP_LEASE
    max_apps: int = DEFAULT_MAX_APPS
    storage_request_seconds: float | None = None  # the node's storage as declared; None: measured at start (riffle.merger.storage)
    storage_bytes_per_second: float | None = None
    storage_probe: bool = True  # measure the figures not declared

    @property
    def lease_check_seconds(self) -> float:
        return min(self.app_lease / 4, MAX_LEASE_CHECK_SECONDS)
