"""Quantized storage: the rounding identities and the decision-value bound they imply."""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from sparsekm import RBF, KernelExpansion, Linear
from sparsekm.quantize import quantization_error, quantize_expansion, storage_bytes


@pytest.fixture(scope="module")
def psi():
    X, _ = load_digits(return_X_y=True)
    X = X / 16.0 - 0.3  # signed entries, some features constant
    rng = np.random.default_rng(1)
    coef = rng.standard_normal((60, 3))
    return KernelExpansion(X[:60], coef, RBF(0.05), [0.1, -0.2, 0.3]), X[100:600]


@pytest.mark.parametrize("scales", ["per-vector", "per-feature"])
def test_int8_rounding_identity(psi, scales):
    psi, _ = psi
    q = quantize_expansion(psi, "int8", scales=scales)
    Z = psi.vectors
    s = q.scale.astype(np.float64)
    s_b = s[:, None] if scales == "per-vector" else s[None, :]
    # the stored numbers: integers in [-127, 127] times float32 scales
    assert q.codes.dtype == np.int8 and np.abs(q.codes.astype(int)).max() == 127
    np.testing.assert_array_equal(q.expansion.vectors, q.codes.astype(np.float64) * s_b)
    # |z - s q| <= s / 2 for every entry (round to nearest), up to float64 rounding
    err = np.abs(Z - q.expansion.vectors)
    assert np.all(err <= s_b / 2 * (1 + 1e-12))
    # the scale is max |z| / 127 (to float32 rounding) where the row/column is not all zero
    amax = np.abs(Z).max(axis=1 if scales == "per-vector" else 0)
    nz = amax > 0
    np.testing.assert_allclose(s[nz], amax[nz] / 127, rtol=2 ** -24)
    assert np.all(s[~nz] == 1.0)


@pytest.mark.parametrize("precision,scales", [("int8", "per-vector"), ("int8", "per-feature"),
                                              ("float16", "per-vector")])
def test_rbf_decision_error_bound(psi, precision, scales):
    """|f'(x) - f(x)| <= sum_j |c'_j| L ||z'_j - z_j|| + sum_j |c'_j - c_j| + |b' - b|,
    L = sqrt(2 gamma / e) the Lipschitz constant of exp(-gamma ||x - z||^2) in z."""
    psi, X = psi
    q = quantize_expansion(psi, precision, scales=scales)
    qe = q.expansion
    L = np.sqrt(2 * psi.kernel.gamma / np.e)
    dz = np.linalg.norm(qe.vectors - psi.vectors, axis=1)
    bound = (np.abs(qe.coef) * (L * dz)[:, None]).sum(axis=0) \
        + np.abs(qe.coef - psi.coef).sum(axis=0) + np.abs(qe.intercept - psi.intercept)
    diff = np.abs(qe.decision_function(X) - psi.decision_function(X))
    assert np.all(diff <= bound * (1 + 1e-9) + 1e-12)
    err = quantization_error(psi, q, X)
    assert err["max_abs"] == pytest.approx(diff.max())
    assert err["max_abs"] <= bound.max()
    assert 0 < err["mean_abs"] <= err["max_abs"]


def test_float_formats_relative_error(psi):
    psi, _ = psi
    Z = psi.vectors
    for precision, u in (("float32", 2.0 ** -24), ("float16", 2.0 ** -11)):
        qe = quantize_expansion(psi, precision).expansion
        big = np.abs(Z) >= 2.0 ** -14  # float16's normal range
        np.testing.assert_array_less(np.abs(qe.vectors - Z)[big], u * np.abs(Z)[big] * 1.0001)


def test_storage_bytes_match_the_arrays(psi):
    psi, _ = psi
    for precision in ("float32", "float16", "int8"):
        for scales in ("per-vector", "per-feature"):
            q = quantize_expansion(psi, precision, scales=scales)
            assert q.nbytes == storage_bytes(60, 64, 3, precision, scales)
    assert storage_bytes(10, 256, 1, "int8") == {"vectors": 2560, "scales": 40, "coef": 40,
                                                 "intercept": 4}


def test_single_output_and_refusals():
    psi = KernelExpansion([[1.0, -2.0], [0.0, 0.0]], [0.5, 1.5], Linear(), 0.25)
    q = quantize_expansion(psi, "int8")
    assert q.expansion.coef.shape == (2,) and q.expansion.intercept == 0.25
    np.testing.assert_array_equal(q.codes, [[64, -127], [0, 0]])
    with pytest.raises(ValueError, match="precision"):
        quantize_expansion(psi, "bfloat16")
    with pytest.raises(TypeError, match="KernelExpansion"):
        quantize_expansion(np.ones((2, 2)))
    with pytest.raises(ValueError, match="float32"):
        quantize_expansion(KernelExpansion([[1.0]], [1e300], Linear()))
