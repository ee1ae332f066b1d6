"""Which tuner a spark.ml fit belongs to (slaq.integrations.tuners): candidate, fold and refit, from the order
pyspark fits them in (every candidate once per fold, folds in order, then the best one once more), for a leaf
estimator and for a Pipeline whose param maps set params of one stage only."""

from __future__ import annotations

from slaq.integrations.tuners import ActiveTuner
from slaq.live.status import Tuning


def test_candidates_folds_and_the_refit_of_a_cross_validator():
    cv = ActiveTuner("CrossValidator_1", "lr", [{"lr": {"regParam": 0.1}}, {"lr": {"regParam": 0.01}}], folds=2)
    fits = [{"regParam": 0.01, "maxIter": 5}, {"regParam": 0.1, "maxIter": 5}] * 2 + [{"regParam": 0.1, "maxIter": 5}]
    places = [cv.place("lr", {"lr": values}) for values in fits]
    assert places == [Tuning("CrossValidator_1", 1, 0), Tuning("CrossValidator_1", 0, 0),
                      Tuning("CrossValidator_1", 1, 1), Tuning("CrossValidator_1", 0, 1),
                      Tuning("CrossValidator_1", 0, -1, True)]
    assert sum(p.refit for p in places if p is not None) == 1
    assert cv.place("kmeans", {"kmeans": {"k": 3}}) is None  # another estimator's fit is not this tuner's


def test_a_train_validation_split_has_no_folds():
    tvs = ActiveTuner("TrainValidationSplit_1", "lr", [{"lr": {"regParam": 0.1}}, {"lr": {"regParam": 0.01}}], folds=1)
    assert tvs.place("lr", {"lr": {"regParam": 0.1}}) == Tuning("TrainValidationSplit_1", 0, -1)
    assert tvs.place("lr", {"lr": {"regParam": 0.01}}) == Tuning("TrainValidationSplit_1", 1, -1)
    assert tvs.place("lr", {"lr": {"regParam": 0.01}}) == Tuning("TrainValidationSplit_1", 1, -1, True)


def test_a_pipelines_fit_is_one_fit_of_the_candidate_its_stages_params_name():
    cv = ActiveTuner("CrossValidator_2", "pipe", [{"lr": {"regParam": 0.1}}, {"lr": {"regParam": 0.01}}], folds=3)

    def fit(reg):  # the Pipeline copy a candidate fits: the scaler's params no map sets, the classifier's the map's
        return {"pipe": {"stages": "..."}, "scaler": {"withMean": True}, "lr": {"regParam": reg, "maxIter": 5}}

    places = [cv.place("pipe", fit(reg)) for reg in (0.1, 0.01) * 3 + (0.01,)]
    assert [(p.candidate, p.fold, p.refit) for p in places if p is not None] == [
        (0, 0, False), (1, 0, False), (0, 1, False), (1, 1, False), (0, 2, False), (1, 2, False), (1, -1, True)]
    # its stages' fits are not the tuner's: they run inside the Pipeline's
    assert cv.place("scaler", {"scaler": {"withMean": True}}) is None and cv.place("lr", fit(0.1)) is None
