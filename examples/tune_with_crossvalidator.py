"""A CrossValidator tuning a LogisticRegression while a LinearSVC trains beside it: no SLAQ code at all.

    spark-submit --master "local-cluster[2,1,1024]" --conf spark.scheduler.mode=FAIR \
        --conf spark.slaq.enabled=true examples/tune_with_crossvalidator.py

With SLAQ on, every spark.ml fit (each candidate on each fold, the refit of the best, the LinearSVC)
is its own SLAQ job whose L-BFGS iterations SLAQ captures; results are the same as with SLAQ off.
"""

from concurrent.futures import ThreadPoolExecutor

from pyspark.ml.classification import LinearSVC, LogisticRegression
from pyspark.ml.evaluation import BinaryClassificationEvaluator
from pyspark.ml.feature import VectorAssembler
from pyspark.ml.tuning import CrossValidator, ParamGridBuilder
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

if __name__ == "__main__":
    spark = SparkSession.builder.appName("slaq-crossvalidator").getOrCreate()
    cols = [f"x{i}" for i in range(8)]
    raw = spark.range(10000, numPartitions=4).select(*[F.randn(seed=i).alias(c) for i, c in enumerate(cols)])
    raw = raw.withColumn("label", (F.col("x0") - 2 * F.col("x1") + F.col("x2") + F.randn(seed=99) > 0).cast("double"))
    data = VectorAssembler(inputCols=cols, outputCol="features").transform(raw).select("features", "label").cache()
    data.count()

    lr = LogisticRegression(maxIter=15, elasticNetParam=1.0)  # L1: a large regParam drops features
    grid = ParamGridBuilder().addGrid(lr.regParam, [0.001, 0.05, 0.3]).build()
    cv = CrossValidator(estimator=lr, estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(),
                        numFolds=2, parallelism=3, seed=7)
    with ThreadPoolExecutor(2) as pool:
        tuned = pool.submit(cv.fit, data)
        svc = pool.submit(LinearSVC(maxIter=15, regParam=0.01).fit, data)
        best, svm = tuned.result(), svc.result()

    print("average AUC per regParam:", {p[lr.regParam]: round(float(m), 4) for p, m in zip(grid, best.avgMetrics)})
    print("best regParam:", best.bestModel.getRegParam(), "iterations:", best.bestModel.summary.totalIterations)
    print("LinearSVC coefficients:", [round(float(c), 3) for c in svm.coefficients[:3]], "...")
    spark.stop()
