"""C export: the generated C99, compiled with the system compiler, against Python.

Parity is checked on 1,000 rows (digits rows 797..1796, never seen in training):

* against the *deployed* model (:func:`sparsekm.c_export.deployed_model`: the same
  stored numbers evaluated in float64 by sparsekm): labels identical and decision
  values within ``1e-6 * max(1, max |f|)`` for every precision (C computes in
  double and rounds its outputs to float);
* against the original model: labels identical and decision values within
  ``1e-5 * max(1, max |f|)`` for float32 storage; for float16/int8 storage the
  error is the storage's, bounded in tests/test_quantize.py.

The tests skip, saying why, only where no C compiler exists.
"""

import shutil
import subprocess

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from sklearn.svm import SVC

from sparsekm import RBF, InverseMultiquadric, KernelExpansion, Linear, Polynomial, Sigmoid
from sparsekm.c_export import c_driver_source, c_parts, deployed_model, export_c, to_c
from sparsekm.multiclass import ExpansionClassifier

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc, gcc or clang) on PATH: "
                                                "the generated C cannot be compiled here")
FLAGS = ["-std=c99", "-Wall", "-Werror", "-O2"]
TOL_DEPLOYED = 1e-6
TOL_FLOAT32 = 1e-5


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32).astype(np.float64)  # rows C reads exactly
    return X[:300], y[:300], X[797:1797], y[797:1797]


def build(model, tmp_path, *, precision="float32", scales="per-vector", name="model",
          flags=FLAGS):
    src, h = export_c(model, tmp_path / f"{name}.c", name=name, precision=precision,
                      scales=scales)
    drv = tmp_path / "driver.c"
    drv.write_text(c_driver_source(h.name, name))
    exe = tmp_path / f"{name}_driver"
    res = subprocess.run([CC, *flags, "-o", str(exe), str(drv), str(src), "-lm"],
                         capture_output=True, text=True)
    assert res.returncode == 0, f"compilation failed:\n{res.stderr[:4000]}"
    return exe


def run_c(exe, X, tmp_path):
    rows = tmp_path / "rows.txt"
    with open(rows, "w") as fh:
        fh.write(f"{len(X)}\n")
        np.savetxt(fh, np.asarray(X, dtype=np.float32), fmt="%.9g")
    res = subprocess.run([str(exe), str(rows)], capture_output=True, text=True, check=True)
    A = np.loadtxt(res.stdout.splitlines(), ndmin=2)
    return A[:, 0].astype(int), A[:, 1:]


def _as_columns(f):
    f = np.asarray(f, dtype=np.float64)
    return f[:, None] if f.ndim == 1 else f


def check_parity(model, X, tmp_path, precision="float32", scales="per-vector", **kw):
    exe = build(model, tmp_path, precision=precision, scales=scales, **kw)
    idx, dec = run_c(exe, X, tmp_path)
    ref = deployed_model(model, precision, scales=scales)
    f_ref = _as_columns(ref.decision_function(X))
    assert dec.shape == f_ref.shape
    np.testing.assert_allclose(dec, f_ref, rtol=0,
                               atol=TOL_DEPLOYED * max(1.0, np.abs(f_ref).max()))
    if hasattr(ref, "predict"):
        classes = ref.classes_ if hasattr(ref, "classes_") else ref[-1].classes_
        np.testing.assert_array_equal(np.asarray(classes)[idx], ref.predict(X))
    return idx, dec


def check_original(model, X, idx, dec):
    """float32 storage against the original model: labels identical, values close."""
    f = _as_columns(model.decision_function(X))
    np.testing.assert_allclose(dec, f, rtol=0, atol=TOL_FLOAT32 * max(1.0, np.abs(f).max()))
    np.testing.assert_array_equal(model.classes_[idx], model.predict(X))


@needs_cc
def test_binary_svc_rbf(digits, tmp_path):
    X, y, Xt, _ = digits
    svc = SVC(gamma=0.5).fit(X, y >= 5)
    idx, dec = check_parity(svc, Xt, tmp_path)
    assert dec.shape == (1000, 1)
    check_original(svc, Xt, idx, dec)
    assert 0 < idx.mean() < 1  # both classes predicted


@needs_cc
def test_ovr_polynomial(digits, tmp_path):
    X, y, Xt, _ = digits
    ovr = OneVsRestClassifier(SVC(kernel="poly", degree=3, gamma=0.3, coef0=1.0)).fit(X, y)
    idx, dec = check_parity(ovr, Xt, tmp_path)
    assert dec.shape == (1000, 10)
    check_original(ovr, Xt, idx, dec)


@needs_cc
@pytest.mark.parametrize("shape,break_ties", [("ovr", False), ("ovr", True), ("ovo", False)])
def test_ovo_svc_sigmoid(digits, tmp_path, shape, break_ties):
    X, y, Xt, _ = digits
    svc = SVC(kernel="sigmoid", gamma=0.05, coef0=-1.0, C=10.0, decision_function_shape=shape,
              break_ties=break_ties).fit(X, y)
    idx, dec = check_parity(svc, Xt, tmp_path)
    assert dec.shape == (1000, 10 if shape == "ovr" else 45)
    check_original(svc, Xt, idx, dec)


@needs_cc
def test_ovo_classifier_linear(digits, tmp_path):
    X, y, Xt, _ = digits
    ovo = OneVsOneClassifier(SVC(kernel="linear", C=0.1)).fit(X, y)
    idx, dec = check_parity(ovo, Xt, tmp_path)
    check_original(ovo, Xt, idx, dec)


def _tie_classifier(**kw):
    """Three classes, Linear kernel, dyadic numbers: exact in C and in numpy.

    Pairwise values (0,1), (0,2), (1,2) for x = (a, b): (a, -a, b) + intercepts.
    x = (1, 1): votes 0, 2, 1 -> each class one vote (a three-way tie);
    x = (0, 0): every f is exactly 0 (the tie rules at f = 0).
    """
    psi = KernelExpansion([[1.0, 0.0], [0.0, 1.0]], [[1.0, -1.0, 0.0], [0.0, 0.0, 1.0]],
                          Linear(), [0.0, 0.0, 0.0])
    return ExpansionClassifier(psi, classes=np.array(["a", "b", "c"]), scheme="ovo", **kw)


@needs_cc
@pytest.mark.parametrize("kw", [{}, {"break_ties": True}, {"decision_function_shape": "ovo"},
                                {"vote": "ovo-classifier"}])
def test_ovo_ties(tmp_path, kw):
    clf = _tie_classifier(**kw)
    X = np.array([[1.0, 1.0], [0.0, 0.0], [-1.0, 0.5], [0.5, -0.25], [0.0, 2.0], [-2.0, 0.0],
                  [2.0, 0.0], [0.0, -1.0]])
    idx, dec = check_parity(clf, X, tmp_path)
    np.testing.assert_array_equal(clf.classes_[idx], clf.predict(X))  # exact ties included
    # the same double operations, rounded to float by model_decision
    np.testing.assert_array_equal(dec.astype(np.float32),
                                  _as_columns(clf.decision_function(X)).astype(np.float32))
    # the rules themselves: a three-way vote tie goes to the lowest index without
    # break_ties; at f = 0 libsvm votes for the pair's second class
    if not kw:
        assert list(idx[:2]) == [0, 2]


@needs_cc
def test_scaler_pipeline(digits, tmp_path):
    X, y, Xt, _ = digits
    pipe = Pipeline([("std", StandardScaler()), ("mm", MinMaxScaler((-1, 1))),
                     ("svc", SVC(gamma=0.01))]).fit(X, y)
    idx, dec = check_parity(pipe, Xt, tmp_path)
    check_original(pipe, Xt, idx, dec)
    pipe2 = Pipeline([("std", StandardScaler(with_mean=False)), ("none", "passthrough"),
                      ("svc", SVC(gamma=0.01))]).fit(X, y)
    idx, dec = check_parity(pipe2, Xt, tmp_path)
    check_original(pipe2, Xt, idx, dec)


@needs_cc
@pytest.mark.parametrize("kernel", [RBF(0.7), Polynomial(3, 1.0, 0.2), Sigmoid(0.05, -0.5),
                                    Linear(), InverseMultiquadric(-0.5)])
@pytest.mark.parametrize("precision", ["float32", "float16", "int8"])
def test_each_kernel_expansion(digits, tmp_path, kernel, precision):
    X, _, Xt, _ = digits
    rng = np.random.default_rng(0)
    psi = KernelExpansion(X[:40] - 0.25, rng.standard_normal((40, 2)), kernel, [0.25, -0.5])
    _, dec = check_parity(psi, Xt, tmp_path, precision=precision)
    if precision != "float32":
        return
    f = psi.decision_function(Xt)
    np.testing.assert_allclose(dec, f, rtol=0, atol=TOL_FLOAT32 * np.abs(f).max())


@needs_cc
@pytest.mark.parametrize("n", [1, 31, 32, 33, 64, 97])
@pytest.mark.parametrize("precision,scales", [("float32", "per-vector"), ("float16", "per-vector"),
                                              ("int8", "per-vector"), ("int8", "per-feature")])
def test_vector_blocks(digits, tmp_path, n, precision, scales):
    """The C code reads the vectors in blocks of 32 (the last one shorter), each laid
    out feature-major: every vector, coefficient and scale must still meet its own
    term, whatever n (a misplaced one moves the values by far more than 1e-6). Blocks of
    at most 8 vectors split the sum over the features in 4 (odd n: 61 features, so a
    remainder)."""
    X, _, Xt, _ = digits
    d = 61 if n % 2 else 64
    X, Xt = X[:, :d], Xt[:, :d]
    rng = np.random.default_rng(n)
    Z = X[rng.choice(len(X), n, replace=False)] + 0.1 * rng.standard_normal((n, d))
    for kernel in (RBF(0.05), Linear()):
        psi = KernelExpansion(Z, rng.standard_normal((n, 3)), kernel, [0.5, -0.25, 0.0])
        check_parity(psi, Xt[:100], tmp_path, precision=precision, scales=scales)


@needs_cc
@pytest.mark.parametrize("precision,scales", [("float32", "per-vector"), ("float16", "per-vector"),
                                              ("int8", "per-vector"), ("int8", "per-feature")])
def test_no_simd_loops(digits, tmp_path, precision, scales):
    """``-DMODEL_NO_SIMD`` reads the same blocks one vector at a time: the same values
    (97 vectors over 61 features: full, power-of-two and remainder parts; 5 over 3)."""
    X, _, Xt, _ = digits
    rng = np.random.default_rng(1)
    for n, d in ((97, 61), (5, 3)):
        Z = X[rng.choice(len(X), n, replace=False), :d] + 0.1 * rng.standard_normal((n, d))
        for kernel in (RBF(0.05), Linear()):
            psi = KernelExpansion(Z, rng.standard_normal((n, 2)), kernel, [0.5, -0.25])
            check_parity(psi, Xt[:100, :d], tmp_path, precision=precision, scales=scales,
                         flags=FLAGS + ["-DMODEL_NO_SIMD"])


@needs_cc
@pytest.mark.parametrize("precision,scales", [("float16", "per-vector"), ("int8", "per-vector"),
                                              ("int8", "per-feature")])
def test_quantized_storage(digits, tmp_path, precision, scales):
    X, y, Xt, _ = digits
    svc = SVC(gamma=0.5).fit(X, y)
    idx, _ = check_parity(svc, Xt, tmp_path, precision=precision, scales=scales)
    # storage costs little here: at most 1 % of the labels change against the original
    assert np.mean(svc.classes_[idx] != svc.predict(Xt)) <= 0.01


@needs_cc
def test_empty_expansion_and_name(tmp_path):
    psi = KernelExpansion(np.zeros((0, 3)), np.zeros(0), RBF(1.0), 0.75)
    X = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    _, dec = check_parity(psi, X, tmp_path, name="R")  # a one-letter prefix: header R.h
    np.testing.assert_array_equal(dec, [[0.75], [0.75]])


@needs_cc
def test_sanitizers(digits, tmp_path):
    probe = tmp_path / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    flags = ["-std=c99", "-Wall", "-Werror", "-O1", "-g", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=all"]
    res = subprocess.run([CC, *flags, "-o", str(tmp_path / "probe"), str(probe)],
                         capture_output=True, text=True)
    if res.returncode != 0 or subprocess.run([str(tmp_path / "probe")]).returncode != 0:
        pytest.skip(f"{CC} cannot build or run with -fsanitize=address,undefined here")
    X, y, Xt, _ = digits
    svc = SVC(gamma=0.5, break_ties=True).fit(X, y)
    for precision in ("float16", "int8"):
        check_parity(svc, Xt[:200], tmp_path, precision=precision, flags=flags)
        check_parity(svc, Xt[:200], tmp_path, precision=precision,
                     flags=flags + ["-DMODEL_NO_SIMD"])
    pipe = Pipeline([("s", StandardScaler()), ("c", OneVsRestClassifier(SVC()))]).fit(X, y)
    check_parity(pipe, Xt[:200], tmp_path, flags=flags)


# -- refusals (no compiler needed) ---------------------------------------------------
def test_refusals(digits):
    X, y, _, _ = digits
    svc = SVC().fit(X[:100], y[:100])
    with pytest.raises(TypeError, match="PCA.*no C form"):
        to_c(Pipeline([("pca", PCA(5)), ("svc", SVC())]).fit(X[:100], y[:100]))
    with pytest.raises(TypeError, match="clip"):
        to_c(Pipeline([("mm", MinMaxScaler(clip=True)), ("svc", SVC())]).fit(X[:100], y[:100]))
    from sparsekm.kernels import ProjectedKernel, RandomProjection

    proj = ProjectedKernel(RBF(1.0), RandomProjection(64, 8, random_state=0))
    with pytest.raises(TypeError, match="no C form"):
        to_c(KernelExpansion(X[:5], np.ones(5), proj))
    with pytest.raises(TypeError, match="cannot be exported to C"):
        to_c(StandardScaler().fit(X))
    for bad in ("1model", "my-model", "int", "", "__x"):
        with pytest.raises(ValueError, match="valid C identifier"):
            to_c(svc, name=bad)
    with pytest.raises(ValueError, match="precision"):
        to_c(svc, precision="int4")
    with pytest.raises(ValueError, match="scales"):
        to_c(svc, precision="int8", scales="per-row")
    with pytest.raises(ValueError, match="float16 range"):
        to_c(KernelExpansion([[1e6, 0.0]], [1.0], RBF(1.0)), precision="float16")


def test_header_interface(digits):
    X, y, _, _ = digits
    src, h = to_c(SVC().fit(X[:100], y[:100]), name="digits_svm")
    for line in ("#define DIGITS_SVM_N_FEATURES 64", "#define DIGITS_SVM_N_OUTPUTS 10",
                 "#define DIGITS_SVM_N_CLASSES 10",
                 "extern const char *const digits_svm_classes[DIGITS_SVM_N_CLASSES];",
                 "int digits_svm_predict(const float *x);",
                 "void digits_svm_decision(const float *x, float *out);"):
        assert line in h
    includes = [ln for ln in src.splitlines() if ln.startswith("#include")]
    assert includes == ["#include <math.h>", '#include "digits_svm.h"']
    assert "malloc" not in src and '"0", "1", "2"' in src
    assert c_parts(SVC().fit(X[:100], y[:100])).n_decision == 10


@needs_cc
def test_cli_export_c(digits, tmp_path, capsys):
    import sparsekm
    from sparsekm.cli import main

    X, y, Xt, _ = digits
    svc = SVC(gamma=0.01).fit(X * 16, y)
    pipe = Pipeline([("s", StandardScaler().fit(X * 16)),
                     ("clf", ExpansionClassifier.from_estimator(svc))])
    sparsekm.save(pipe, tmp_path / "pipe.skm")
    out = tmp_path / "edge.c"
    assert main(["export", str(tmp_path / "pipe.skm"), "--format", "c", "-o", str(out),
                 "--name", "edge", "--precision", "int8"]) == 0
    assert "edge_predict" in capsys.readouterr().out
    assert (tmp_path / "edge.h").exists()
    drv = tmp_path / "driver.c"
    drv.write_text(c_driver_source("edge.h", "edge"))
    exe = tmp_path / "drv"
    subprocess.run([CC, *FLAGS, "-o", str(exe), str(drv), str(out), "-lm"], check=True)
    idx, _ = run_c(exe, Xt * 16, tmp_path)
    ref = deployed_model(sparsekm.load(tmp_path / "pipe.skm"), "int8")
    np.testing.assert_array_equal(svc.classes_[idx], ref.predict(Xt * 16))
    with pytest.raises(SystemExit):
        main(["export", str(tmp_path / "pipe.skm"), "--format", "c", "-o", str(out),
              "--precision", "int4"])


@needs_cc
def test_float16_bits_convert_exactly(tmp_path):
    """C's half -> float of 512 values (subnormals, extremes, signs) is exact:
    with one vector z, the linear kernel and x = e_i, f(e_i) = z_i."""
    rng = np.random.default_rng(3)
    special = np.array([0.0, -0.0, 2.0 ** -24, -(2.0 ** -24), 2.0 ** -14, 6.1e-5, 65504.0,
                        -65504.0, 1.0, -1.0, 0.333, 1e-6, -3e-7], dtype=np.float16)
    bits = rng.integers(0, 0x7c00, 512 - special.size, dtype=np.uint16)  # finite, positive
    bits[::2] |= 0x8000
    z = np.concatenate([special, bits.view(np.float16)]).astype(np.float64)
    psi = KernelExpansion(z[None, :], [1.0], Linear())
    _, dec = check_parity(psi, np.eye(z.size), tmp_path, precision="float16")
    np.testing.assert_array_equal(dec[:, 0].astype(np.float32), z.astype(np.float32))


@needs_cc
def test_regressor_decision_only(digits, tmp_path):
    from sklearn.svm import SVR

    X, y, Xt, _ = digits
    svr = SVR(gamma=0.1, C=10.0).fit(X, y.astype(float))
    src, h = to_c(svr)
    assert "model_predict" not in h and "MODEL_N_CLASSES" not in h
    idx, dec = check_parity(svr, Xt, tmp_path)
    assert (idx == -1).all()  # the driver prints -1 without a predict function
    f = svr.predict(Xt)
    np.testing.assert_allclose(dec[:, 0], f, rtol=0, atol=TOL_FLOAT32 * np.abs(f).max())


def _sparsekm_models(X, y):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import SVR

    from sparsekm.models import (
        SLMC,
        ApproxSVC,
        KernelFisherDiscriminant,
        KernelPCA,
        ReducedSetClassifier,
        ReducedSetRegressor,
    )

    b = np.isin(y, (3, 8))
    svc = SVC(C=10, gamma=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return {
            "rs-binary": ReducedSetClassifier(svc, n_vectors=8, random_state=0).fit(X[b], y[b]),
            "rs-ovo": ReducedSetClassifier(svc, n_vectors=12, random_state=0).fit(X, y),
            "rs-regressor": ReducedSetRegressor(SVR(C=10, gamma=0.05), n_vectors=10,
                                                random_state=0).fit(X, y.astype(float)),
            "slmc-multi": SLMC(n_vectors=4, kernel=RBF(0.05), random_state=0, max_iter=10)
            .fit(X[y < 3], y[y < 3]),
            "approx-svc": ApproxSVC(kernel=RBF(0.05), n_basis=20).fit(X[b], y[b]),
            "kfd": KernelFisherDiscriminant(kernel=RBF(0.05)).fit(X[b], y[b]),
            "kpca": KernelPCA(n_components=4, kernel=RBF(0.05)).fit(X[:200]),
        }


@needs_cc
def test_sparsekm_models(digits, tmp_path):
    """Every kind of expansion-based sparsekm model: C against the model's own outputs."""
    X, y, Xt, _ = digits
    for name, model in _sparsekm_models(X, y).items():
        sub = tmp_path / name
        sub.mkdir()
        idx, dec = check_parity(model, Xt[:300], sub)
        if hasattr(model, "transform"):
            f, labels = model.transform(Xt[:300]), None
        elif hasattr(model, "classes_"):
            f, labels = model.decision_function(Xt[:300]), model.predict(Xt[:300])
        else:
            f, labels = model.predict(Xt[:300]), None
        f = _as_columns(f)
        np.testing.assert_allclose(dec, f, rtol=0, atol=TOL_FLOAT32 * max(1.0, np.abs(f).max()),
                                   err_msg=name)
        if labels is not None:
            np.testing.assert_array_equal(model.classes_[idx], labels, err_msg=name)
