"""The catalogue of training runs whose loss/CPU traces the simulator replays, and their storage.

``record_all()`` actually trains every entry (numpy/scipy) and returns the traces; ``load()`` reads
the small recorded copy shipped with the package (``data/traces.json.gz``) so simulations are
reproducible across machines. ``slaq traces record`` regenerates that file.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from functools import lru_cache, partial
from pathlib import Path

import numpy as np

from slaq.traces import datasets as ds
from slaq.traces import trainers as tr
from slaq.traces.trainers import Trace

TRACE_FILE = Path(__file__).parent / "data" / "traces.json.gz"
MAX_ITERATIONS = 100
CONVERGED_FRACTION = 0.002  # a run ends once within 0.2% of its total reduction (the paper's "converged")
MIN_ITERATIONS = 8


def _pyspark_file(name: str) -> Path | None:
    root = ds.pyspark_data_dir()
    return None if root is None or not (root / name).exists() else root / name


def _libsvm_binary(name: str) -> tuple[np.ndarray, np.ndarray] | None:
    path = _pyspark_file(name)
    if path is None:
        return None
    X, y = ds.read_libsvm(path)
    return ds.standardize(X), (y > 0).astype(float)


def _svm_dense() -> tuple[np.ndarray, np.ndarray] | None:
    path = _pyspark_file("sample_svm_data.txt")
    if path is None:
        return None
    rows = ds.read_dense(path)
    return ds.standardize(rows[:, 1:]), (rows[:, 0] > 0).astype(float)


Run = Callable[[], tuple[list, list] | None]


def _entries() -> list[tuple[str, str, Run]]:
    """(name, family, run) for every catalogued training run; runs needing pyspark data may return None."""
    out: list[tuple[str, str, Run]] = []
    it = MAX_ITERATIONS
    for seed, (n, d, noise) in enumerate([(4000, 40, 0.3), (3000, 80, 0.1), (6000, 20, 0.5)]):
        X, y = ds.classification(n, d, noise, seed)
        for lr in (0.5, 2.0):
            out.append((f"logreg-synth{seed}-lr{lr}", "logreg", partial(tr.logreg_gd, X, y, lr, 1e-3, it)))
            out.append((f"svm-synth{seed}-lr{lr / 4}", "svm", partial(tr.svm_gd, X, y, lr / 4, 1e-3, it)))
    def logreg_pyspark(lr: float, l2: float) -> tuple[list, list] | None:
        data = _libsvm_binary("sample_libsvm_data.txt")
        return None if data is None else tr.logreg_gd(*data, lr, l2, it)

    def svm_pyspark() -> tuple[list, list] | None:
        data = _svm_dense()
        return None if data is None else tr.svm_gd(*data, 0.05, 1e-2, it)

    for lr, l2 in ((0.1, 5e-2), (0.02, 2e-2)):
        out.append((f"logreg-pyspark-libsvm-lr{lr}", "logreg", partial(logreg_pyspark, lr, l2)))
    out.append(("svm-pyspark-svmdata", "svm", svm_pyspark))
    for seed, cond in enumerate((10.0, 30.0, 100.0)):
        X, y = ds.regression(4000, 60, 0.5, seed, cond)
        out.append((f"linreg-synth{seed}-cond{int(cond)}", "linreg", partial(tr.linreg_lbfgs, X, y, 1e-4, it)))

    def linreg_pyspark() -> tuple[list, list] | None:
        path = _pyspark_file("sample_linear_regression_data.txt")
        if path is None:
            return None
        X, y = ds.read_libsvm(path)
        return tr.linreg_lbfgs(np.hstack([X, X**2, np.sin(3 * X)]), y, 1e-4, it)

    out.append(("linreg-pyspark", "linreg", linreg_pyspark))
    for seed, (k, spread) in enumerate([(8, 3.0), (16, 2.5), (24, 3.5), (12, 4.5)]):
        X = ds.blobs(3000, 6, k, spread, seed)
        out.append((f"kmeans-synth{seed}-k{k}", "kmeans", partial(tr.kmeans_lloyd, X, k, it, seed)))
    gmm = _pyspark_file("gmm_data.txt")
    if gmm is not None:
        Xg = ds.read_dense(gmm)
        out.append(("kmeans-pyspark-gmm-k6", "kmeans", partial(tr.kmeans_lloyd, Xg, 6, it, 3)))
    for seed, (hidden, classes) in enumerate([(16, 4), (32, 6), (8, 3)]):
        X, labels = ds.multiclass(2000, 20, classes, seed)
        out.append((f"mlp-synth{seed}-h{hidden}", "mlp", partial(tr.mlp_lbfgs, X, labels, hidden, 1e-2, it, seed)))

    def mlp_iris() -> tuple[list, list] | None:
        path = _pyspark_file("sample_multiclass_classification_data.txt")
        if path is None:
            return None
        X, labels = ds.read_libsvm(path)
        return tr.mlp_lbfgs(ds.standardize(X), labels.astype(int), 10, 1e-2, it, 7)

    out.append(("mlp-pyspark-multiclass", "mlp", mlp_iris))
    for seed, rate in enumerate((0.05, 0.1, 0.2)):
        X, y = ds.regression(3000, 8, 0.3, seed + 10, 3.0)
        out.append((f"gbt-synth{seed}-rate{rate}", "gbt", partial(tr.gbt_rounds, X, y, rate, it)))
    for seed, (docs, topics) in enumerate([(300, 8), (500, 16)]):
        counts = ds.documents(docs, 400, topics, 200, seed)
        out.append((f"topic-synth{seed}-t{topics}", "topic_em", partial(tr.topic_em, counts, topics, it, seed)))
    lda = _pyspark_file("sample_lda_data.txt")
    if lda is not None:
        counts = ds.read_dense(lda)
        out.append(("topic-pyspark-lda", "topic_em", partial(tr.topic_em, counts, 3, it, 5)))
    return out


def truncate_at_convergence(losses: list[float], cpu: list[float]) -> tuple[list[float], list[float]]:
    """Cut a run once its loss is within ``CONVERGED_FRACTION`` of the total reduction it achieved."""
    y = np.asarray(losses)
    span = y[0] - y.min()
    if span <= 0:
        return losses[:MIN_ITERATIONS + 1], cpu[:MIN_ITERATIONS]
    close = np.nonzero(y - y.min() <= CONVERGED_FRACTION * span)[0]
    end = max(int(close[0]), MIN_ITERATIONS) if close.size else len(y) - 1
    return losses[:end + 1], cpu[:end]


def record_all(names: list[str] | None = None) -> list[Trace]:
    """Train every catalogue entry (or those named) and return the truncated traces."""
    traces = []
    for name, family, run in _entries():
        if names is not None and name not in names:
            continue
        result = run()
        if result is None:
            continue
        losses, cpu = truncate_at_convergence(*result)
        traces.append(Trace(name, family, [float(v) for v in losses], [float(v) for v in cpu]))
    return traces


def catalogue_names() -> list[str]:
    return [name for name, _, _ in _entries()]


def save(traces: list[Trace], path: Path = TRACE_FILE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = [{"name": t.name, "family": t.family, "losses": t.losses, "cpu_seconds": t.cpu_seconds} for t in traces]
    with gzip.open(path, "wt") as fh:
        json.dump(payload, fh)


@lru_cache(maxsize=4)
def load(path: Path = TRACE_FILE) -> tuple[Trace, ...]:
    """The recorded traces; raises FileNotFoundError with the command that records them."""
    if not path.exists():
        raise FileNotFoundError(f"no recorded traces at {path}: run `slaq traces record`")
    with gzip.open(path, "rt") as fh:
        payload = json.load(fh)
    return tuple(Trace(p["name"], p["family"], p["losses"], p["cpu_seconds"]) for p in payload)
