"""The pyspark-private names SLAQ relies on, resolved once in one place (checked against pyspark 4.0.5-4.3.0).

SLAQ hooks spark.ml from Python where pyspark offers no public extension point: the tuners' ``_fit``
(:mod:`slaq.integrations.tuners`), and for pruning the helpers ``CrossValidator._fit`` itself uses, which
:func:`slaq.integrations.pruning.cross_validate` follows line by line. A pyspark release that renames one of them must
turn pruning off with one clear warning naming what is missing, never fail a user's CrossValidator with
an AttributeError in the middle of a fit.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

CHECKED_AGAINST = "4.0.5, 4.1.4, 4.2.1 and 4.3.0"  # the pyspark versions these names were read from (pyspark/ml/tuning.py)


@dataclass(frozen=True)
class TuningHelpers:
    """What :func:`slaq.integrations.pruning.cross_validate` needs of pyspark's CrossValidator internals."""

    parallel_fit_tasks: Callable[..., Any]  # pyspark.ml.tuning._parallelFitTasks(est, train, eva, validation, maps, collect)
    cache_dataset: Callable[[Any], Any]  # pyspark.ml.tuning._cache_spark_dataset(df) (4.1+; cached_fold on 4.0): a context manager
    k_fold: Callable[[Any, Any], Any]  # CrossValidator._kFold(cv, dataset): [(train, validation)] per fold


@contextlib.contextmanager
def cached_fold(dataset: Any) -> Iterator[Any]:
    """A fold's DataFrame cached while its candidates fit, as pyspark 4.0's ``CrossValidator._fit`` does it
    inline (``cache()``, ``unpersist()``); 4.1 moved that into ``_cache_spark_dataset``."""
    dataset.cache()
    try:
        yield dataset
    finally:
        dataset.unpersist()


@functools.cache
def tuning_helpers() -> TuningHelpers | str:
    """The helpers, or why they are unavailable in this pyspark (a sentence for the warning)."""
    import pyspark
    from pyspark.ml import tuning

    missing = [name for name in ("_parallelFitTasks",) if not hasattr(tuning, name)]
    missing += [f"CrossValidator.{name}" for name in ("_kFold", "_fit") if not hasattr(tuning.CrossValidator, name)]
    if missing:
        return (f"pyspark {pyspark.__version__} lacks {', '.join(missing)} (SLAQ's pruning was checked against "
                f"pyspark {CHECKED_AGAINST})")
    return TuningHelpers(tuning._parallelFitTasks, getattr(tuning, "_cache_spark_dataset", cached_fold), tuning.CrossValidator._kFold)
