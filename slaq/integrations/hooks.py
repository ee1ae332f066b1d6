"""Every Python hook of the integrations, switched on and off together for the runtime that installs them.

``SlaqRuntime.start`` installs them (while SLAQ is enabled) and ``stop`` removes them: spark.ml leaf fits, and a
tuned Pipeline's fits, become jobs (:mod:`~slaq.integrations.sparkml`), tuners' fits find their candidate and, with
``spark.slaq.prune``, prune (:mod:`~slaq.integrations.tuners`). Spark Connect fits are the shim's, in the JVM (:mod:`~slaq.integrations.connect`).
"""

from __future__ import annotations

from typing import Protocol

from slaq.integrations import sparkml, tuners
from slaq.integrations.pruning import Pruned
from slaq.live.config import SlaqConfig


class HookedRuntime(sparkml.FitRuntime, Protocol):
    """What the hooks use of the runtime that installs them (:class:`slaq.runtime.SlaqRuntime`)."""

    config: SlaqConfig

    def mark_pruned(self, tuner: str, stopped: list[Pruned]) -> None: ...


def install(runtime: HookedRuntime) -> None:
    """Switch every hook on for ``runtime`` (replacing another runtime's spark.ml hook)."""
    sparkml.install(runtime)
    tuners.install(runtime.mark_pruned if runtime.config.prune else None)


def uninstall(runtime: HookedRuntime) -> None:
    """Switch every hook off (the spark.ml hook only if it is ``runtime``'s); pyspark's own methods are back."""
    sparkml.uninstall(runtime)
    tuners.uninstall()
