"""The scheduler configurations the live benchmarks compare, defined once.

* ``slaq``: SLAQ on, policy ``slaq``.
* ``fair``: SLAQ's machinery (pools, epoch loop, token buckets) with the ``fair`` policy.
* ``stock``: SLAQ off; Spark's own FAIR scheduler with one pool per job (what a user runs without
  SLAQ). Spark creates a pool the first time a job names it, with weight 1 and minShare 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CONFIGS = ("slaq", "fair", "stock")
STOCK = "stock"
POOL_PROPERTY = "spark.scheduler.pool"


def check_configs(names: list[str]) -> list[str]:
    """The configurations named, in order; a clear error for an unknown or repeated one."""
    unknown = [n for n in names if n not in CONFIGS]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"configurations must be distinct names from {', '.join(CONFIGS)}; got {','.join(names) or 'none'}")
    return names


def session_conf(config: str, epoch: float) -> dict[str, str]:
    """Spark confs of one configuration (all three run Spark in FAIR mode)."""
    check_configs([config])
    if config == STOCK:
        return {"spark.scheduler.mode": "FAIR", "spark.slaq.enabled": "false"}
    return {"spark.scheduler.mode": "FAIR", "spark.slaq.enabled": "true", "spark.slaq.policy": config, "spark.slaq.epoch": f"{epoch}s"}


@contextmanager
def stock_pool(sc: Any, name: str) -> Iterator[None]:
    """Run the calling thread's Spark jobs in a FAIR pool of their own (stock Spark, no SLAQ)."""
    previous = sc.getLocalProperty(POOL_PROPERTY)
    sc.setLocalProperty(POOL_PROPERTY, name)
    try:
        yield
    finally:
        sc.setLocalProperty(POOL_PROPERTY, previous)
