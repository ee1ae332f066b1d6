import numpy as np

from slaq.traces import catalog
from slaq.traces import datasets as ds
from slaq.traces import trainers as tr


def _mostly_decreasing(losses):
    y = np.asarray(losses)
    return y[-1] < y[0] and np.mean(np.diff(y) <= 1e-12) > 0.9


def test_trainers_really_reduce_loss():
    X, y = ds.classification(500, 10, 0.2, 0)
    for losses, cpu in (tr.logreg_gd(X, y, 1.0, 1e-3, 20), tr.svm_gd(X, y, 0.2, 1e-3, 20)):
        assert _mostly_decreasing(losses) and len(cpu) == 20 and all(c > 0 for c in cpu)
    Xr, yr = ds.regression(400, 10, 0.1, 0)
    assert _mostly_decreasing(tr.linreg_lbfgs(Xr, yr, 1e-4, 15)[0])
    assert _mostly_decreasing(tr.kmeans_lloyd(ds.blobs(300, 3, 4, 1.0, 0), 4, 10, 0)[0])
    assert _mostly_decreasing(tr.gbt_rounds(Xr, yr, 0.1, 10)[0])
    assert _mostly_decreasing(tr.topic_em(ds.documents(30, 50, 3, 40, 0), 3, 10, 0)[0])
    Xm, labels = ds.multiclass(200, 5, 3, 0)
    assert tr.mlp_lbfgs(Xm, labels, 4, 1e-2, 10, 0)[0][-1] < tr.mlp_lbfgs(Xm, labels, 4, 1e-2, 10, 0)[0][0]


def test_pyspark_datasets_are_read():
    assert ds.pyspark_data_dir() is not None
    X, y = ds.read_libsvm(ds.pyspark_data_dir() / "sample_libsvm_data.txt")
    assert X.shape == (100, 692) and set(np.unique(y)) == {0.0, 1.0}


def test_truncation_at_convergence():
    losses = [10.0, 5.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    cut, cpu = catalog.truncate_at_convergence(losses, [1.0] * 11)
    assert len(cut) == catalog.MIN_ITERATIONS + 1 and len(cpu) == catalog.MIN_ITERATIONS


def test_record_and_reload_roundtrip(tmp_path):
    names = [n for n in catalog.catalogue_names() if n.startswith(("logreg-synth0", "gbt-synth0"))]
    traces = catalog.record_all(names)
    assert {t.name for t in traces} == set(names)
    path = tmp_path / "t.json.gz"
    catalog.save(traces, path)
    again = catalog.load(path)
    assert [t.losses for t in again] == [t.losses for t in traces]
