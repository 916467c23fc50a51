"""`sparsekm reduce` and `predict` on a fitted KernelRidge (issue 36, item 2)."""

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.kernel_ridge import KernelRidge

import sparsekm
from sparsekm.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("krr")
    X, y = make_friedman1(360, noise=0.3, random_state=0)
    krr = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.2).fit(X[:200], y[:200])
    joblib.dump(krr, d / "krr.joblib")
    np.savetxt(d / "T.csv", np.c_[X[:200], y[:200]], delimiter=",")
    np.savetxt(d / "V.csv", np.c_[X[200:300], y[200:300]], delimiter=",")
    np.savetxt(d / "X.csv", X[300:], delimiter=",")
    return d, krr, X[300:]


def _predict(capsys, model, data):
    capsys.readouterr()
    assert main(["predict", str(model), str(data)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    return np.array([float(v) for v in lines])  # one number per row


def test_reduce_without_data_then_predict(files, capsys):
    d, krr, Xt = files
    assert main(["--quiet", "reduce", str(d / "krr.joblib"), "--trust-pickle", "-n", "30",
                 "-o", str(d / "a.skm")]) == 0
    out = _predict(capsys, d / "a.skm", d / "X.csv")
    assert out.shape == (60,)
    small = sparsekm.load(d / "a.skm")
    assert small.n_terms == 30
    np.testing.assert_allclose(out, small.decision_function(Xt), rtol=1e-9)
    # a reduced set of the ridge function: close to the original's predictions
    assert np.sqrt(np.mean((out - krr.predict(Xt)) ** 2)) < 0.3 * np.std(krr.predict(Xt))


def test_reduce_with_train_and_validation(files, capsys):
    d, krr, Xt = files
    assert main(["--quiet", "reduce", str(d / "krr.joblib"), "--trust-pickle", "-n", "30",
                 "--train", str(d / "T.csv"), "--validation", str(d / "V.csv"),
                 "-o", str(d / "b.skm")]) == 0
    text = capsys.readouterr().out
    assert "RMSE" in text and "nystroem-kmeans" in text
    out = _predict(capsys, d / "b.skm", d / "X.csv")
    small = sparsekm.load(d / "b.skm")
    assert small.n_vectors_ <= 30
    np.testing.assert_allclose(out, small.predict(Xt), rtol=1e-9)


def test_export_reduced_kernel_ridge(files, capsys):
    ort = pytest.importorskip("onnxruntime")
    d, krr, Xt = files
    if not (d / "b.skm").exists():
        assert main(["--quiet", "reduce", str(d / "krr.joblib"), "--trust-pickle", "-n", "30",
                     "--train", str(d / "T.csv"), "--validation", str(d / "V.csv"),
                     "-o", str(d / "b.skm")]) == 0
    assert main(["export", str(d / "b.skm"), "-o", str(d / "b.onnx"), "--float64"]) == 0
    sess = ort.InferenceSession(str(d / "b.onnx"), providers=["CPUExecutionProvider"])
    out = sess.run(None, {"X": Xt})[0].reshape(-1)
    np.testing.assert_allclose(out, sparsekm.load(d / "b.skm").predict(Xt), rtol=1e-10)
