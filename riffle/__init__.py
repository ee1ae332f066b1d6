"""Riffle: merge many small Spark shuffle map outputs into few large files.

``riffle.attach(spark)`` (or ``--conf spark.riffle.enabled=true`` with the start-up hook installed)
starts the driver-side merge scheduler; ``riffle-merger serve`` runs the daemon on every node.
Imports are lazy so ``python -m riffle.proto_build`` and the daemon never load the driver side.
"""

from __future__ import annotations

from typing import Any


def attach(spark: Any = None, config: Any = None) -> Any:
    """See :func:`riffle.activate.attach`."""
    from riffle.activate import attach as _attach

    return _attach(spark, config)


def detach(spark: Any = None, cleanup: bool = True) -> None:
    """See :func:`riffle.activate.detach`."""
    from riffle.activate import detach as _detach

    _detach(spark, cleanup)


__all__ = ["attach", "detach"]
