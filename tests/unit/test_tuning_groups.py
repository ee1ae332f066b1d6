"""Which tuner a spark.ml leaf fit belongs to (slaq.tuning): candidate, fold and refit, from the order
pyspark fits them in (every candidate once per fold, folds in order, then the best one once more)."""

from __future__ import annotations

from slaq.live.status import Tuning
from slaq.tuning import ActiveTuner


def test_candidates_folds_and_the_refit_of_a_cross_validator():
    cv = ActiveTuner("CrossValidator_1", frozenset({"lr"}), [{"lr": {"regParam": 0.1}}, {"lr": {"regParam": 0.01}}], folds=2)
    fits = [{"regParam": 0.01, "maxIter": 5}, {"regParam": 0.1, "maxIter": 5}] * 2 + [{"regParam": 0.1, "maxIter": 5}]
    places = [cv.place("lr", values) for values in fits]
    assert places == [Tuning("CrossValidator_1", 1, 0), Tuning("CrossValidator_1", 0, 0),
                      Tuning("CrossValidator_1", 1, 1), Tuning("CrossValidator_1", 0, 1),
                      Tuning("CrossValidator_1", 0, -1, True)]
    assert sum(p.refit for p in places if p is not None) == 1
    assert cv.place("kmeans", {"k": 3}) is None  # another estimator's fit is not this tuner's


def test_a_train_validation_split_has_no_folds():
    tvs = ActiveTuner("TrainValidationSplit_1", frozenset({"lr"}), [{"lr": {"regParam": 0.1}}, {"lr": {"regParam": 0.01}}], folds=1)
    assert tvs.place("lr", {"regParam": 0.1}) == Tuning("TrainValidationSplit_1", 0, -1)
    assert tvs.place("lr", {"regParam": 0.01}) == Tuning("TrainValidationSplit_1", 1, -1)
    assert tvs.place("lr", {"regParam": 0.01}) == Tuning("TrainValidationSplit_1", 1, -1, True)
