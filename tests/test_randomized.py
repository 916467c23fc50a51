"""Randomized kernels (Achlioptas, McSherry & Schölkopf, NIPS 2001)."""

import math
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError

import sparsekm
from sparsekm import KernelExpansion
from sparsekm.approx.randomized import (
    ProjectedKernel,
    QuantizedGram,
    RandomProjection,
    error_sigma,
    furedi_komlos_bound,
    gram_error_norm,
    orthogonal_iteration,
    quantize_gram,
    randomized_rounding,
    sparsify_gram,
    sparsify_quantize_gram,
    subspace_distance,
    theorem2_bound,
    theorem3_c,
    theorem5_bounds,
    theorem5_s,
    theorem6_s,
)
from sparsekm.kernels import RBF, Linear, Polynomial, Sigmoid, kernel_from_dict
from sparsekm.models import RandomizedKernelPCA

# Statistical tolerance used for every "E[.] = ." test: the empirical mean over N
# independent draws must lie within Z standard errors of the exact value, entry by
# entry (each standard error from the scheme's exact variance). With Z = 5 a
# correct implementation fails with probability < 1e-4 over all the entries tested
# (and never on these fixed seeds).
Z = 5.0


def _data(m=60, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(m, d))


# -- sparsification --------------------------------------------------------------------
def test_sparsify_symmetric_density_and_values():
    X = _data(500, 6)
    k = RBF(0.1)
    K = k(X)
    s = 5.0
    K_hat = sparsify_gram(X, k, s, random_state=0)
    assert scipy.sparse.issparse(K_hat) and K_hat.format == "csr"
    assert K_hat.has_canonical_format
    assert abs(K_hat - K_hat.T).max() == 0
    D = K_hat.toarray()
    kept = D != 0
    np.testing.assert_allclose(D[kept], s * K[kept], rtol=1e-12)
    # Upper-triangle cells (diagonal included) are independent Bernoulli(1/s).
    m = X.shape[0]
    n_cells = m * (m + 1) // 2
    n_kept = int(np.triu(kept).sum())
    sd = math.sqrt(n_cells * (1 / s) * (1 - 1 / s))
    assert abs(n_kept - n_cells / s) <= Z * sd
    assert K_hat.nnz == 2 * n_kept - int(np.diag(kept).sum())


def test_sparsify_block_size_and_precomputed_paths_agree():
    X = _data(97, 3)
    k = Polynomial(2, 1.0)
    K = k(X)
    a = sparsify_gram(X, k, 3, random_state=5)
    b = sparsify_gram(K, "precomputed", 3, random_state=5)
    np.testing.assert_allclose(a.toarray(), b.toarray(), rtol=1e-12)
    c = sparsify_gram(X, k, 3, random_state=5, block_size=7)  # many blocks, other pattern
    assert abs(c - c.T).max() == 0
    assert c.has_canonical_format
    D = c.toarray()
    np.testing.assert_allclose(D[D != 0], 3 * K[D != 0], rtol=1e-12)
    d = sparsify_gram(X, k, 3, random_state=5, block_size=7, evaluate="blocks")
    np.testing.assert_allclose(d.toarray(), c.toarray(), rtol=1e-12)
    with pytest.raises(ValueError, match="'evaluate' parameter"):
        sparsify_gram(X, k, 3, evaluate="dense")
    full = sparsify_gram(X, k, 1, random_state=0)  # s = 1 keeps everything
    np.testing.assert_allclose(full.toarray(), K, rtol=1e-12)


def test_sparsify_generic_kernel_fallback_and_projected_kernel():
    X = _data(50, 8)
    proj = RandomProjection(8, 5, random_state=1)
    pk = ProjectedKernel(RBF(0.3), proj)
    K = pk(X)
    K_hat = sparsify_gram(X, pk, 2, random_state=0)
    D = K_hat.toarray()
    np.testing.assert_allclose(D[D != 0], 2 * K[D != 0], rtol=1e-12)
    # Quantizing through the wrapper equals quantizing its Gram matrix.
    np.testing.assert_array_equal(quantize_gram(X, pk, random_state=3).bits,
                                  quantize_gram(K, random_state=3).bits)


def test_sparsify_never_builds_the_dense_matrix():
    m = 3000
    X = _data(m, 16, seed=3)
    dense_bytes = m * m * 8
    tracemalloc.start()
    K_hat = sparsify_gram(X, RBF(0.05), 20, random_state=0, block_size=200)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    csr_bytes = K_hat.data.nbytes + K_hat.indices.nbytes + K_hat.indptr.nbytes
    assert peak < dense_bytes / 5
    assert peak < 3 * csr_bytes + 10 * 2**20


@pytest.mark.parametrize("scheme", ["sparsify", "quantize", "both"])
def test_unbiased_over_many_seeds(scheme):
    X = _data(12, 3, seed=1)
    k = RBF(0.2)
    K = k(X)
    b = np.abs(K).max()
    s = 3.0
    n_draws = 3000
    total = np.zeros_like(K)
    for seed in range(n_draws):
        if scheme == "sparsify":
            total += sparsify_gram(X, k, s, random_state=seed).toarray()
        elif scheme == "quantize":
            total += quantize_gram(X, k, random_state=seed).toarray()
        else:
            total += sparsify_quantize_gram(X, k, s, random_state=seed).toarray()
    mean = total / n_draws
    var = {"sparsify": (s - 1) * K**2, "quantize": b**2 - K**2, "both": s * b**2 - K**2}[scheme]
    stderr = np.sqrt(var / n_draws)
    assert np.all(np.abs(mean - K) <= Z * stderr + 1e-12)
    # The standardised errors of the 78 independent upper-triangle entries have mean
    # square ~ chi2_78 / 78 (sd 0.16): this also checks the variance formulas.
    iu = np.triu_indices(12)
    random = stderr[iu] > 0  # quantized diagonal entries equal b: no randomness
    chi2 = np.mean(((mean - K)[iu][random] / stderr[iu][random]) ** 2)
    assert 0.5 < chi2 < 1.6


# -- quantization ----------------------------------------------------------------------
def test_quantize_entries_bits_and_symmetry():
    X = _data(37, 3)
    k = RBF(0.5)
    K = k(X)
    Q = quantize_gram(X, k, random_state=0, block_size=8)  # several blocks: mirrored bits
    assert isinstance(Q, QuantizedGram)
    assert Q.b == pytest.approx(np.abs(K).max())
    assert Q.bits.dtype == np.uint8 and Q.bits.shape == (37, 5)
    assert Q.nbytes == 37 * 5
    A = Q.toarray()
    assert set(np.unique(A)) <= {-Q.b, Q.b}
    np.testing.assert_array_equal(A, A.T)
    V = np.random.default_rng(0).normal(size=(37, 4))
    np.testing.assert_allclose(Q @ V, A @ V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Q @ V[:, 0], A @ V[:, 0], rtol=1e-12, atol=1e-12)
    # Precomputed K with the same seed gives the same bits.
    np.testing.assert_array_equal(quantize_gram(K, random_state=0, block_size=8).bits, Q.bits)


def test_quantize_user_b_and_non_psd_kernel():
    X = _data(20, 3)
    K = RBF(0.5)(X)
    Q = quantize_gram(K, random_state=0, b=2.0)
    assert set(np.unique(Q.toarray())) <= {-2.0, 2.0}
    with pytest.raises(ValueError, match="smaller than max"):
        quantize_gram(K, b=0.5)
    sig = Sigmoid(0.3, -1.0)
    Qs = quantize_gram(X, sig, random_state=0)
    assert Qs.b == pytest.approx(np.abs(sig(X)).max())
    with pytest.raises(ValueError, match="identically zero"):
        quantize_gram(np.zeros((3, 3)))


def test_combined_entries():
    X = _data(40, 3)
    K_hat = sparsify_quantize_gram(X, RBF(0.5), 4, random_state=0)
    assert set(np.unique(K_hat.data)) <= {-4.0, 4.0}  # +-s b with b = 1
    assert abs(K_hat - K_hat.T).max() == 0


@pytest.mark.parametrize("func", [sparsify_gram, sparsify_quantize_gram])
def test_sampling_error_paths(func):
    X = _data(10, 2)
    with pytest.raises(ValueError, match="'s' parameter .* >= 1"):
        func(X, RBF(), 0.5)
    with pytest.raises(ValueError, match="'s' parameter"):
        func(X, RBF(), np.inf)
    with pytest.raises(TypeError, match="kernel must be"):
        func(X, "rbf", 2)
    with pytest.raises(ValueError, match="square"):
        func(X, "precomputed", 2)
    K = RBF()(X)
    K[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        func(K, "precomputed", 2)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        func(Xn, RBF(), 2)
    with pytest.raises(TypeError, match="random_state"):
        func(X, RBF(), 2, random_state="seed")


# -- error norms and bounds (Theorems 1-3) -----------------------------------------------
def test_gram_error_norm_exact_lanczos_and_matrix_free_agree():
    X = _data(300, 4)
    k = RBF(0.2)
    K = k(X)
    K_hat = sparsify_gram(X, k, 4, random_state=0)
    exact = gram_error_norm(K_hat, K)
    np.testing.assert_allclose(exact, np.linalg.norm(K_hat.toarray() - K, 2), rtol=1e-10)
    lanczos = gram_error_norm(K_hat, K, exact_max_size=0, tol=1e-10)
    free = gram_error_norm(K_hat, X=X, kernel=k, tol=1e-10)
    np.testing.assert_allclose([lanczos, free], [exact, exact], rtol=1e-6)
    Q = quantize_gram(K, random_state=0)
    np.testing.assert_allclose(gram_error_norm(Q, K),
                               np.linalg.norm(Q.toarray() - K, 2), rtol=1e-10)
    with pytest.raises(ValueError, match="either K"):
        gram_error_norm(K_hat)
    with pytest.raises(ValueError, match="shape"):
        gram_error_norm(K_hat, K[:10, :10])


def test_error_sigma_and_furedi_komlos_bound_hold():
    X = _data(400, 5)
    k = RBF(0.1)
    K = k(X)
    A = np.abs(K)
    assert error_sigma("sparsify", K, s=5) == pytest.approx(2.0 * A.max())
    assert error_sigma("quantize", K) == pytest.approx(math.sqrt(A.max() ** 2 - A.min() ** 2))
    assert error_sigma("both", K, s=5) == pytest.approx(math.sqrt(5 * A.max() ** 2 - A.min() ** 2))
    fk = furedi_komlos_bound(2.0, 400)
    assert fk.bound == pytest.approx(4 * 2.0 * 20.0)
    assert fk.probability == pytest.approx(1 - 2 * math.exp(-4 * 400 / 8))
    for s in (2, 5, 10):
        sig = error_sigma("sparsify", K, s=s)
        err = gram_error_norm(sparsify_gram(X, k, s, random_state=s), K)
        assert err <= furedi_komlos_bound(sig, 400).bound
    err = gram_error_norm(quantize_gram(K, random_state=0), K)
    assert err <= furedi_komlos_bound(error_sigma("quantize", K), 400).bound
    with pytest.raises(ValueError, match="scheme"):
        error_sigma("dense", K)
    with pytest.raises(ValueError, match="needs s"):
        error_sigma("sparsify", K)
    with pytest.raises(ValueError, match="'m' parameter"):
        furedi_komlos_bound(1.0, 1)


def test_subspace_distance_and_theorem2_bound():
    I = np.eye(6)
    assert subspace_distance(I[:, :2], I[:, :2]) == pytest.approx(0.0)
    assert subspace_distance(I[:, :2], I[:, 2:4]) == pytest.approx(1.0)
    c, s_ = math.cos(0.3), math.sin(0.3)
    F_hat = np.zeros((6, 1))
    F_hat[0, 0], F_hat[1, 0] = c, s_
    assert subspace_distance(F_hat, I[:, :1]) == pytest.approx(s_)
    # Theorem 2 on a sparsified Gram matrix with a clear spectral gap.
    X = np.vstack([_data(150, 3, seed=i) * 0.3 + 4 * i for i in range(3)])
    k = RBF(0.5)
    K = k(X)
    K_hat = sparsify_gram(X, k, 3, random_state=0)
    w, V = np.linalg.eigh(K)
    wh, Vh = np.linalg.eigh(K_hat.toarray())
    w, V, wh, Vh = w[::-1], V[:, ::-1], wh[::-1], Vh[:, ::-1]
    err = gram_error_norm(K_hat, K)
    bound = theorem2_bound(err, w[:4], wh[:4], 3)
    assert bound < 1  # non-vacuous here
    assert subspace_distance(Vh[:, :3], V[:, :3]) <= bound
    c3 = theorem3_c(err, w[:4], 3)
    assert c3 == pytest.approx((w[2] - w[3]) / (2 * err))
    with pytest.raises(ValueError, match="eigenvalues"):
        theorem2_bound(err, w[:3], wh[:3], 3)


# -- orthogonal iteration ----------------------------------------------------------------
def test_orthogonal_iteration_matches_eigh_on_exact_K():
    X = _data(200, 4)
    K = RBF(0.3)(X)
    w, V = np.linalg.eigh(K)
    w, V = w[::-1][:6], V[:, ::-1][:, :6]
    lam, A, n_iter, converged = orthogonal_iteration(K, 6, tol=1e-10, max_iter=5000,
                                                     random_state=0)
    assert converged and n_iter > 1
    np.testing.assert_allclose(lam, w, rtol=1e-9)
    np.testing.assert_allclose(A.T @ A, np.eye(6), atol=1e-12)
    np.testing.assert_allclose(np.abs(A.T @ V), np.eye(6), atol=1e-6)
    # Same answer on a sparse matrix and a LinearOperator.
    Ks = scipy.sparse.csr_array(np.where(np.abs(K) > 0.05, K, 0.0))
    ws = np.linalg.eigvalsh(Ks.toarray())[::-1][:3]
    lam_s, *_ = orthogonal_iteration(Ks, 3, tol=1e-10, max_iter=5000, n_oversamples=4,
                                     random_state=1)
    np.testing.assert_allclose(lam_s, ws, rtol=1e-9)


def test_orthogonal_iteration_errors_and_warning():
    K = RBF()(_data(20, 2))
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        lam, V, n_iter, converged = orthogonal_iteration(K, 3, max_iter=1, random_state=0)
    assert not converged and n_iter == 1 and V.shape == (20, 3)
    with pytest.raises(ValueError, match="n_components"):
        orthogonal_iteration(K, 21)
    with pytest.raises(ValueError, match="square"):
        orthogonal_iteration(K[:5], 2)
    with pytest.raises(ValueError, match="tol"):
        orthogonal_iteration(K, 2, tol=0)


# -- randomized rounding (section 4) ------------------------------------------------------
def _unit_expansion(m=400, seed=0, kernel=None):
    rng = np.random.default_rng(seed)
    alpha = rng.normal(size=m)
    alpha /= np.linalg.norm(alpha)
    return KernelExpansion(rng.normal(size=(m, 3)), alpha, kernel or RBF(0.3), intercept=0.25)


def test_rounding_unbiased_over_many_seeds():
    psi = _unit_expansion(200)
    X = _data(5, 3, seed=9)
    f = psi.decision_function(X)
    s = 3.0
    n_draws = 3000
    total = np.zeros_like(f)
    for seed in range(n_draws):
        total += randomized_rounding(psi, s, random_state=seed).decision_function(X)
    mean = total / n_draws
    alpha = np.abs(psi.coef)
    small = alpha < 1 / s
    Kx = psi.kernel(X, psi.vectors)
    var = ((alpha / s - alpha**2) * small * Kx**2).sum(axis=1)
    assert np.all(np.abs(mean - f) <= Z * np.sqrt(var / n_draws))


def test_rounding_exact_when_s_large_and_sparse_when_small():
    psi = _unit_expansion(300)
    s = 1.0 / np.abs(psi.coef).min()
    for factor in (1.0, 1.5):
        exact = randomized_rounding(psi, s * factor, random_state=0)
        assert exact.n_terms == psi.n_terms
        np.testing.assert_array_equal(exact.coef, psi.coef)
        assert exact.intercept == psi.intercept
    few = randomized_rounding(psi, 2.0, random_state=0)
    assert few.n_terms < psi.n_terms / 2
    big = np.abs(psi.coef) >= 0.5
    assert np.all(np.isin(psi.coef[big], few.coef))
    small_coef = few.coef[np.abs(few.coef) < 0.5]
    np.testing.assert_allclose(np.abs(small_coef), 0.5)


def test_rounding_multioutput_empty_and_errors():
    rng = np.random.default_rng(0)
    psi = KernelExpansion(rng.normal(size=(50, 2)), rng.normal(size=(50, 3)) * 1e-3, RBF(),
                          intercept=[1.0, 2.0, 3.0])
    r = randomized_rounding(psi, 10.0, random_state=0)
    assert r.coef.shape[1] == 3
    np.testing.assert_array_equal(r.intercept, [1.0, 2.0, 3.0])
    tiny = KernelExpansion(rng.normal(size=(5, 2)), np.full(5, 1e-12), RBF(), intercept=0.5)
    t = randomized_rounding(tiny, 1.0, random_state=0)
    assert t.n_terms == 1 and t.coef[0] == 0
    np.testing.assert_allclose(t.decision_function(rng.normal(size=(3, 2))), 0.5)
    with pytest.raises(TypeError, match="KernelExpansion"):
        randomized_rounding(np.ones(3), 1.0)
    with pytest.raises(ValueError, match="'s' parameter"):
        randomized_rounding(psi, 0.0)
    with pytest.raises(ValueError, match="'s' parameter"):
        randomized_rounding(psi, -1.0)


def test_theorem5_formula_and_errors():
    m, c, eps = 1000, 1.0, 0.5
    T = 10.0
    assert theorem5_s(eps, T, c, m) == pytest.approx(2 * c * math.sqrt(m) / (eps * T))
    info = theorem5_bounds(eps, T, c, m)
    assert info["max_nonzero"] == pytest.approx(4 * c * m / (eps * T))
    assert info["trivial_threshold"] == pytest.approx(T * math.sqrt(math.log(m)))
    for bad in (0.0, 2 / 3, 0.7, -0.1, 1.0):
        with pytest.raises(ValueError, match=r"'eps' parameter .*\(0, 2/3\)"):
            theorem5_s(bad, T, c, m)
    with pytest.raises(ValueError, match="exceeds"):
        theorem5_s(eps, 1e6, c, m)
    with pytest.raises(ValueError, match="'T' parameter"):
        theorem5_s(eps, 0.0, c, m)
    with pytest.raises(ValueError, match="'c' parameter"):
        theorem5_s(eps, T, -1.0, m)
    with pytest.raises(ValueError, match="'m' parameter"):
        theorem5_s(eps, T, c, 1)


def test_theorem5_guarantee_on_fixed_seed():
    # Dense unit alpha (alpha_i ~ 1/sqrt(m)), RBF values in (0, 1]: c = 1.
    rng = np.random.default_rng(0)
    m = 4000
    Zv = rng.normal(size=(m, 2))
    alpha = np.abs(rng.normal(size=m)) + 0.5
    alpha /= np.linalg.norm(alpha)
    psi = KernelExpansion(Zv, alpha, RBF(0.05))
    eps = 0.5
    info = theorem5_bounds(eps, 2.0, 1.0, m)
    r = randomized_rounding(psi, info["s"], random_state=1)
    assert r.n_terms < info["max_nonzero"]
    X = rng.normal(size=(300, 2))
    f, f_hat = psi.decision_function(X), r.decision_function(X)
    tau = info["trivial_threshold"]
    ok = ((np.abs(f) < tau) & (np.abs(f_hat) < tau)) | (np.abs(f_hat - f) <= eps * np.abs(f))
    assert ok.all()
    assert (np.abs(f) >= tau).mean() > 0.5  # the guarantee is not vacuous here


# -- random projections (section 5) ---------------------------------------------------------
def test_theorem6_formula_and_errors():
    assert theorem6_s(0.5, 1.0, 100) == math.ceil(6 / (0.125 - 0.125 / 3) * math.log(100))
    for bad in (0.0, 1.0, 1.5, -0.2):
        with pytest.raises(ValueError, match=r"'eps' parameter .*\(0, 1\)"):
            theorem6_s(bad, 1.0, 100)
    with pytest.raises(ValueError, match="'beta' parameter"):
        theorem6_s(0.5, 0.0, 100)
    with pytest.raises(ValueError, match="'n' parameter"):
        theorem6_s(0.5, 1.0, 1)


def test_projection_entries_and_unbiased_lengths():
    P = RandomProjection(100, 16, random_state=0)
    assert P.matrix.shape == (100, 16)
    np.testing.assert_allclose(np.abs(P.matrix), 1 / 4.0)
    z = np.random.default_rng(1).normal(size=(1, 100))
    ratios = [float((RandomProjection(100, 16, random_state=i).transform(z) ** 2).sum()
                    / (z**2).sum()) for i in range(400)]
    # Var(||zP||^2 / ||z||^2) <= 2/s for +-1 entries: 5 standard errors.
    assert abs(np.mean(ratios) - 1.0) <= Z * math.sqrt(2 / 16 / 400)


@pytest.mark.parametrize("seed", range(5))
def test_projection_preserves_distances_theorem6(seed):
    rng = np.random.default_rng(100 + seed)
    d, m, t = 2000, 40, 20
    Y = rng.normal(size=(m, d))
    X = rng.normal(size=(t, d)) + 0.5
    eps, beta = 0.5, 1.0
    P = RandomProjection(d, eps=eps, beta=beta, n_points=m + t, random_state=seed)
    assert P.s == theorem6_s(eps, beta, m + t)
    Xh, Yh = P.transform(X), P.transform(Y)
    D = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    Dh = ((Xh[:, None, :] - Yh[None, :, :]) ** 2).sum(-1)
    within = ((1 - eps) * D <= Dh) & (Dh <= (1 + eps) * D)
    assert within.mean() >= 1 - 1 / (m + t) ** beta
    assert within.all()
    G, Gh = X @ Y.T, Xh @ Yh.T
    nx, ny = (X**2).sum(1)[:, None], (Y**2).sum(1)[None, :]
    assert np.all(np.abs(Gh - G) < eps * nx + eps * ny)  # inequality (3)


def test_projection_errors_and_serialisation():
    with pytest.raises(ValueError, match="not both"):
        RandomProjection(10, 3, eps=0.5, n_points=10)
    with pytest.raises(ValueError, match="give the target dimension"):
        RandomProjection(10)
    with pytest.raises(ValueError, match="needs n_points"):
        RandomProjection(10, eps=0.5)
    with pytest.raises(ValueError, match="'s' parameter"):
        RandomProjection(10, 0)
    with pytest.raises(ValueError, match="'eps' parameter"):
        RandomProjection(10, eps=1.2, n_points=10)
    P = RandomProjection(10, 3, random_state=0)
    with pytest.raises(ValueError, match="expects d = 10"):
        P.transform(np.ones((2, 4)))
    Q = RandomProjection.from_dict(P.to_dict())
    assert Q == P and hash(Q) == hash(P)
    np.testing.assert_array_equal(Q.matrix, P.matrix)
    assert RandomProjection(10, 3, random_state=1) != P
    with pytest.raises(ValueError, match="Invalid RandomProjection"):
        RandomProjection.from_dict({"d": 10, "s": 4, "signs": P.to_dict()["signs"]})


# -- ProjectedKernel ----------------------------------------------------------------------
def _projected(kernel=None, d=6, s=4, seed=0):
    return ProjectedKernel(kernel or RBF(0.4), RandomProjection(d, s, random_state=seed))


@pytest.mark.parametrize("inner", [RBF(0.4), Polynomial(3, 1.0), Linear(), Sigmoid(0.1, 0.2)])
def test_projected_kernel_values_and_expansion(inner):
    pk = _projected(inner)
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(7, 6)), rng.normal(size=(5, 6))
    P = pk.projection.matrix
    np.testing.assert_allclose(pk(X, Y), inner(X @ P, Y @ P), rtol=1e-12)
    np.testing.assert_allclose(pk(X), inner(X @ P), rtol=1e-12)
    np.testing.assert_allclose(pk.diag(X), inner.diag(X @ P), rtol=1e-12)
    C = rng.normal(size=(5, 2))
    np.testing.assert_allclose(pk.mmv(X, Y, C), inner(X @ P, Y @ P) @ C, rtol=1e-10)
    np.testing.assert_allclose(pk._block(X, Y, None, None), pk(X, Y), rtol=1e-12)
    psi = KernelExpansion(Y, C[:, 0], pk, intercept=0.1)
    np.testing.assert_allclose(psi.decision_function(X), pk(X, Y) @ C[:, 0] + 0.1, rtol=1e-10)
    assert psi.norm2() == pytest.approx(C[:, 0] @ pk(Y) @ C[:, 0], rel=1e-10)
    assert pk.is_psd == inner.is_psd


def test_projected_kernel_gradients_match_finite_differences():
    pk = _projected(RBF(0.3), d=5, s=3)
    rng = np.random.default_rng(1)
    X, Zv, W = rng.normal(size=(6, 5)), rng.normal(size=(3, 5)), rng.normal(size=(6, 3))
    y = rng.normal(size=5)
    h = 1e-6
    G = pk.gradient_y(X, y)
    fd = np.empty_like(G)
    for j in range(5):
        e = np.zeros(5)
        e[j] = h
        fd[:, j] = (pk(X, (y + e)[None])[:, 0] - pk(X, (y - e)[None])[:, 0]) / (2 * h)
    np.testing.assert_allclose(G, fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(pk._gradient_rows(X, y), G, rtol=1e-12)

    def objective(Zf):
        return float(np.sum(W * pk(X, Zf.reshape(3, 5))))

    Gs = pk.gradient_sum(X, Zv, W)
    fd = np.zeros(15)
    for j in range(15):
        e = np.zeros(15)
        e[j] = h
        fd[j] = (objective(Zv.ravel() + e) - objective(Zv.ravel() - e)) / (2 * h)
    np.testing.assert_allclose(Gs.ravel(), fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(pk._gradient_sum_block(X, Zv, W, None, None), Gs, rtol=1e-12)


def test_projected_kernel_persistence_equality_and_errors(tmp_path):
    pk = _projected(Polynomial(2, 1.0), d=6, s=4)
    again = kernel_from_dict(pk.to_dict())
    assert again == pk and hash(again) == hash(pk)
    assert _projected(Polynomial(2, 1.0), seed=1) != pk
    rng = np.random.default_rng(0)
    psi = KernelExpansion(rng.normal(size=(8, 6)), rng.normal(size=8), pk, intercept=0.3)
    sparsekm.save(psi, tmp_path / "psi.skm")
    loaded = sparsekm.load(tmp_path / "psi.skm")
    X = rng.normal(size=(4, 6))
    np.testing.assert_array_equal(loaded.decision_function(X), psi.decision_function(X))
    assert loaded.kernel == pk
    assert clone(pk) == pk
    with pytest.raises(TypeError, match="radial or dot-product"):
        ProjectedKernel(pk, RandomProjection(6, 2, random_state=0))
    with pytest.raises(TypeError, match="RandomProjection"):
        ProjectedKernel(RBF(), np.eye(3))
    with pytest.raises(TypeError, match="Kernel"):
        ProjectedKernel("rbf", RandomProjection(6, 2, random_state=0))
    with pytest.raises(ValueError, match="expects d = 6"):
        pk(np.ones((2, 3)))
    with pytest.raises(ValueError, match="Invalid parameters"):
        kernel_from_dict({"name": "ProjectedKernel", "params": {"kernel": RBF().to_dict()}})


def test_projected_kernel_file_saved_before_the_move_to_kernels_loads():
    # Saved by the code of commit bb7b59d, when ProjectedKernel and RandomProjection
    # lived in sparsekm/approx/randomized.py: kernels are stored by class name, so the
    # file names no module and loads unchanged. psi(Xt) recorded at the same time.
    path = Path(__file__).parent / "data" / "projected_kernel_pre_move.skm"
    loaded = sparsekm.load(path)
    rng = np.random.default_rng(0)
    vectors, coef = rng.normal(size=(8, 5)), rng.normal(size=8)
    Xt = rng.normal(size=(4, 5))
    pk = ProjectedKernel(RBF(0.3), RandomProjection(5, 3, random_state=0))
    assert type(loaded.kernel) is ProjectedKernel and loaded.kernel == pk
    np.testing.assert_array_equal(loaded.vectors, vectors)
    np.testing.assert_array_equal(loaded.coef, coef)
    assert loaded.intercept == 0.25
    np.testing.assert_allclose(loaded(Xt), [1.2279371314738796, 1.4821867371551947,
                                            0.9662090415089484, 1.75390948907951],
                               rtol=1e-12)


def test_projection_classes_live_in_their_kernels_module_and_are_reexported():
    import sparsekm.approx
    import sparsekm.kernels

    for name in ("ProjectedKernel", "RandomProjection", "theorem6_s"):
        obj = getattr(sparsekm.kernels, name)
        assert obj.__module__ == "sparsekm.kernels.projected"
        assert getattr(sparsekm.approx, name) is obj
        assert name in sparsekm.kernels.__all__ and name in sparsekm.approx.__all__
    assert ProjectedKernel is sparsekm.kernels.ProjectedKernel


def test_kernels_module_does_not_import_approx():
    """``sparsekm.kernels`` (and loading a ProjectedKernel through it) needs no ``sparsekm.approx``.

    ``import sparsekm.kernels`` runs ``sparsekm/__init__.py``, which imports the models
    (and so ``sparsekm.approx``) itself; the subprocess therefore installs a bare
    ``sparsekm`` package object so that only ``kernels.py`` and what it imports run.
    """
    import ast
    import subprocess
    import sys

    import sparsekm.kernels

    # Static: no import of sparsekm.approx anywhere in kernels.py, lazy ones included.
    kernel_files = sorted(Path(sparsekm.kernels.__file__).parent.glob("*.py"))
    assert len(kernel_files) >= 4
    nodes = [node for f in kernel_files
             for node in ast.walk(ast.parse(f.read_text(encoding="utf-8")))]
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            assert "approx" not in (node.module or ""), ast.dump(node)
        elif isinstance(node, ast.Import):
            assert not any("approx" in a.name for a in node.names), ast.dump(node)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                node.func, "id", None)) in ("import_module", "__import__"):
            assert "approx" not in ast.unparse(node), ast.unparse(node)
    code = f"""
import sys, types
import numpy as np
pkg = types.ModuleType("sparsekm")
pkg.__path__ = [{str(Path(sparsekm.kernels.__file__).parent.parent)!r}]
sys.modules["sparsekm"] = pkg
import sparsekm.kernels as k
assert "sparsekm.approx" not in sys.modules, sorted(m for m in sys.modules if "sparsekm" in m)
pk = k.ProjectedKernel(k.RBF(0.3), k.RandomProjection(5, 3, random_state=0))
again = k.kernel_from_dict(pk.to_dict())
assert again == pk
X = np.random.default_rng(0).normal(size=(4, 5))
np.testing.assert_array_equal(again(X), pk(X))
assert "sparsekm.approx" not in sys.modules, sorted(m for m in sys.modules if "sparsekm" in m)
print("ok")
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


# -- RandomizedKernelPCA ------------------------------------------------------------------
def test_kpca_exact_matches_eigh_and_solvers_agree():
    X = _data(150, 4)
    k = RBF(0.3)
    K = k(X)
    w, V = np.linalg.eigh(K)
    w, V = w[::-1][:4], V[:, ::-1][:, :4]
    oi = RandomizedKernelPCA(4, kernel=k, tol=1e-11, max_iter=20000, random_state=0).fit(X)
    lz = RandomizedKernelPCA(4, kernel=k, solver="lanczos", tol=1e-12, random_state=0).fit(X)
    for model in (oi, lz):
        np.testing.assert_allclose(model.eigenvalues_, w, rtol=1e-9)
        np.testing.assert_allclose(np.abs(model.eigenvectors_.T @ V), np.eye(4), atol=1e-6)
        # f_n(x_j) = lambda_n^{-1/2} (K alpha^n)_j = sqrt(lambda_n) alpha^n_j on training points.
        np.testing.assert_allclose(model.transform(X), model.eigenvectors_ * np.sqrt(w),
                                   rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(oi.transform(X), lz.transform(X), rtol=1e-5, atol=1e-7)
    assert oi.gram_nbytes_ == 150 * 150 * 8 and oi.gram_density_ == 1.0


@pytest.mark.parametrize("sampling", ["sparsify", "quantize", "both"])
def test_kpca_sampled_within_theorem2_bound(sampling):
    X = np.vstack([_data(200, 3, seed=i) * 0.3 + 4 * i for i in range(3)])
    k = RBF(0.5)
    K = k(X)
    model = RandomizedKernelPCA(3, kernel=k, sampling=sampling, s=2, solver="lanczos",
                                tol=1e-10, random_state=0).fit(X)
    rng = np.random.default_rng(0)
    # Rebuild K_hat with the estimator's random stream to measure ||E_K||.
    from sklearn.utils import check_random_state

    from sparsekm.approx.randomized import _as_generator

    gen = _as_generator(check_random_state(0))
    K_hat = model._gram(X, k, gen)
    err = gram_error_norm(K_hat, K)
    w = np.linalg.eigvalsh(K)[::-1][:4]
    dense = K_hat.toarray()
    wh = np.linalg.eigvalsh(dense)[::-1][:4]
    np.testing.assert_allclose(model.eigenvalues_, wh[:3], rtol=1e-8)
    V = np.linalg.eigh(K)[1][:, ::-1][:, :3]
    bound = theorem2_bound(err, w, wh, 3)
    assert subspace_distance(model.eigenvectors_, V) <= min(1.0, bound)
    assert rng is not None
    if sampling == "quantize":
        assert model.gram_nbytes_ == 600 * 75
    elif sampling == "sparsify":
        assert 0.4 < model.gram_density_ < 0.6


def test_kpca_persistence_and_errors(tmp_path):
    X = _data(80, 3)
    model = RandomizedKernelPCA(3, kernel=RBF(0.3), sampling="sparsify", s=2,
                                random_state=0).fit(X)
    sparsekm.save(model, tmp_path / "kpca.skm")
    loaded = sparsekm.load(tmp_path / "kpca.skm")
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))
    assert list(loaded.get_feature_names_out()) == [f"randomizedkernelpca{i}" for i in range(3)]
    pk = _projected(RBF(0.3), d=3, s=2)
    m2 = RandomizedKernelPCA(2, kernel=pk, random_state=0).fit(X)
    sparsekm.save(m2, tmp_path / "kpca2.skm")
    np.testing.assert_array_equal(sparsekm.load(tmp_path / "kpca2.skm").transform(X),
                                  m2.transform(X))
    with pytest.raises(NotFittedError):
        RandomizedKernelPCA().transform(X)
    with pytest.raises(ValueError, match="'sampling' parameter"):
        RandomizedKernelPCA(sampling="dense").fit(X)
    with pytest.raises(ValueError, match="'solver' parameter"):
        RandomizedKernelPCA(solver="arpack").fit(X)
    with pytest.raises(ValueError, match=r"'s' parameter .* in the range \[1.0, inf\)"):
        RandomizedKernelPCA(sampling="sparsify", s=0.5).fit(X)
    with pytest.raises(ValueError, match="n_samples = 80"):
        RandomizedKernelPCA(81).fit(X)
    with pytest.raises(ValueError, match="positive"):
        RandomizedKernelPCA(2, kernel=Linear()).fit(X[:, :1])  # rank-1 Gram matrix
    with pytest.raises(ValueError, match="features"):
        model.transform(X[:, :2])


# -- reproduction (paper scale: -m slow) ---------------------------------------------------
@pytest.mark.slow
def test_reproduction_quick_reports_no_violation(tmp_path):
    from sparsekm.reproduce import Context
    from sparsekm.reproduce.randomized import run

    res = run(Context(out_dir=tmp_path, quick=True, progress=False))
    assert any("No bound was violated" in n for n in res.notes), res.notes
    assert len(res.figures) == 4 and all(Path(f).exists() for f in res.figures)


@pytest.mark.parametrize("sampling", ["none", "quantize", "sparsify"])
def test_randomized_kpca_s_below_one_refused_by_fit(sampling):
    """s < 1 was accepted by fit when the sampling does not use it, and the saved model
    could not be loaded (load checks s >= 1 always)."""
    from sklearn.datasets import make_moons

    X, _ = make_moons(80, noise=0.25, random_state=0)
    with pytest.raises(ValueError, match="'s' parameter of RandomizedKernelPCA"):
        RandomizedKernelPCA(n_components=2, sampling=sampling, s=0.5, random_state=0).fit(X)
