"""Which tuner a spark.ml leaf fit belongs to: its CrossValidator or TrainValidationSplit, the param
map it fits, the fold, and whether it is the tuner's refit on the best param map.

A tuner's own ``_fit`` only calls leaf fits (on pool threads that carry no Python context), so while
one runs it is registered here with its estimator's uids and param maps; a leaf fit then finds its
tuner by its estimator's uid (a param-map copy keeps it) and its candidate by the param values. pyspark
fits every candidate once per fold, folds in order, then refits the best once: a candidate's
``folds + 1``-th fit is the refit. Installed on attach like the leaf-fit hook (:mod:`slaq.sparkml`).
With ``spark.slaq.prune`` a CrossValidator runs :func:`slaq.prune.cross_validate` instead of pyspark's
own ``_fit`` (unless :func:`slaq.prune.not_prunable` says why not: the user's own folds); a pruned
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

from slaq.live.status import NOT_TUNING, Tuning
from slaq.prune import OnPrune, cross_validate, not_prunable
from slaq.pyspark_private import tuning_helpers

log = logging.getLogger("slaq.tuning")

_lock = threading.Lock()
_active: list[ActiveTuner] = []
_originals: dict[type, Any] = {}
_pruning: list[OnPrune] = []  # the one hook CrossValidator fits prune through, while spark.slaq.prune is on


@dataclass
class ActiveTuner:
    """One running tuner: its name (uid), the uids of the estimators it fits, its param maps as
    ``{uid: {param name: value}}`` and its number of folds; ``fits`` counts fits per (uid, candidate)."""

    name: str
    uids: frozenset[str]
    param_maps: list[dict[str, dict[str, Any]]]
    folds: int
    fits: dict[tuple[str, int], int] = field(default_factory=dict)

    def place(self, uid: str, values: dict[str, Any]) -> Tuning | None:
        """The place of a fit of estimator ``uid`` with param ``values`` (name -> value), counting it; None when not ours."""
        if uid not in self.uids:
            return None
        candidate = next((j for j, m in enumerate(self.param_maps)
                          if all(name in values and values[name] == v for name, v in m.get(uid, {}).items())), -1)
        n = self.fits.get((uid, candidate), 0)
        self.fits[(uid, candidate)] = n + 1
        if n >= self.folds:
            return Tuning(self.name, candidate, -1, True)
        return Tuning(self.name, candidate, n if self.folds > 1 else -1, False)


def _stage_uids(estimator: Any) -> set[str]:
    """The uids of ``estimator`` and of every stage of a Pipeline in it."""
    uids = {estimator.uid}
    stages = getattr(estimator, "getStages", None)
    if callable(stages):
        for stage in stages():
            uids |= _stage_uids(stage)
    return uids


def tuner_of(tuner: Any) -> ActiveTuner:
    """What a CrossValidator or TrainValidationSplit about to fit will fit."""
    maps = []
    for pm in tuner.getEstimatorParamMaps():
        by_uid: dict[str, dict[str, Any]] = {}
        for param, value in pm.items():
            by_uid.setdefault(param.parent, {})[param.name] = value
        maps.append(by_uid)
    folds = tuner.getNumFolds() if hasattr(tuner, "getNumFolds") else 1
    return ActiveTuner(tuner.uid, frozenset(_stage_uids(tuner.getEstimator())), maps, int(folds))


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
    """The tuning place of a leaf fit about to run (counted: call once per fit); NOT_TUNING outside every tuner."""
    uid = getattr(estimator, "uid", None)
    if uid is None:
        return NOT_TUNING
    values = {p.name: v for p, v in estimator._paramMap.items()}
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
