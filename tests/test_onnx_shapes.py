"""ONNX graphs compute what the pipeline computes, in the shapes they declare: RBFSampler's
float32 graph keeps the labels of rows near 1e6; every pipeline graph declares the output
shapes it computes."""

import numpy as np
import pytest

from sparsekm import models


def _session(proto):
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])


def test_rbf_sampler_float32_graph_keeps_labels_at_a_million():
    pytest.importorskip("skl2onnx")
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    import sparsekm

    rng = np.random.default_rng(0)
    # rows near +-1e6, exactly representable in float32, so that float32 input loses
    # nothing and the float64 pipeline is the reference for the float32 graph
    X = (np.sign(rng.normal(size=(400, 4))) * 1e6
         + rng.integers(-30, 30, size=(400, 4))).astype(np.float32).astype(np.float64)
    y = (np.cos(X[:, 0] * 0.3) > 0).astype(int)
    pipe = Pipeline([("rff", RBFSampler(gamma=0.05, n_components=100, random_state=0)),
                     ("lr", LogisticRegression(max_iter=2000))]).fit(X, y)
    ref = pipe.predict(X)
    proto = sparsekm.to_onnx(pipe, X_sample=X[:2], dtype=np.float32)
    label, proba = _session(proto).run(None, {"X": X.astype(np.float32)})
    np.testing.assert_array_equal(label, ref)
    np.testing.assert_allclose(proba, pipe.predict_proba(X), atol=1e-5)
    # the features alone, in float32, to float32's precision of values in [-s, s]
    feat = sparsekm.to_onnx(pipe[:1], X_sample=X[:2], dtype=np.float32)
    (got,) = _session(feat).run(None, {"X": X.astype(np.float32)})
    np.testing.assert_allclose(got, pipe[0].transform(X), atol=1e-6)


def _declared_shapes(proto):
    return {o.name: [d.dim_value if d.HasField("dim_value") else None
                     for d in o.type.tensor_type.shape.dim] for o in proto.graph.output}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pipeline_graphs_declare_the_shapes_they_compute(dtype):
    pytest.importorskip("skl2onnx")
    from sklearn.datasets import load_digits
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC, LinearSVC

    import sparsekm

    X, y = load_digits(return_X_y=True)
    X, y = X[:300] / 16, y[:300]
    yb = (y > 4).astype(int)
    pipes = {
        "nystroem+linearsvc binary": Pipeline([
            ("ny", Nystroem(gamma=0.05, n_components=20, random_state=0)),
            ("svm", LinearSVC())]).fit(X, yb),
        "nystroem+linearsvc multi": Pipeline([
            ("ny", Nystroem(gamma=0.05, n_components=20, random_state=0)),
            ("svm", LinearSVC())]).fit(X, y),
        "rff+logreg": Pipeline([
            ("rff", RBFSampler(gamma=0.05, n_components=20, random_state=0)),
            ("lr", LogisticRegression(max_iter=500))]).fit(X, yb),
        "scaler+rs binary": Pipeline([
            ("sc", StandardScaler()),
            ("rs", models.ReducedSetClassifier(SVC(gamma=0.01), n_vectors=5,
                                               random_state=0))]).fit(X, yb),
        "kpca": Pipeline([("sc", StandardScaler()),
                          ("k", models.KernelPCA(n_components=3))]).fit(X),
    }
    for name, pipe in pipes.items():
        proto = sparsekm.to_onnx(pipe, X_sample=X[:2], dtype=dtype)
        sess = _session(proto)
        outs = sess.run(None, {"X": X[:7].astype(dtype)})
        for (oname, declared), got in zip(_declared_shapes(proto).items(), outs, strict=True):
            assert len(declared) == got.ndim, (name, oname, declared, got.shape)
            for d, g in zip(declared[1:], got.shape[1:]):
                assert d in (None, 0, g), (name, oname, declared, got.shape)
