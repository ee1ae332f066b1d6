"""Three logistic regressions trained side by side, each a SLAQ job that reports its loss every iteration.

    spark-submit --master "local-cluster[2,1,1024]" --conf spark.scheduler.mode=FAIR \
        --conf spark.slaq.enabled=true examples/train_with_report_loss.py

SLAQ gives the cores to the jobs whose loss it predicts will fall most; a job whose loss reached 95%
of its predicted reduction stops. Without the two confs the same script runs as plain Spark.
"""

import numpy as np
from pyspark import InheritableThread
from pyspark.sql import SparkSession

import slaq

FEATURES = 10


def points(seed: int) -> list[tuple[np.ndarray, float]]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2000, FEATURES))
    y = (x @ np.linspace(-1, 1, FEATURES) + rng.normal(scale=0.5, size=2000) > 0).astype(float)
    return list(zip(x, y))


def gradient_and_loss(w: np.ndarray, point: tuple[np.ndarray, float]) -> tuple[np.ndarray, float]:
    x, y = point
    p = 1.0 / (1.0 + np.exp(-x @ w))
    return (p - y) * x, -(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))


def train(data, n: int, name: str, step: float) -> None:
    w = np.zeros(FEATURES)
    with slaq.job(name, target_reduction=0.95) as job:
        for _ in range(40):
            grad, loss = data.map(lambda p, w=w: gradient_and_loss(w, p)).reduce(lambda a, b: (a[0] + b[0], a[1] + b[1]))
            w = w - step * grad / n
            slaq.report_loss(loss / n)  # the one line SLAQ needs
            if job.should_stop():
                break
    print(f"{name}: {len(job.losses)} iterations, loss {job.losses[0]:.4f} -> {job.losses[-1]:.4f}")


if __name__ == "__main__":
    spark = SparkSession.builder.appName("slaq-report-loss").getOrCreate()
    data = spark.sparkContext.parallelize(range(8), 8).flatMap(points).cache()
    n = data.count()
    threads = [InheritableThread(target=train, args=(data, n, f"logreg-step-{s}", s)) for s in (0.1, 0.5, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spark.stop()
