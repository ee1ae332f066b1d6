"""Each executor's local dirs (where its map outputs are, and where a merge of them is written), as the
driver JVM's block manager master recorded them: the shim sends them once per executor with its first map
output (``executor_dirs``; again after each ``configure``, so a scheduler attached afresh learns them too);
kept until the executor is removed (a new executor under that id has new dirs). Only an executor whose dirs
did not arrive (the shim could not read them, or its event was dropped) costs a py4j call."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

log = logging.getLogger("riffle.driver")


class LocalDirs:
    def __init__(self, tracker: Any):
        self.tracker = tracker
        self.known: dict[str, list[str]] = {}  # executor -> its blockmgr dirs

    def learn(self, executor: str, dirs: Sequence[str]) -> None:
        if dirs:
            self.known[executor] = [str(d) for d in dirs]

    def of(self, executor: str) -> list[str]:
        """``executor``'s dirs; empty when the driver cannot tell (its outputs stay unmerged)."""
        dirs = self.known.get(executor)
        if not dirs:
            try:
                dirs = [str(d) for d in self.tracker.localDirs(executor) if d]
            except Exception as exc:  # reflection into Spark internals failed: merge nothing for it
                log.warning("Riffle: cannot read the local dirs of executor %s: %s", executor, exc)
                dirs = []
            if dirs:
                self.known[executor] = dirs
        return dirs or []

    def forget(self, executor: str) -> None:
        self.known.pop(executor, None)


def outside_roots(dirs: Sequence[str], roots: Sequence[str]) -> list[str]:
    """The dirs of ``dirs`` that lie under none of ``roots`` (paths compared as written, normalized): where a merger
    serving ``roots`` refuses to read or write."""
    served = [PurePosixPath(os.path.normpath(r)) for r in roots]
    return [d for d in dirs if not any(PurePosixPath(os.path.normpath(d)).is_relative_to(r) for r in served)]


__all__ = ["LocalDirs", "outside_roots"]
