"""The node's storage as this merger reports it in Status, for the driver's merge cost model: time per read request
and bandwidth, from ``--storage-request-time`` and ``--storage-bandwidth`` or measured once at start-up in the
local dirs (in :data:`PROBE_SECONDS` at most, all dirs together). A measurement that fails leaves its figures
unknown, and the driver prices merges on this node with ``spark.riffle.cost.*``; it never stops the daemon."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from riffle.protocol import pb
from riffle.storage_cost import BANDWIDTH_RANGE, SECONDS_RANGE, UNKNOWN, NodeStorage, probe
from sparkshim.wording import number_text

log = logging.getLogger("riffle.merger")
PROBE_SECONDS = 0.5  # the whole measurement's budget: it delays the daemon's start by no more
FLAGS, MEASURED = "flags", "measured"


def node_storage(roots: Sequence[str], request_seconds: float | None, bytes_per_second: float | None,
                 measure: bool = True) -> NodeStorage:
    """The figures given (flags), the others measured in ``roots`` (their mean: Spark spreads its files over its
    local dirs) unless ``measure`` is off; logged in one line."""
    given = [f for f in (request_seconds, bytes_per_second) if f is not None]
    failure = ""
    if measure and len(given) < 2:
        try:
            probes = [probe(root, seconds=PROBE_SECONDS / len(roots)) for root in roots]
            request = sum(p.request_seconds for p in probes) / len(probes)
            per_byte = sum(p.byte_seconds for p in probes) / len(probes)
            if not (request > 0 and per_byte > 0):
                raise ValueError("the clock did not advance")
            request_seconds = request_seconds if request_seconds is not None else request
            bytes_per_second = bytes_per_second if bytes_per_second is not None else 1 / per_byte
        except (OSError, ValueError) as exc:
            failure = f"measuring {', '.join(roots)} failed: {exc}"
    measured = sum(f is not None for f in (request_seconds, bytes_per_second)) - len(given)
    source = " and ".join([FLAGS] * bool(given) + [MEASURED] * bool(measured)) or UNKNOWN
    storage = NodeStorage(request_seconds, bytes_per_second, source)
    if failure:
        log.warning("node storage: %s (%s); the driver prices merges here with spark.riffle.cost.* where a figure is unknown",
                    storage, failure)
    else:
        log.info("node storage: %s", storage)
    return storage


def reported(status: pb.StatusResponse) -> NodeStorage:
    """The node storage a merger's Status reply reports (a daemon from before it did: unknown); a figure outside the range a
    storage's may have (:data:`SECONDS_RANGE`, :data:`BANDWIDTH_RANGE`: a 0 bandwidth, NaN) is unknown too, so the driver
    prices that node with its ``spark.riffle.cost.*`` (:func:`out_of_range` says which)."""
    request, bandwidth = _figures(status)
    return NodeStorage(_within(request, SECONDS_RANGE), _within(bandwidth, BANDWIDTH_RANGE), status.storage_source[:64] or UNKNOWN)


def out_of_range(status: pb.StatusResponse) -> list[str]:
    """The storage figures of a Status reply that :func:`reported` takes for unknown, as ``name value (range)``."""
    request, bandwidth = _figures(status)
    return [f"{name} {value!r} (expected {number_text(low)}..{number_text(high)})"
            for name, value, (low, high) in (("time per request", request, SECONDS_RANGE), ("bytes per second", bandwidth, BANDWIDTH_RANGE))
            if value is not None and _within(value, (low, high)) is None]


def _figures(status: pb.StatusResponse) -> tuple[float | None, float | None]:
    return (status.storage_request_seconds if status.HasField("storage_request_seconds") else None,
            status.storage_bytes_per_second if status.HasField("storage_bytes_per_second") else None)


def _within(value: float | None, bounds: tuple[float, float]) -> float | None:
    return value if value is not None and bounds[0] <= value <= bounds[1] else None  # NaN is in no range
