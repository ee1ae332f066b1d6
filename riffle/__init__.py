"""Riffle: merge many small Spark shuffle map outputs into few large files.

``riffle.attach(spark)`` (or ``--conf spark.riffle.enabled=true`` with the start-up hook installed)
starts the driver-side merge scheduler; ``riffle-merger serve`` runs the daemon on every node.
"""

from riffle.activate import attach, detach

__all__ = ["attach", "detach"]
