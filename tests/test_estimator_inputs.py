"""Issue 38, item 12 (and the CLI's neighbours): smaller holes found by the third review.

Each test fails on the code before the fix: a kernel name that names no kernel, labels
mixing numbers and strings, RBFSampler's float32 ONNX graph at |x| ~ 1e6, a pipeline
graph whose declared output shape differs from what it computes.
"""

import inspect

import numpy as np
import pytest
from sklearn.utils._param_validation import validate_parameter_constraints

from sparsekm import models


def _classes_with(param):
    return [getattr(models, n) for n in models.__all__
            if inspect.isclass(getattr(models, n))
            and param in inspect.signature(getattr(models, n)).parameters]


@pytest.mark.parametrize("cls", _classes_with("kernel"), ids=lambda c: c.__name__)
def test_a_kernel_name_that_names_no_kernel_is_a_value_error(cls):
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    est = cls(kernel="os.system")
    # refused first thing in fit by the estimator's constraints (``_fit_context``)
    with pytest.raises(ValueError, match=r"'kernel' parameter of \w+ must be .* or None\. "
                                         r"Got 'os.system' instead"):
        est.fit(X, y)
    assert not hasattr(est, "n_features_in_")
    # and where sparsekm checks parameters (sparsekm.load builds estimators from files
    # with these constraints): refused there, the known names in any case accepted
    constraints = cls._parameter_constraints
    assert "kernel" in constraints
    with pytest.raises(ValueError, match="kernel"):
        validate_parameter_constraints({"kernel": constraints["kernel"]},
                                       {"kernel": "os.system"}, caller_name=cls.__name__)
    for ok in ("rbf", "RBF", "poly", None):
        validate_parameter_constraints({"kernel": constraints["kernel"]}, {"kernel": ok},
                                       caller_name=cls.__name__)


def _classifiers():
    from sklearn.svm import SVC

    out = []
    for name in models.__all__:
        cls = getattr(models, name)
        if not inspect.isclass(cls) or not hasattr(cls, "predict") or "Regressor" in name:
            continue
        params = inspect.signature(cls).parameters
        kw = {"estimator": SVC()} if "estimator" in params else {}
        if "n_vectors" in params:
            kw["n_vectors"] = 3
        out.append(pytest.param(cls, kw, id=name))
    return out


@pytest.mark.parametrize("cls, kw", _classifiers())
@pytest.mark.parametrize("as_object", [False, True])
def test_labels_mixing_numbers_and_strings_get_sparsekms_type_error(cls, kw, as_object):
    X = np.random.default_rng(0).normal(size=(30, 3))
    y = [1, "a"] * 15  # a list: numpy would make it ['1', 'a'] and predict "1"
    if as_object:
        y = np.array(y, dtype=object)
    with pytest.raises(TypeError, match=r"labels in y mix types \(number 1 and string 'a'\)"):
        cls(**kw).fit(X, y)
    # one type is fine, numbers or strings
    cls(**kw).fit(X, np.array(["b", "a"] * 15, dtype=object))


def test_check_label_types_lets_homogeneous_labels_through():
    from sparsekm.utils.validation import check_label_types

    for y in ([1, 2, 3], np.arange(5), ["a", "b"], np.array(["a", 1.5], dtype=str),
              np.array([1, 2.5], dtype=object), [True, False], None):
        check_label_types(y)
    with pytest.raises(TypeError, match="bool True and string 'x'"):
        check_label_types(np.array([True, "x"], dtype=object))


# -- ONNX ------------------------------------------------------------------------------
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


@pytest.mark.parametrize("cls", [models.KernelPCA, models.RandomizedKernelPCA,
                                 __import__("sparsekm.approx", fromlist=["GreedyBasis"])
                                 .GreedyBasis], ids=lambda c: c.__name__)
def test_polars_output_is_refused_where_polars_is_missing(cls, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "polars" else real(name, *a))
    est = cls()
    with pytest.raises(ImportError, match=r"set_output\(transform='polars'\): polars is not "
                                          "installed"):
        est.set_output(transform="polars")
    assert est.set_output(transform="pandas") is est  # the other containers as before
    assert est.set_output(transform="default") is est
