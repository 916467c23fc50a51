"""Noise-matched eigen-solves on sampled Gram matrices (issue 7, benchmark follow-up).

Error-norm estimate from K_hat alone, Theorem 2 for inexact eigenvectors, the a
posteriori Davis–Kahan bound, shifted / noise-matched orthogonal iteration and the
threaded CSR product.
"""

import math

import numpy as np
import pytest
import scipy.sparse

from sparsekm.approx.randomized import (
    ThreadedCSROperator,
    davis_kahan_residual_bound,
    estimate_error_norm,
    gram_error_norm,
    orthogonal_iteration,
    quantize_gram,
    sparsify_gram,
    sparsify_quantize_gram,
    subspace_distance,
    theorem2_bound,
    theorem2_bound_inexact,
)
from sparsekm.kernels import RBF


def _clusters(n_per=120, seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(size=(n_per, 3)) * 0.3 + 4 * i for i in range(3)])


def _top(A, ell):
    w, V = np.linalg.eigh(A)
    return w[::-1][: ell + 1], V[:, ::-1][:, :ell]


def test_estimate_error_norm_row_variances_are_unbiased():
    X = _clusters(60)
    k, s = RBF(0.5), 4.0
    K = k(X)
    target = (s - 1) * (K**2).sum(axis=1)  # sum_j Var(E_ij)
    est = np.mean([(s - 1) / s * np.asarray(
        sparsify_gram(X, k, s, random_state=seed).power(2).sum(axis=1)).ravel()
        for seed in range(300)], axis=0)
    # 300 draws: each row sum has relative standard error below 5 %.
    np.testing.assert_allclose(est, target, rtol=0.12)


def test_estimate_error_norm_values_and_scale():
    X = _clusters(150)
    k, s = RBF(0.5), 5.0
    K = k(X)
    m = X.shape[0]
    K_hat = sparsify_gram(X, k, s, random_state=0)
    row = (s - 1) / s * np.asarray(K_hat.power(2).sum(axis=1)).ravel()
    est = estimate_error_norm(K_hat, "sparsify", s=s)
    assert est == pytest.approx(2 * math.sqrt(row.max()))
    measured = gram_error_norm(K_hat, K)
    assert 0.7 * measured <= est <= 2.0 * measured
    Q = quantize_gram(K, random_state=0)
    assert estimate_error_norm(Q, "quantize") == pytest.approx(2 * Q.b * math.sqrt(m))
    B = sparsify_quantize_gram(X, k, s, random_state=0)
    assert estimate_error_norm(B, "both", s=s) == pytest.approx(2 * 1.0 * math.sqrt(s * m))
    with pytest.raises(ValueError, match="scheme"):
        estimate_error_norm(K_hat, "dense")
    with pytest.raises(ValueError, match="needs s"):
        estimate_error_norm(K_hat, "sparsify")
    with pytest.raises(TypeError, match="QuantizedGram"):
        estimate_error_norm(K_hat, "quantize")
    with pytest.raises(TypeError, match="scipy.sparse"):
        estimate_error_norm(K, "sparsify", s=2)


def test_inexact_theorem2_holds_for_truncated_solves():
    X = _clusters(120)
    k = RBF(0.5)
    K = k(X)
    lam, F = _top(K, 3)
    K_hat = sparsify_gram(X, k, 3, random_state=0)
    err = gram_error_norm(K_hat, K)
    for max_iter in (1, 2, 3, 5, 50):
        theta, F_hat, *_ = orthogonal_iteration(K_hat, 3, max_iter=max_iter, random_state=0,
                                                n_oversamples=2, tol=1e-9) if max_iter == 50 \
            else _quiet_oi(K_hat, 3, max_iter)
        R = K_hat @ F_hat - F_hat * theta
        bound = theorem2_bound_inexact(err, np.linalg.norm(R, 2), theta[-1], lam[3])
        assert subspace_distance(F_hat, F) <= min(1.0, bound) + 1e-12
    # With an exact eigenbasis it is the first inequality of Theorem 2.
    lam_hat, F_exact = _top(K_hat.toarray(), 3)
    assert theorem2_bound_inexact(err, 0.0, lam_hat[2], lam[3]) >= theorem2_bound(
        err, lam, lam_hat, 3) - 1e-12
    assert theorem2_bound_inexact(err, 0.0, 1.0, 2.0) == math.inf


def _quiet_oi(A, ell, max_iter):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return orthogonal_iteration(A, ell, max_iter=max_iter, random_state=0)


def test_davis_kahan_residual_bound_is_valid_and_tighter_than_theorem2():
    X = _clusters(120)
    k = RBF(0.5)
    K = k(X)
    lam, F = _top(K, 3)
    K_hat = sparsify_gram(X, k, 3, random_state=0)
    lam_hat, F_hat = _top(K_hat.toarray(), 3)
    err = gram_error_norm(K_hat, K)
    dk = davis_kahan_residual_bound(K, F_hat, lam[3])
    dist = subspace_distance(F_hat, F)
    assert dist <= dk < theorem2_bound(err, lam, lam_hat, 3)
    # Exact eigenvectors of K: zero residual, zero bound.
    assert davis_kahan_residual_bound(K, F, lam[3]) == pytest.approx(0.0, abs=1e-10)
    # Random subspaces: the bound is never below the true distance (or is inf).
    rng = np.random.default_rng(1)
    for _ in range(20):
        G, _ = np.linalg.qr(F + 0.2 * rng.normal(size=F.shape))
        assert subspace_distance(G, F) <= davis_kahan_residual_bound(K, G, lam[3]) + 1e-12
    assert davis_kahan_residual_bound(K, np.eye(K.shape[0])[:, :3], lam[3]) == math.inf


def test_shift_finds_the_largest_eigenvalues_of_an_indefinite_matrix():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(60, 60)))
    w = np.r_[10.0, 8.0, 6.0, np.linspace(-9.5, 1.0, 57)]
    A = (Q * w) @ Q.T
    # Unshifted (the paper's algorithm) returns the dominant |lambda|, incl. -9.5.
    lam0, *_ = orthogonal_iteration(A, 3, tol=1e-10, max_iter=5000, random_state=0)
    assert lam0.min() < 0
    lam, V, _, conv = orthogonal_iteration(A, 3, tol=1e-10, max_iter=5000, random_state=0,
                                           shift=10.0)
    assert conv
    np.testing.assert_allclose(lam, [10.0, 8.0, 6.0], rtol=1e-8)
    np.testing.assert_allclose(np.abs(V.T @ Q[:, :3]), np.eye(3), atol=1e-6)
    with pytest.raises(ValueError, match="atol"):
        orthogonal_iteration(A, 3, atol=0.0)


def test_noise_matched_atol_stops_early_with_small_residual():
    X = _clusters(120)
    k = RBF(0.5)
    K_hat = sparsify_gram(X, k, 3, random_state=0)
    eps_hat = estimate_error_norm(K_hat, "sparsify", s=3)
    _, _, n_strict, _ = orthogonal_iteration(K_hat, 3, tol=1e-10, max_iter=5000,
                                             random_state=0, shift=eps_hat)
    theta, V, n_iter, conv = orthogonal_iteration(K_hat, 3, tol=1e-10, max_iter=5000,
                                                  random_state=0, shift=eps_hat,
                                                  atol=0.1 * eps_hat)
    assert conv and n_iter < n_strict
    assert np.linalg.norm(K_hat @ V - V * theta, 2) <= 0.1 * eps_hat


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_threaded_csr_operator_products(n_threads):
    rng = np.random.default_rng(0)
    A = scipy.sparse.random(97, 97, density=0.2, random_state=0, format="csr")
    A = (A + A.T).tocsr()
    op = ThreadedCSROperator(A, n_threads=n_threads)
    v, V = rng.normal(size=97), rng.normal(size=(97, 5))
    np.testing.assert_allclose(op @ v, A @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(op @ V, A @ V, rtol=1e-12, atol=1e-12)
    assert op.nnz == A.nnz and op.n_threads <= n_threads
    op32 = ThreadedCSROperator(A, n_threads=n_threads, dtype="float32")
    out = op32 @ V
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, A @ V, rtol=1e-5, atol=1e-5)
    lam, *_ = orthogonal_iteration(op, 2, tol=1e-10, max_iter=5000, random_state=0,
                                   shift=10.0)
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(A.toarray())[::-1][:2], rtol=1e-8)


def test_threaded_csr_operator_errors():
    A = scipy.sparse.eye(5, format="csr")
    with pytest.raises(ValueError, match="dtype"):
        ThreadedCSROperator(A, dtype="float16")
    with pytest.raises(ValueError, match="square"):
        ThreadedCSROperator(scipy.sparse.csr_array(np.ones((2, 3))))
    with pytest.raises(ValueError, match="n_threads"):
        ThreadedCSROperator(A, n_threads=0)


def test_kpca_noise_tol_and_shift():
    from sparsekm.models import RandomizedKernelPCA

    X = _clusters(100)
    k = RBF(0.5)
    full = RandomizedKernelPCA(6, kernel=k, sampling="sparsify", s=3, n_oversamples=4,
                               tol=1e-9, random_state=0).fit(X)
    fast = RandomizedKernelPCA(6, kernel=k, sampling="sparsify", s=3, n_oversamples=4,
                               tol=1e-9, noise_tol=0.1, random_state=0).fit(X)
    assert fast.n_iter_ < full.n_iter_
    assert fast.error_norm_estimate_ == pytest.approx(full.error_norm_estimate_)
    # Same K_hat (same seed): the leading subspaces agree to within the noise rule.
    from sklearn.utils import check_random_state

    from sparsekm.approx.randomized import _as_generator

    K_hat = sparsify_gram(X, k, 3, random_state=_as_generator(check_random_state(0)))
    assert np.all(full.eigenvalues_ > 0)
    lam_exact = np.linalg.eigvalsh(K_hat.toarray())[::-1][:6]
    np.testing.assert_allclose(full.eigenvalues_, lam_exact, rtol=1e-6)
    R = K_hat @ fast.eigenvectors_ - fast.eigenvectors_ * fast.eigenvalues_
    assert np.linalg.norm(R, 2) <= 0.1 * fast.error_norm_estimate_
    with pytest.raises(ValueError, match="noise_tol"):
        RandomizedKernelPCA(2, noise_tol=0.0).fit(X)


def test_kpca_shift_keeps_positive_eigenvalues_when_noise_dominates():
    from sparsekm.models import RandomizedKernelPCA

    X = np.random.default_rng(0).normal(size=(300, 20))
    kpca = RandomizedKernelPCA(15, kernel=RBF(0.05), sampling="sparsify", s=20, n_oversamples=5,
                               tol=1e-6, random_state=0).fit(X)
    assert np.all(kpca.eigenvalues_ > 0)
    assert kpca.error_norm_estimate_ > kpca.eigenvalues_[-1]  # noise-dominated regime
