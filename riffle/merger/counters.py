"""The merger's one store of counts: what the Status RPC reports and the Prometheus endpoint exposes.

Everything is counted on the event loop; the metrics thread only reads the numbers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

OUTCOMES = ("completed", "failed", "cancelled", "rejected")  # a Merge call's end, as Prometheus labels it
STAGES = ("queued", "running")  # where a merge was when its caller went away


@dataclass
class Counters:
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    callers_gone: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STAGES, 0))  # by stage
    overloaded: int = 0  # refused because the wait queue was full ("rejected" also counts merges too big to admit)
    queued_total: int = 0  # merges that waited for admission
    queue_seconds: float = 0.0
    peak_memory: int = 0  # the most buffer memory reserved at once
    bytes_in: int = 0  # read from the inputs of completed merges
    bytes_out: int = 0  # written to their merged files
    merge_seconds: float = 0.0
    created: float = field(default_factory=time.time)  # Prometheus' ``_created`` of every counter

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] += 1

    def caller_gone(self, stage: str) -> None:
        self.callers_gone[stage] += 1
        self.count("cancelled")

    def merged(self, bytes_in: int, bytes_out: int, seconds: float) -> None:
        self.count("completed")
        self.bytes_in += bytes_in
        self.bytes_out += bytes_out
        self.merge_seconds += seconds
