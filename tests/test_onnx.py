"""ONNX export: parity in onnxruntime with sparsekm's own evaluation.

Labels must be identical; scores agree to 1e-4 relative (to the largest score) in
float32 and to 1e-10 in float64, for every exported model and every kernel.
"""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from sklearn.svm import SVC, SVR

import sparsekm
from sparsekm import RBF, InverseMultiquadric, KernelExpansion, Linear, Polynomial, Sigmoid
from sparsekm.models import (
    RSVM,
    SLMC,
    ApproxKFD,
    ApproxSVC,
    KernelFisherDiscriminant,
    KernelPCA,
    ModifiedRS,
    ModifiedRSVM,
    RandomizedKernelPCA,
    ReducedSetClassifier,
    ReducedSetRegressor,
    SparseKFD,
)

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from sparsekm.onnx_export import onnx_head, register_skl2onnx_converters, to_onnx  # noqa: E402

from .conftest import requires_usps  # noqa: E402


def _run(proto, X):
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"X": X}), strict=True))


def _check_scores(got, ref, dtype):
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == ref.shape
    scale = max(np.abs(ref).max(), 1e-300)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * scale)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    return X[:500], y[:500], X[500:800], y[500:800]


@pytest.fixture(scope="module")
def binary(digits):
    X, y, Xt, yt = digits
    keep, keep_t = np.isin(y, (3, 8)), np.isin(yt, (3, 8))
    return X[keep], y[keep], Xt[keep_t], yt[keep_t]


def _fitted_models(digits, binary):
    X, y, _, _ = digits
    Xb, yb, _, _ = binary
    svc = SVC(C=10, gamma=0.05)
    return {
        "rs-binary": ReducedSetClassifier(svc, n_vectors=8, random_state=0).fit(Xb, yb),
        "rs-ovr": ReducedSetClassifier(OneVsRestClassifier(svc), n_vectors=5, shared=False,
                                       random_state=0).fit(X, y),
        "rs-regressor": ReducedSetRegressor(SVR(C=10, gamma=0.05), n_vectors=10,
                                            random_state=0).fit(X, y.astype(float)),
        "slmc-binary": SLMC(n_vectors=6, kernel=RBF(0.05), random_state=0, max_iter=5)
        .fit(Xb, yb),
        "slmc-multi": SLMC(n_vectors=4, kernel=RBF(0.05), random_state=0, max_iter=10)
        .fit(X[y < 3], y[y < 3]),
        "sparse-kfd": SparseKFD(n_vectors=5, kernel=RBF(0.05), random_state=0, max_iter=5)
        .fit(Xb, yb),
        "mrs": ModifiedRS(n_vectors=5, kernel=RBF(0.05), random_state=0).fit(Xb, yb),
        "rsvm": RSVM(n_vectors=5, kernel=RBF(0.05), random_state=0).fit(Xb, yb),
        "mrsvm": ModifiedRSVM(n_vectors=5, kernel=RBF(0.05), random_state=0).fit(Xb, yb),
        "approx-svc": ApproxSVC(kernel=RBF(0.05), n_basis=20).fit(Xb, yb),
        "approx-kfd": ApproxKFD(kernel=RBF(0.05), n_basis=20).fit(Xb, yb),
        "kfd": KernelFisherDiscriminant(kernel=RBF(0.05)).fit(Xb, yb),
        "kpca": KernelPCA(n_components=4, kernel=RBF(0.05)).fit(X[:200]),
        "rkpca": RandomizedKernelPCA(n_components=3, kernel=RBF(0.05), random_state=0)
        .fit(X[:200]),
    }


@pytest.fixture(scope="module")
def models(digits, binary):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # short fits: parity, not convergence, is under test
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _fitted_models(digits, binary)


def _reference(model, X):
    if hasattr(model, "transform"):
        return None, model.transform(X)
    if hasattr(model, "classes_"):
        return model.predict(X), model.decision_function(X)
    return None, model.predict(X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("key", ["rs-binary", "rs-ovr", "rs-regressor", "slmc-binary",
                                 "slmc-multi", "sparse-kfd", "mrs", "rsvm", "mrsvm",
                                 "approx-svc", "approx-kfd", "kfd", "kpca", "rkpca"])
def test_model_parity(models, digits, key, dtype):
    model = models[key]
    Xt = digits[2] if key not in ("kfd",) else digits[2][:100]
    n_feat = model.n_features_in_
    Xt = Xt[:, :n_feat]
    out = _run(to_onnx(model, dtype=dtype), Xt.astype(dtype))
    labels, scores = _reference(model, Xt)
    _check_scores(out["scores"], scores, dtype)
    if labels is not None:
        np.testing.assert_array_equal(out["label"], labels)


KERNELS = [RBF(0.3), InverseMultiquadric(-0.5), InverseMultiquadric(-1.0),
           Polynomial(degree=3, coef0=1.0, gamma=0.5), Polynomial(degree=2),
           Sigmoid(kappa=0.1, theta=-0.2), Linear()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_expansion_parity_every_kernel(kernel, n_outputs, dtype):
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(30, 5))
    coef = rng.normal(size=(30,) if n_outputs == 1 else (30, n_outputs))
    b = 0.3 if n_outputs == 1 else rng.normal(size=n_outputs)
    psi = KernelExpansion(Z, coef, kernel, b)
    X = rng.normal(size=(40, 5))
    out = _run(to_onnx(psi, dtype=dtype), X.astype(dtype))
    assert list(out) == ["scores"]
    _check_scores(out["scores"], psi.decision_function(X), dtype)


def test_empty_expansion_is_its_intercept():
    psi = KernelExpansion(np.zeros((0, 3)), np.zeros(0), RBF(1.0), 0.25)
    out = _run(to_onnx(psi, dtype=np.float64), np.ones((4, 3)))
    np.testing.assert_array_equal(out["scores"], np.full(4, 0.25))


def _ovo_cases():
    from sklearn.multiclass import OneVsOneClassifier
    from sklearn.svm import NuSVC

    return {
        "svc-ovr": SVC(C=1.0, gamma=0.5),
        "svc-ovo": SVC(C=1.0, gamma=0.5, decision_function_shape="ovo"),
        "svc-break-ties": SVC(C=1.0, gamma=0.5, break_ties=True),
        "nusvc-ovr": NuSVC(nu=0.3, gamma=0.5),
        "svc-poly": SVC(kernel="poly", degree=3, coef0=1.0, gamma=0.2),
        "ovo-classifier": OneVsOneClassifier(SVC(C=1.0, gamma=0.5)),
    }


# not ``svc-poly`` in float32: cubic kernel values ~700 cancel in float32 (6e-4 relative;
# docs/onnx.md), so labels near the boundary may differ
@pytest.mark.parametrize("case, dtype", [
    (case, dtype) for case in _ovo_cases() for dtype in (np.float32, np.float64)
    if not (case == "svc-poly" and dtype == np.float32)])
def test_one_vs_one_matches_sklearn(case, dtype):
    """Exact one-vs-one models: ONNX labels equal scikit-learn's, scores its decision_function."""
    from sklearn.datasets import load_iris

    from sparsekm.multiclass import ExpansionClassifier

    X, y = load_iris(return_X_y=True)
    est = _ovo_cases()[case].fit(X, y)
    clf = ExpansionClassifier.from_estimator(est)
    out = _run(to_onnx(clf, dtype=dtype), X.astype(dtype))
    np.testing.assert_array_equal(out["label"], est.predict(X))
    _check_scores(out["scores"], est.decision_function(X), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reduced_one_vs_one(digits, dtype):
    X, y, Xt, _ = digits
    svc = SVC(C=10, gamma=0.05).fit(X, y)          # scikit-learn's default: one-vs-one
    small = ReducedSetClassifier(svc, n_vectors=30, random_state=0).fit(X, y)
    out = _run(to_onnx(small, dtype=dtype), Xt.astype(dtype))
    np.testing.assert_array_equal(out["label"], small.predict(Xt))
    _check_scores(out["scores"], small.decision_function(Xt), dtype)


def test_onnx_head_describes_models(models):
    assert onnx_head(models["rs-binary"])[1]["kind"] == "binary"
    assert onnx_head(models["rs-ovr"])[1]["kind"] == "ovr"
    assert onnx_head(models["kpca"])[1] == {"kind": "scores"}


def test_unsupported_kernel_and_models_are_refused():
    from sparsekm.approx import ProjectedKernel, RandomProjection

    pk = ProjectedKernel(RBF(1.0), RandomProjection(3, 2, random_state=0))
    psi = KernelExpansion(np.ones((2, 3)), [1.0, 2.0], pk)
    with pytest.raises(TypeError, match="ProjectedKernel.*no ONNX form"):
        to_onnx(psi)
    with pytest.raises(TypeError, match="cannot be exported"):
        to_onnx(StandardScaler().fit(np.ones((3, 2))))
    with pytest.raises(ValueError, match="not fitted"):
        to_onnx(SLMC())
    with pytest.raises(ValueError, match="float32 or float64"):
        to_onnx(KernelExpansion(np.ones((1, 2)), [1.0], RBF(1.0)), dtype=np.int32)
    with pytest.raises(ValueError, match="X_sample has 3 features"):
        to_onnx(KernelExpansion(np.ones((1, 2)), [1.0], RBF(1.0)), X_sample=np.ones((1, 3)))


def test_string_labels(binary):
    X, y, Xt, _ = binary
    names = np.where(y == 3, "three", "eight")
    clf = ReducedSetClassifier(SVC(C=10, gamma=0.05), n_vectors=6, random_state=0).fit(X, names)
    out = _run(to_onnx(clf), Xt.astype(np.float32))
    np.testing.assert_array_equal(out["label"].astype(str), clf.predict(Xt))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pre", [StandardScaler(), MinMaxScaler(), PCA(n_components=20,
                                                                      random_state=0)],
                         ids=lambda p: type(p).__name__)
def test_pipeline_through_skl2onnx(digits, pre, dtype):
    skl2onnx = pytest.importorskip("skl2onnx")
    X, y, Xt, _ = digits
    pipe = Pipeline([("pre", pre), ("rs", ReducedSetClassifier(SVC(C=10), n_vectors=4,
                                                                 random_state=0))]).fit(X, y)
    register_skl2onnx_converters()
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    ttype = DoubleTensorType if dtype == np.float64 else FloatTensorType
    proto = skl2onnx.to_onnx(pipe, initial_types=[("X", ttype([None, X.shape[1]]))])
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    label, scores = sess.run(None, {"X": Xt.astype(dtype)})
    np.testing.assert_array_equal(label, pipe.predict(Xt))
    _check_scores(scores, pipe.decision_function(Xt), dtype)
    # sparsekm.to_onnx hands a Pipeline to skl2onnx with the converters registered
    again = _run(sparsekm.to_onnx(pipe, X_sample=Xt, dtype=dtype), Xt.astype(dtype))
    np.testing.assert_array_equal(again["label"], pipe.predict(Xt))


def test_pipeline_transformer_and_regressor(digits):
    pytest.importorskip("skl2onnx")
    X, y, Xt, _ = digits
    pipe = Pipeline([("sc", StandardScaler()), ("kpca", KernelPCA(n_components=3,
                                                                  kernel=RBF(0.01)))]).fit(X)
    out = sparsekm.to_onnx(pipe, X_sample=Xt, dtype=np.float64)
    sess = ort.InferenceSession(out.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"X": Xt})
    _check_scores(got, pipe.transform(Xt), np.float64)
    reg = Pipeline([("sc", StandardScaler()),
                    ("rs", ReducedSetRegressor(SVR(C=10, gamma=0.01), n_vectors=6,
                                               random_state=0))]).fit(X, y.astype(float))
    out = sparsekm.to_onnx(reg, X_sample=Xt, dtype=np.float64)
    sess = ort.InferenceSession(out.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"X": Xt})
    _check_scores(np.ravel(got), reg.predict(Xt), np.float64)


def test_loaded_model_exports_the_same_graph(models, tmp_path):
    for key in ("rs-ovr", "slmc-binary", "kpca"):
        path = tmp_path / f"{key}.skm"
        sparsekm.save(models[key], path)
        loaded = sparsekm.load(path)
        a = to_onnx(models[key]).SerializeToString()
        b = to_onnx(loaded).SerializeToString()
        assert a == b


def test_cli_export(models, digits, tmp_path):
    from sparsekm.cli import main

    path = tmp_path / "m.skm"
    sparsekm.save(models["rs-ovr"], path)
    onnx_path = tmp_path / "m.onnx"
    assert main(["export", str(path), "-o", str(onnx_path), "--float64"]) == 0
    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    label, scores = sess.run(None, {"X": digits[2]})
    np.testing.assert_array_equal(label, models["rs-ovr"].predict(digits[2]))
    _check_scores(scores, models["rs-ovr"].decision_function(digits[2]), np.float64)


@requires_usps
@pytest.mark.data
def test_usps_parity():
    from sparsekm.datasets import load_usps

    X, y, Xt, yt = load_usps()
    clf = ReducedSetClassifier(SVC(C=10, gamma=1 / 128), n_vectors=10, random_state=0,
                               n_init=1).fit(X[:2000], y[:2000])
    for dtype in (np.float32, np.float64):
        out = _run(to_onnx(clf, dtype=dtype), Xt.astype(dtype))
        ref = clf.decision_function(Xt)
        _check_scores(out["scores"], ref, dtype)
        np.testing.assert_array_equal(out["label"], clf.predict(Xt))


# -- issue 26: scikit-learn's Nystroem and RBFSampler (no skl2onnx converter of their own)
def _peer_pipelines(X, y):
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    return {
        "nystroem-rbf+linearsvc": Pipeline([
            ("ny", Nystroem(gamma=0.05, n_components=60, random_state=0)),
            ("svm", LinearSVC(C=1.0))]).fit(X, y),
        "nystroem-poly+linearsvc": Pipeline([
            ("sc", StandardScaler()),
            ("ny", Nystroem(kernel="poly", degree=2, n_components=40, random_state=0)),
            ("svm", LinearSVC(C=0.1))]).fit(X, y),
        "rbfsampler+logreg": Pipeline([
            ("rff", RBFSampler(gamma=0.05, n_components=100, random_state=0)),
            ("lr", LogisticRegression(max_iter=2000))]).fit(X, y),
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_peer_pipelines_with_nystroem_and_rbf_sampler_export(digits, dtype):
    skl2onnx = pytest.importorskip("skl2onnx")
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType
    from sklearn.linear_model import LogisticRegression

    X, y, Xt, _ = digits
    register_skl2onnx_converters()
    ttype = DoubleTensorType if dtype == np.float64 else FloatTensorType
    types = [("X", ttype([None, X.shape[1]]))]
    for name, pipe in _peer_pipelines(X, y).items():
        logreg = isinstance(pipe[-1], LogisticRegression)
        # skl2onnx alone: a probability tensor (not zipmap) for the logistic regression;
        # raw scores for LinearSVC (its float64 conversion needs them; and without an
        # option of its own skl2onnx 1.20 adds zipmap, which LinearSVC refuses)
        proto = skl2onnx.to_onnx(pipe, initial_types=types, options={
            id(pipe[-1]): {"zipmap": False} if logreg else {"raw_scores": True}})
        sess = ort.InferenceSession(proto.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        label, scores = sess.run(None, {"X": Xt.astype(dtype)})
        np.testing.assert_array_equal(label, pipe.predict(Xt), err_msg=name)
        ref = pipe.predict_proba(Xt) if logreg else pipe.decision_function(Xt)
        _check_scores(scores, ref, dtype)
        # the features alone (Nystroem / RBFSampler, after the scaler if any)
        features = pipe[:-1]
        (got,) = _run(skl2onnx.to_onnx(features, initial_types=types), Xt.astype(dtype)).values()
        _check_scores(got, features.transform(Xt), dtype)
    # and through sparsekm.to_onnx, which registers the converters and sets those options
    for name, pipe in _peer_pipelines(X, y).items():
        out = list(_run(sparsekm.to_onnx(pipe, X_sample=Xt, dtype=dtype),
                        Xt.astype(dtype)).values())
        np.testing.assert_array_equal(out[0], pipe.predict(Xt), err_msg=name)
        ref = (pipe.predict_proba(Xt) if name.startswith("rbfsampler")
               else pipe.decision_function(Xt))
        _check_scores(out[1], ref, dtype)


def test_nystroem_kernels_without_onnx_form_are_refused(digits):
    pytest.importorskip("skl2onnx")
    from sklearn.kernel_approximation import Nystroem

    X, y, _, _ = digits
    from sklearn.svm import LinearSVC

    pipe = Pipeline([("ny", Nystroem(kernel="laplacian", n_components=10, random_state=0)),
                     ("svm", LinearSVC())]).fit(X, y)
    with pytest.raises(TypeError, match="Nystroem.*laplacian.*no ONNX form"):
        sparsekm.to_onnx(pipe, X_sample=X[:2])


def test_install_hint_names_the_checkout_form(monkeypatch):
    import sys

    from sparsekm import onnx_export

    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError) as exc:
        onnx_export._import_onnx()
    assert "pip install 'sparsekm[onnx]'" in str(exc.value)
    assert "pip install '.[onnx]'" in str(exc.value)


def test_pipeline_with_a_compressed_classifier_exports_to_onnx():
    """The classifier compress returns, put back into its scaler's pipeline, had no
    skl2onnx converter ('no corresponding converter'); it exports like its base class."""
    pytest.importorskip("skl2onnx")
    ort = pytest.importorskip("onnxruntime")
    from sklearn.datasets import make_blobs
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from sparsekm.onnx_export import to_onnx

    X, y = make_blobs(300, centers=3, cluster_std=2.0, random_state=1)
    scaler = StandardScaler().fit(X[:100])
    Z = scaler.transform(X)
    small = sparsekm.compress(SVC(gamma=0.2).fit(Z[:100], y[:100]), Z[100:200], y[100:200],
                              n_vectors=6, method="construct", random_state=0, n_init=2,
                              max_iter=50)
    pipe = Pipeline([("scale", scaler), ("small", small)])
    proto = to_onnx(pipe, X[:5], dtype="float64")
    sess = ort.InferenceSession(proto.SerializeToString())
    labels = sess.run(None, {"X": X[200:]})[0]
    np.testing.assert_array_equal(np.ravel(labels), pipe.predict(X[200:]))
