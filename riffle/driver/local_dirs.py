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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from riffle.driver.fleet import MergerFleet
    from riffle.driver.warn_once import WarnOnce

log = logging.getLogger("riffle.driver")


class LocalDirs:
    def __init__(self, tracker: Any):
        self.tracker = tracker
        self.known: dict[str, list[str]] = {}  # executor -> its blockmgr dirs
        self._checked: set[tuple[str, str]] = set()  # (executor, merger) whose dirs were checked against the merger's

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

    def check(self, executor: str, host: str, fleet: MergerFleet) -> None:
        """Whatever the cost model decides, the dirs of an executor with map outputs are checked against each merger on its
        host, once that merger said which it serves: outside them every merge would be refused (one WARN naming both)."""
        dirs = self.known.get(executor)
        for address in fleet.reachable(host) if dirs else []:
            if (executor, address) in self._checked:
                continue
            served = fleet.served_dirs(address)
            if served is None:  # not answered yet (asked now), or a daemon that does not say: the refusal of a merge says it
                fleet.reported_storage(address)
                continue
            self._checked.add((executor, address))
            if outside := outside_roots(dirs or [], served):
                warn_outside_roots(fleet.warn_once, address, outside, str(list(served)))

    def forget(self, executor: str) -> None:
        self.known.pop(executor, None)
        self._checked = {pair for pair in self._checked if pair[0] != executor}


def outside_roots(dirs: Sequence[str], roots: Sequence[str]) -> list[str]:
    """The dirs of ``dirs`` that lie under none of ``roots`` (paths compared as written, normalized): where a merger
    serving ``roots`` refuses to read or write."""
    served = [PurePosixPath(os.path.normpath(r)) for r in roots]
    return [d for d in dirs if not any(PurePosixPath(os.path.normpath(d)).is_relative_to(r) for r in served)]



def warn_outside_roots(warn_once: WarnOnce, address: str, executor_dirs: Sequence[str], roots: str) -> None:
    """One WARN (whichever finds it first: a merge the merger refused, or :meth:`LocalDirs.check`): the executors' dirs lie
    outside merger ``address``'s ``roots``, and the confs that fix it."""
    warn_once("refused-outside-roots", "Riffle: merger %s cannot merge this application's shuffle files: the "
              "executors write them under %s, outside the merger's local dirs %s. Set spark.local.dir "
              "(SPARK_LOCAL_DIRS on a standalone worker) to a directory under one of the merger's --local-dir, "
              "or start the merger with a --local-dir that holds the executors' dirs; until then their "
              "outputs stay unmerged", address, ", ".join(executor_dirs), roots)


__all__ = ["LocalDirs", "outside_roots", "warn_outside_roots"]
