"""The spark.ml estimators SLAQ knows: which report a per-iteration loss, and which cache their training data.

A fit reports a loss when its training runs a breeze ``LBFGS``/``OWLQN``/``LBFGSB`` or is a Gaussian mixture
(its log-likelihood after each EM step), whose per-iteration line SLAQ captures (docs/mllib-capture.md has the
evidence per estimator and setting, and why gradient-boosted trees' training error is not captured).
The catalogue decides how a fit is scheduled before its first loss (:func:`reports_loss`), and which fits persist their
own copy of the training data ("training blocks", ``MEMORY_AND_DISK``) while they run, which is what
fills storage memory when SLAQ runs many fits at once (:mod:`slaq.live.storage`). docs/mllib.md's
catalogue table is :func:`markdown_table`; a unit test keeps both docs' tables equal to it.

    python -m slaq.integrations.catalogue   # prints the table
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

ALWAYS = "always"
BY_PARAMS = "depending on its params"
NEVER = "never"


def _mlp_reports(params: Mapping[str, object]) -> bool | None:
    return params.get("solver", "l-bfgs") == "l-bfgs"  # "gd": mllib's GradientDescent logs no loss


def _linear_regression_reports(params: Mapping[str, object]) -> bool | None:
    """l-bfgs and huber run breeze; "normal" is a closed form unless elastic net needs the quasi-Newton
    solver; "auto" picks between them by the data's width, unknown before the fit."""
    solver = params.get("solver", "auto")
    elastic = float(params.get("elasticNetParam", 0.0)) > 0 and float(params.get("regParam", 0.0)) > 0  # type: ignore[arg-type]
    if solver == "l-bfgs" or params.get("loss") == "huber" or (solver == "normal" and elastic):
        return True
    return False if solver == "normal" else None


@dataclass(frozen=True)
class Estimator:
    name: str  # the pyspark.ml class name
    reports: str  # ALWAYS, BY_PARAMS or NEVER
    training_cache: bool = False  # persists its own copy of the training data while it fits
    rule: Callable[[Mapping[str, object]], bool | None] | None = None  # BY_PARAMS: whether a fit with these params reports


CATALOGUE: tuple[Estimator, ...] = (
    Estimator("LogisticRegression", ALWAYS, training_cache=True),
    Estimator("LinearSVC", ALWAYS, training_cache=True),
    Estimator("AFTSurvivalRegression", ALWAYS, training_cache=True),
    Estimator("GaussianMixture", ALWAYS),
    Estimator("LinearRegression", BY_PARAMS, training_cache=True, rule=_linear_regression_reports),
    Estimator("MultilayerPerceptronClassifier", BY_PARAMS, training_cache=True, rule=_mlp_reports),
    Estimator("KMeans", NEVER, training_cache=True),
    Estimator("BisectingKMeans", NEVER),
    Estimator("LDA", NEVER),
    Estimator("ALS", NEVER),
    Estimator("PowerIterationClustering", NEVER),
    Estimator("FPGrowth", NEVER),
    Estimator("PrefixSpan", NEVER),
    Estimator("DecisionTreeClassifier", NEVER),
    Estimator("DecisionTreeRegressor", NEVER),
    Estimator("RandomForestClassifier", NEVER),
    Estimator("RandomForestRegressor", NEVER),
    Estimator("GBTClassifier", NEVER),
    Estimator("GBTRegressor", NEVER),
    Estimator("NaiveBayes", NEVER),
    Estimator("IsotonicRegression", NEVER),
    Estimator("GeneralizedLinearRegression", NEVER),
    Estimator("FMClassifier", NEVER),
    Estimator("FMRegressor", NEVER),
    Estimator("Word2Vec", NEVER),
)
BY_NAME: dict[str, Estimator] = {e.name: e for e in CATALOGUE}


def reports_loss(estimator: str, params: Mapping[str, object]) -> bool | None:
    """Whether a fit of ``estimator`` with these explicitly set ``params`` will report per-iteration
    losses: True, False, or None when that cannot be known before the fit (an estimator not in the
    catalogue, LinearRegression's "auto" solver). A fit known to report is scheduled as a new job until
    its first loss arrives (spark.ml spends a few passes over the data before its first iteration); one
    known not to gets an even share at once."""
    entry = BY_NAME.get(estimator)
    if entry is None:
        return None
    if entry.rule is not None:
        return entry.rule(params)
    return entry.reports == ALWAYS


def training_caches() -> list[str]:
    """The estimators whose fits persist their own copy of the training data while they run."""
    return [e.name for e in CATALOGUE if e.training_cache]


def markdown_table() -> str:
    """The catalogue as docs/mllib.md shows it."""
    rows = ["| estimator | reports a per-iteration loss | caches its training data while it fits |", "| --- | --- | --- |"]
    rows += [f"| `{e.name}` | {e.reports} | {'yes' if e.training_cache else 'no'} |" for e in CATALOGUE]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
