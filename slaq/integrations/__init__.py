"""SLAQ's integrations: other libraries' training work made SLAQ jobs with no code change, one module each.

* :mod:`~slaq.integrations.sparkml`: every leaf spark.ml fit (``JavaEstimator._fit``) its own job, and each fit of a Pipeline a tuner tunes;
* :mod:`~slaq.integrations.tuners`: which CrossValidator/TrainValidationSplit candidate and fold a fit is;
* :mod:`~slaq.integrations.pruning`: hopeless CrossValidator candidates' remaining folds skipped (``spark.slaq.prune``);
* :mod:`~slaq.integrations.pyspark_private`: the pyspark-private names the tuner hooks rely on, resolved in one place;
* :mod:`~slaq.integrations.connect`: Spark Connect clients' fits, made jobs by the shim in the server's JVM;
* :mod:`~slaq.integrations.catalogue`: the spark.ml estimators SLAQ knows (``python -m slaq.integrations.catalogue``).

:mod:`~slaq.integrations.hooks` switches every Python hook on and off for a runtime (``SlaqRuntime.start``/``stop``).
This package imports none of them, so importing one module (the catalogue) loads only what it needs.
The integrations open jobs as a user does (:class:`slaq.jobs.Job`) and never import :mod:`slaq.runtime`.
"""
