"""When CrossValidator pruning stays off (the user's own folds) and the line that says a choice was made among
pruned candidates (slaq.integrations.pruning)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.ml.tuning import CrossValidator

from slaq.integrations.pruning import Pruned, chosen_among_pruned, not_prunable


def test_a_cross_validator_with_the_users_own_folds_is_not_pruned():
    assert not_prunable(CrossValidator()) is None
    assert "foldCol=fold" in (not_prunable(CrossValidator(foldCol="fold")) or "")


@dataclass(frozen=True)
class _Param:  # what a param map's keys give the line: their name
    name: str


def _grid(*values: float) -> list[dict]:
    return [{_Param("regParam"): v} for v in values]


def test_a_choice_among_pruned_candidates_is_said_and_one_among_all_is_not():
    assert chosen_among_pruned("CrossValidator_1", 0, _grid(0.1, 1.0, 10.0), {}, 3) is None
    line = chosen_among_pruned("CrossValidator_1", 0, _grid(0.1, 1.0, 10.0),
                               {2: Pruned(2, 1, 0.5, 0, 0.9), 1: Pruned(1, 2, 0.8, 0, 0.9)}, 3) or ""
    assert line.startswith("SLAQ: CrossValidator_1 chose candidate 0 (regParam=0.1) among 3 candidates, 2 of them pruned "
                           "(candidate 1 after 2 of 3 folds, candidate 2 after 1 of 3 folds)"), line
    assert "97.7%" in line
