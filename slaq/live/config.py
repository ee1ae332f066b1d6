"""``spark.slaq.*`` configuration, parsed and validated with errors that name the bad key; each number's
accepted range is stated where :meth:`SlaqConfig.from_conf` reads it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from slaq.policy import POLICIES
from sparkshim.conf import ConfigError, ConfReader

PREFIX = "spark.slaq."
__all__ = ["PREFIX", "ConfigError", "SlaqConfig"]


@dataclass(frozen=True)
class SlaqConfig:
    enabled: bool = False
    policy: str = "slaq"
    epoch: float = 2.0
    work_conserving: bool = True
    fail_open_epochs: float = 3.0  # pools open when no allocation arrived for this many epochs
    reserve_cores: float = 0.0  # cores kept out of SLAQ's hands for non-ML work
    storage_admission: bool = False  # start caching spark.ml fits only while storage memory holds their copies (slaq.live.admission)
    # forecast a spark.ml fit from its estimator's other fits before its own losses carry a curve (slaq.predict.prior);
    # off by default: on real fits it delayed first losses (docs/mllib.md, "The prior before a fit's first losses")
    prior: bool = False
    # serve spark.ml fits' set-up (the work before their first loss) in turn, shortest first (slaq.predict.setup);
    # off by default: on the mllib sweep's fits, whose set-up is bound by the driver, it gained nothing measurable (docs/mllib.md)
    setup_order: bool = False
    prune: bool = False  # skip a CrossValidator candidate's remaining folds once it cannot beat the best (slaq.prune)

    @classmethod
    def from_conf(cls, get: Callable[[str], str | None]) -> SlaqConfig:
        """Read every ``spark.slaq.*`` key through ``get`` (e.g. ``SparkConf.get``); missing keys take defaults."""
        d = cls()
        conf = ConfReader(get, PREFIX)
        return cls(
            enabled=conf.boolean("enabled", d.enabled),
            policy=conf.choice("policy", d.policy, POLICIES),
            epoch=conf.seconds("epoch", d.epoch, 0.05, 3600.0),  # shorter is a busy loop
            work_conserving=conf.boolean("workConserving", d.work_conserving),
            fail_open_epochs=conf.number("failOpenEpochs", d.fail_open_epochs, 1, 1000),
            reserve_cores=conf.number("reserveCores", d.reserve_cores, 0, 1_000_000),
            prior=conf.boolean("prior", d.prior),
            prune=conf.boolean("prune", d.prune),
            setup_order=conf.boolean("setupOrder", d.setup_order),
            storage_admission=conf.boolean("storageAdmission", d.storage_admission),
        )
