"""Instrumented iterative trainers on Spark RDDs/DataFrames for the families MLlib gives no
per-iteration loss for. Each reports every iteration to the current ``slaq.job`` (if any) and stops
early once ``job.should_stop()``."""

import sys

from pyspark import cloudpickle

from slaq.ml.blocks import as_blocks, synthetic_blocks
from slaq.ml.rdd_trainers import TrainResult, boosted_stumps, kmeans, logistic_regression, svm

__all__ = ["TrainResult", "as_blocks", "boosted_stumps", "kmeans", "logistic_regression", "svm", "synthetic_blocks"]

# Ship these trainers' task functions by value: executors need numpy, not this package.
cloudpickle.register_pickle_by_value(sys.modules[__name__])
