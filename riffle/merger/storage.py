"""The node's storage as this merger reports it in Status, for the driver's merge cost model: time per read request
and bandwidth, from ``--storage-request-time`` and ``--storage-bandwidth`` or measured once at start-up in the
local dirs (in :data:`PROBE_SECONDS` at most, all dirs together). A measurement that fails leaves its figures
unknown, and the driver prices merges on this node with ``spark.riffle.cost.*``; it never stops the daemon."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from riffle.protocol import pb
from riffle.storage_cost import UNKNOWN, NodeStorage, probe

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
    """The node storage a merger's Status reply reports (a daemon from before it did: unknown)."""
    return NodeStorage(status.storage_request_seconds if status.HasField("storage_request_seconds") else None,
                       status.storage_bytes_per_second if status.HasField("storage_bytes_per_second") else None,
                       status.storage_source or UNKNOWN)
