"""Riffle: merge many small Spark shuffle map outputs into few large files.

``riffle.attach(spark)`` (or ``--conf spark.riffle.enabled=true`` with the start-up hook installed)
starts the driver-side merge scheduler; ``riffle-merger serve`` runs the daemon on every node.
Imports are lazy so ``python -m riffle.proto_build`` and the daemon never load the driver side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from riffle.runtime import RiffleRuntime


def attach(spark: Any = None, config: Any = None, explicit: bool = True) -> RiffleRuntime:
    """See :func:`riffle.runtime.attach`."""
    from riffle.runtime import attach as _attach

    return _attach(spark, config, explicit)


def detach(spark: Any = None) -> None:
    """See :func:`riffle.runtime.detach`."""
    from riffle.runtime import detach as _detach

    _detach(spark)


__all__ = ["attach", "detach"]
