"""``spark.slaq.*`` configuration, parsed and validated with errors that name the bad key; each number's
accepted range is stated where :meth:`SlaqConfig.from_conf` reads it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sparkshim.conf import ConfigError, ConfReader

PREFIX = "spark.slaq."
# the policies spark.slaq.policy accepts: the ones the lab measures live (srlab.slaq_bench.configs); every
# policy of slaq.policy runs in ``slaq simulate``, where its model of the cluster holds
ORDER = "order"  # the policy that ranks the pools while a job is short of its 90% point (slaq.live.setup_order)
LIVE_POLICIES = ("slaq", "fair", ORDER)
# acts before a fit's first loss, then shares as slaq does: the measured best on spark.ml work and the demo (docs/benchmarks.md)
DEFAULT_POLICY = ORDER
EPOCH_RANGE = (0.05, 3600.0)  # seconds: shorter is a busy loop (a recorded trace's epoch too, slaq.sim.trace)
MAX_PATH = 4096  # characters of spark.slaq.recordTrace (Linux's PATH_MAX)
__all__ = ["DEFAULT_POLICY", "EPOCH_RANGE", "LIVE_POLICIES", "ORDER", "PREFIX", "ConfigError", "SlaqConfig"]


@dataclass(frozen=True)
class SlaqConfig:
    enabled: bool = False
    policy: str = DEFAULT_POLICY
    epoch: float = 2.0
    work_conserving: bool = True
    fail_open_epochs: float = 3.0  # pools open when no allocation arrived for this many epochs
    reserve_cores: float = 0.0  # cores kept out of SLAQ's hands for non-ML work
    prune: bool = False  # skip a CrossValidator candidate's remaining folds once it cannot beat the best (slaq.integrations.pruning)
    record_trace: str | None = None  # a file or directory: the run's workload as a slaq-trace/1 at stop (slaq.live.trace_out)

    @classmethod
    def from_conf(cls, get: Callable[[str], str | None]) -> SlaqConfig:
        """Read every ``spark.slaq.*`` key through ``get`` (e.g. ``SparkConf.get``); missing keys take defaults."""
        d = cls()
        conf = ConfReader(get, PREFIX)
        return cls(
            enabled=conf.boolean("enabled", d.enabled),
            policy=conf.choice("policy", d.policy, LIVE_POLICIES),
            epoch=conf.seconds("epoch", d.epoch, *EPOCH_RANGE),
            work_conserving=conf.boolean("workConserving", d.work_conserving),
            fail_open_epochs=conf.number("failOpenEpochs", d.fail_open_epochs, 1, 1000),
            reserve_cores=conf.number("reserveCores", d.reserve_cores, 0, 1_000_000),
            prune=conf.boolean("prune", d.prune),
            record_trace=conf.parsed("recordTrace", d.record_trace, trace_path, f"a file or directory path of 1 to {MAX_PATH} characters"),
        )


def trace_path(text: str) -> str:
    """``spark.slaq.recordTrace``'s path: 1 to :data:`MAX_PATH` characters, no NUL or line break (ValueError otherwise)."""
    path = text.strip()
    if not 1 <= len(path) <= MAX_PATH or set(path) & {"\0", "\n", "\r"}:
        raise ValueError(path)
    return path
