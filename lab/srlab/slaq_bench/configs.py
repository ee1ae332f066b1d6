"""The scheduler configurations the live benchmarks compare, defined once.

* ``order``: SLAQ on, its default policy ``order`` (slaq.live.setup_order).
* ``fair``: SLAQ's machinery (pools, epoch loop, token buckets) with the ``fair`` policy.
* ``slaq`` (opt-in): SLAQ's machinery with the ``slaq`` policy (the paper's allocation alone).
* ``slaq-prune`` (opt-in, not run by default): ``slaq`` with ``spark.slaq.prune=true``: a
  CrossValidator skips the remaining folds of candidates that cannot beat the best (slaq.integrations.pruning).
* ``stock``: SLAQ off; Spark's own FAIR scheduler with one pool per job (what a user runs without
  SLAQ). Spark creates a pool the first time a job names it, with weight 1 and minShare 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from slaq.enforce.pools import own_properties, restore_thread

CONFIGS = ("order", "fair", "stock")  # what the benchmarks run by default
PRUNE = "slaq-prune"
KNOWN = CONFIGS + (PRUNE, "slaq")
# the opt-in configurations: SLAQ with one more spark.slaq key switched on
OPT_IN = {PRUNE: "prune"}
STOCK = "stock"
POOL_PROPERTY = "spark.scheduler.pool"


def check_configs(names: list[str]) -> list[str]:
    """The configurations named, in order; a clear error for an unknown or repeated one."""
    unknown = [n for n in names if n not in KNOWN]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"configurations must be distinct names from {', '.join(KNOWN)}; got {','.join(names) or 'none'}")
    return names


def session_conf(config: str, epoch: float) -> dict[str, str]:
    """Spark confs of one configuration (all three run Spark in FAIR mode)."""
    check_configs([config])
    if config == STOCK:
        return {"spark.scheduler.mode": "FAIR", "spark.slaq.enabled": "false"}
    if config in OPT_IN:
        return {"spark.scheduler.mode": "FAIR", "spark.slaq.enabled": "true", "spark.slaq.policy": "slaq", "spark.slaq.epoch": f"{epoch}s",
                f"spark.slaq.{OPT_IN[config]}": "true"}
    return {"spark.scheduler.mode": "FAIR", "spark.slaq.enabled": "true", "spark.slaq.policy": config, "spark.slaq.epoch": f"{epoch}s"}


def stock_pool_name(arrival: int) -> str:
    """The FAIR pool of the ``arrival``-th job (0-based), named by arrival order and never after the job.

    Spark's FairSchedulingAlgorithm breaks ties between pools with equal running tasks (on two cores,
    most pools most of the time) by pool name. Pools named after the fits ("linreg-02", ..., "svc-08")
    handed stock Spark an oracle: the shortest family sorted first and the longest last, i.e.
    shortest-job-first by accident. By arrival, a tie goes to the earlier job, as FIFO would.
    """
    return f"arrival-{arrival:04d}"


@contextmanager
def stock_pool(sc: Any, arrival: int) -> Iterator[None]:
    """Run the calling thread's Spark jobs in a FAIR pool of their own (stock Spark, no SLAQ), set on the
    thread's own copy of its local properties (a CrossValidator's threads share one object)."""
    previous = own_properties(sc)
    sc.setLocalProperty(POOL_PROPERTY, stock_pool_name(arrival))
    try:
        yield
    finally:
        restore_thread(sc, previous)
