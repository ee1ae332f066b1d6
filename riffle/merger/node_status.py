"""``riffle status``: ask each merger for its health and load, and print them as a table (or JSON)."""

from __future__ import annotations

import grpc

from riffle.merger.client import MergerClient
from riffle.merger.storage import reported
from riffle.storage_cost import NodeStorage

COLUMNS = ("address", "health", "version", "load", "queued", "running", "max_queue", "memory_mb", "budget_mb", "completed",
           "failed", "rejected", "storage")


def probe(address: str, token: str | None, tls_ca: str | bytes | None, timeout: float) -> dict:
    """One merger's row; an unreachable or refusing merger is a row too, with the reason."""
    row: dict = {"address": address}
    try:
        client = MergerClient(address, token=token, tls_ca=tls_ca, timeout=timeout)
    except ValueError as exc:
        return {**row, "health": "REFUSED", "error": str(exc)}
    with client:
        row["health"] = "SERVING" if client.healthy() else "DOWN"
        try:
            s = client.status(timeout)
        except grpc.RpcError as exc:
            return {**row, "error": f"{exc.code().name}: {exc.details()}"}
    storage = reported(s)
    return {**row, "version": s.version, "load": round(s.load, 3), "queued": s.queued, "running": s.running,
            "max_queue": s.max_queue, "memory_mb": round(s.memory_in_use / (1 << 20), 1),
            "budget_mb": round(s.memory_budget / (1 << 20), 1), "completed": s.merges_completed, "failed": s.merges_failed,
            "rejected": s.merges_rejected, "storage_request_seconds": storage.request_seconds,
            "storage_bytes_per_second": storage.bytes_per_second, "storage_source": storage.source}


def _cell(row: dict, column: str) -> str:
    if column == "storage":  # the node's storage figures in one cell
        known = "storage_source" in row
        return str(NodeStorage(row["storage_request_seconds"], row["storage_bytes_per_second"], row["storage_source"])) if known else "-"
    return str(row.get(column, "-"))


def table(rows: list[dict]) -> str:
    """Fixed-width text table; a row's error, if any, follows it."""
    cells = [[_cell(r, c) for c in COLUMNS] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths)).rstrip()]
    for r, row in zip(rows, cells):
        lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
        if "error" in r:
            lines.append(f"  ! {r['error']}")
    return "\n".join(lines)
