"""Which tuner a spark.ml fit belongs to: its CrossValidator or TrainValidationSplit, the param map it fits, the
fold, and whether it is the tuner's refit on the best param map.

A tuner's roles come from the estimator it tunes: each fit of that estimator (a leaf such as LogisticRegression,
or a Pipeline, whose stages run inside its fit) is one fit of one candidate. A tuner's own ``_fit`` calls those
fits on pool threads that carry no Python context, so while one runs it is registered here with its estimator's
uid and param maps; a fit then finds its tuner by its estimator's uid (a param-map copy keeps it, as it keeps each
stage's) and its candidate by the param values of the estimator and of every stage in it: a param map may set
params of one stage only, and a stage no map sets matches every candidate. pyspark fits every candidate once per
fold, folds in order, then refits the best once: a candidate's ``folds + 1``-th fit is the refit. Installed on
attach like the fit hook (:mod:`slaq.integrations.sparkml`).
With ``spark.slaq.prune`` a CrossValidator runs :func:`slaq.integrations.pruning.cross_validate` instead of
pyspark's own ``_fit`` (unless :func:`slaq.integrations.pruning.not_prunable` says why not: the user's own folds); a pruned
candidate runs fewer folds, and every candidate that is not runs them all.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from slaq.integrations.pruning import OnPrune, cross_validate, not_prunable
from slaq.integrations.pyspark_private import tuning_helpers
from slaq.live.status import NOT_TUNING, Tuning

log = logging.getLogger("slaq.tuning")

_lock = threading.Lock()
_active: list[ActiveTuner] = []
_originals: dict[type, Any] = {}
_pruning: list[OnPrune] = []  # the one hook CrossValidator fits prune through, while spark.slaq.prune is on


@dataclass
class ActiveTuner:
    """One running tuner: its name (uid), the uid of the estimator it tunes, its param maps as
    ``{uid: {param name: value}}`` and its number of folds; ``fits`` counts fits per candidate."""

    name: str
    estimator: str
    param_maps: list[dict[str, dict[str, Any]]]
    folds: int
    fits: dict[int, int] = field(default_factory=dict)

    def place(self, uid: str, values: dict[str, dict[str, Any]]) -> Tuning | None:
        """The place of a fit of estimator ``uid`` whose own and stages' param ``values`` are ``{uid: {name: value}}``
        (:func:`param_values`), counting it; None when it is not a fit of the estimator this tuner tunes."""
        if uid != self.estimator:
            return None
        candidate = next((j for j, m in enumerate(self.param_maps)
                          if all(name in values[u] and values[u][name] == v for u, params in m.items() if u in values
                                 for name, v in params.items())), -1)
        n = self.fits.get(candidate, 0)
        self.fits[candidate] = n + 1
        if n >= self.folds:
            return Tuning(self.name, candidate, -1, True)
        return Tuning(self.name, candidate, n if self.folds > 1 else -1, False)


def param_values(estimator: Any) -> dict[str, dict[str, Any]]:
    """The explicitly set params of ``estimator`` and of every stage of a Pipeline in it, by uid."""
    values = {estimator.uid: {p.name: v for p, v in estimator._paramMap.items()}}
    stages = getattr(estimator, "getStages", None)
    if callable(stages):
        for stage in stages():
            values.update(param_values(stage))
    return values


def tuner_of(tuner: Any) -> ActiveTuner:
    """What a CrossValidator or TrainValidationSplit about to fit will fit."""
    maps = []
    for pm in tuner.getEstimatorParamMaps():
        by_uid: dict[str, dict[str, Any]] = {}
        for param, value in pm.items():
            by_uid.setdefault(param.parent, {})[param.name] = value
        maps.append(by_uid)
    folds = tuner.getNumFolds() if hasattr(tuner, "getNumFolds") else 1
    return ActiveTuner(tuner.uid, tuner.getEstimator().uid, maps, int(folds))


@contextmanager
def tracking(tuner: Any) -> Iterator[ActiveTuner]:
    """Registers ``tuner`` while its fit runs."""
    active = tuner_of(tuner)
    with _lock:
        _active.append(active)
    try:
        yield active
    finally:
        with _lock:
            _active.remove(active)


def place_of(estimator: Any) -> Tuning:
    """The tuning place of a fit about to run (counted: call once per fit); NOT_TUNING outside every tuner."""
    uid = getattr(estimator, "uid", None)
    if uid is None:
        return NOT_TUNING
    values = param_values(estimator)
    with _lock:
        for active in reversed(_active):  # the innermost tuner first
            place = active.place(uid, values)
            if place is not None:
                return place
    return NOT_TUNING


def install(prune: OnPrune | None = None) -> None:
    """Wrap CrossValidator's and TrainValidationSplit's ``_fit`` so their leaf fits find them (idempotent);
    with ``prune``, CrossValidator fits prune hopeless candidates and report them to it (replaces a
    previous hook; None: pyspark's own fits, unchanged)."""
    from pyspark.ml.tuning import CrossValidator, TrainValidationSplit

    if prune is not None and isinstance(tuning_helpers(), str):
        log.warning("SLAQ: spark.slaq.prune is on but CrossValidators run unpruned: %s", tuning_helpers())
        prune = None
    with _lock:
        _pruning[:] = [] if prune is None else [prune]
        for cls in (CrossValidator, TrainValidationSplit):
            if cls in _originals:
                continue
            original = _originals[cls] = cls._fit

            def _fit(self: Any, dataset: Any, _original: Any = original) -> Any:
                hook = _pruning[0] if _pruning and isinstance(self, CrossValidator) else None
                why = None if hook is None else not_prunable(self)
                if why is not None:
                    log.info("SLAQ: %s runs unpruned (spark.slaq.prune is on): %s", self.uid, why)
                    hook = None
                with tracking(self):
                    return _original(self, dataset) if hook is None else cross_validate(self, dataset, hook)

            functools.update_wrapper(_fit, original)
            cls._fit = _fit  # type: ignore[method-assign]


def uninstall() -> None:
    """Restore pyspark's own tuner fits."""
    with _lock:
        _pruning.clear()
        for cls, original in _originals.items():
            setattr(cls, "_fit", original)  # noqa: B010 (any tuner class)
        _originals.clear()
