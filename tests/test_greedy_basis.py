"""GreedyBasis: Algorithm 1 of Franc & Hlaváč as a pivoted incomplete Cholesky."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import sparsekm
from sparsekm.approx import GreedyBasis, greedy_basis
from sparsekm.kernels import RBF, Linear, Polynomial, Sigmoid


def _clusters(n, d, rng, n_centers=5, spread=0.4):
    centers = rng.normal(scale=2.0, size=(n_centers, d))
    return centers[rng.integers(n_centers, size=n)] + spread * rng.normal(size=(n, d))


def _brute_force_se(X, idx, kernel):
    """se(x) = k(x,x) - 2 k_r^T beta + beta^T K_r beta with beta = K_r^{-1} k_r (eq. 2)."""
    Xr = X[idx]
    Kr = kernel(Xr)
    kr = kernel(Xr, X)  # (m, n)
    beta = np.linalg.solve(Kr, kr)
    return kernel.diag(X) - 2 * np.einsum("ij,ij->j", kr, beta) + np.einsum("ij,ik,kj->j", beta, Kr, beta)


@pytest.mark.parametrize("kernel", [RBF(0.7), Polynomial(3, 1.0)])
def test_full_basis_is_exact(rng, kernel):
    X = rng.normal(size=(40, 3))
    gb = GreedyBasis(n_basis=40, tol=0.0, kernel=kernel, random_state=0)
    G = gb.fit_transform(X)
    K = kernel(X)
    scale = np.abs(K).max()
    np.testing.assert_allclose(G @ G.T, K, atol=1e-8 * scale, rtol=0)
    np.testing.assert_allclose(gb.transform(X) @ gb.transform(X).T, K, atol=1e-8 * scale, rtol=0)
    assert gb.residuals_.max() <= 1e-8 * scale


def test_stops_at_numerical_rank_for_linear_kernel(rng):
    X = rng.normal(size=(50, 4))
    gb = GreedyBasis(n_basis=50, tol=0.0, kernel=Linear(), init="max-diag").fit(X)
    assert gb.n_basis_ == 4
    G = gb.transform(X)
    np.testing.assert_allclose(G @ G.T, X @ X.T, atol=1e-9)


def test_fit_transform_equals_transform(rng):
    X = _clusters(300, 4, rng)
    gb = GreedyBasis(n_basis=30, kernel=RBF(0.3), random_state=1)
    G = gb.fit_transform(X)
    np.testing.assert_allclose(gb.transform(X), G, atol=1e-10)
    # gamma_i^T gamma_j = beta_i^T K_r beta_j (eq. 3) with beta from eq. 2.
    B = gb.coefficients(X[:20])
    Kr = gb.kernel_(gb.basis_vectors_)
    np.testing.assert_allclose(B @ Kr @ B.T, G[:20] @ G[:20].T, atol=1e-10)


def test_matches_nystroem_formula(rng):
    X = _clusters(200, 3, rng)
    Y = _clusters(50, 3, rng)
    k = RBF(0.5)
    gb = GreedyBasis(n_basis=25, tol=0.0, kernel=k, random_state=0).fit(X)
    Xr = X[gb.basis_indices_]
    expected = k(Y, Xr) @ np.linalg.solve(k(Xr), k(Xr, Y))
    GY = gb.transform(Y)
    np.testing.assert_allclose(GY @ GY.T, expected, atol=1e-9)
    np.testing.assert_allclose(gb.approximation_error(Y), 1.0 - np.diag(expected), atol=1e-9)


def test_greedy_choice_matches_brute_force(rng):
    X = _clusters(80, 2, rng)
    k = RBF(1.0)
    gb = GreedyBasis(n_basis=15, tol=0.0, kernel=k, random_state=3).fit(X)
    idx = list(gb.basis_indices_)
    for j in range(1, len(idx)):
        se = _brute_force_se(X, idx[:j], k)
        se[idx[:j]] = -np.inf
        assert int(np.argmax(se)) == idx[j]
    np.testing.assert_allclose(gb.residuals_, np.maximum(_brute_force_se(X, idx, k), 0),
                               atol=1e-10)


def test_residuals_non_increasing(rng):
    X = _clusters(150, 3, rng)
    previous = None
    prev_idx = None
    for m in range(1, 26):
        gb = GreedyBasis(n_basis=m, tol=0.0, kernel=RBF(0.5), random_state=0).fit(X)
        if previous is not None:
            np.testing.assert_array_equal(gb.basis_indices_[:-1], prev_idx)
            assert np.all(gb.residuals_ <= previous + 1e-12)
            assert gb.mse_ <= previous.mean() + 1e-12
        previous, prev_idx = gb.residuals_, gb.basis_indices_


def test_mse_bound_of_section_3(rng):
    # sum_i se(x_i) <= (n - m) * (smallest residual at which a vector was selected)
    X = _clusters(300, 5, rng)
    gb = GreedyBasis(n_basis=30, tol=0.0, kernel=RBF(0.2), random_state=0).fit(X)
    pivot_se = np.diag(gb.cholesky_) ** 2
    assert gb.residuals_.sum() <= (len(X) - gb.n_basis_) * pivot_se.min() + 1e-12
    assert np.all(np.diff(pivot_se) <= 1e-12)  # greedy: selection residuals decrease


def test_tol_stops_selection(rng):
    X = _clusters(400, 2, rng, spread=0.2)
    gb = GreedyBasis(n_basis=400, tol=1e-3, kernel=RBF(0.5), random_state=0).fit(X)
    assert gb.n_basis_ < 400
    assert gb.residuals_.max() < 1e-3
    assert gb.n_kernel_evaluations_ == 400 * (gb.n_basis_ + 1)


def test_init_max_diag_and_random_state(rng):
    X = rng.normal(size=(60, 3))
    X[17] *= 5
    gb = GreedyBasis(n_basis=5, kernel=Polynomial(2, 1.0), init="max-diag").fit(X)
    assert gb.basis_indices_[0] == 17
    a = GreedyBasis(n_basis=5, kernel=RBF(1.0), random_state=4).fit(X).basis_indices_
    b = GreedyBasis(n_basis=5, kernel=RBF(1.0), random_state=4).fit(X).basis_indices_
    np.testing.assert_array_equal(a, b)
    idx, G, se = greedy_basis(X, RBF(1.0), 5, random_state=4)
    np.testing.assert_array_equal(idx, a)
    assert G.shape == (60, 5) and se.shape == (60,)


@pytest.mark.parametrize("tol", [0.0, 1e-2])
def test_partial_fit_close_to_batch(rng, tol):
    X = _clusters(2000, 4, rng)
    k = RBF(0.3)
    batch = GreedyBasis(n_basis=60, tol=tol, kernel=k, random_state=0).fit(X)
    online = GreedyBasis(n_basis=60, tol=tol, kernel=k, random_state=0)
    for chunk in np.array_split(X, 4):
        online.partial_fit(chunk)
    assert online.n_samples_seen_ == 2000
    np.testing.assert_array_equal(online.basis_vectors_, X[online.basis_indices_])
    mse_batch = batch.approximation_error(X).mean()
    mse_online = online.approximation_error(X).mean()
    assert mse_online <= 1.10 * mse_batch + 1e-12
    # The running mse_ (each batch measured when seen) bounds the final one.
    # (equal to rounding when the last batch adds nothing: a relative tolerance)
    assert online.mse_ >= mse_online * (1 - 1e-9) - 1e-12
    # The incrementally extended Cholesky factor is that of K_r.
    Kr = k(online.basis_vectors_)
    np.testing.assert_allclose(online.cholesky_ @ online.cholesky_.T, Kr, atol=1e-10)


def test_partial_fit_chunks_of_exact_basis(rng):
    X = rng.normal(size=(30, 2))
    gb = GreedyBasis(n_basis=30, tol=0.0, kernel=RBF(1.0), random_state=0)
    for chunk in np.array_split(X, 3):
        gb.partial_fit(chunk)
    G = gb.transform(X)
    np.testing.assert_allclose(G @ G.T, RBF(1.0)(X), atol=1e-8)


def test_float32_preserved(rng):
    X = rng.normal(size=(100, 3)).astype(np.float32)
    gb = GreedyBasis(n_basis=10, kernel=RBF(0.5), random_state=0)
    assert gb.fit_transform(X).dtype == np.float32
    assert gb.transform(X).dtype == np.float32


def test_default_kernel_is_rbf_scale(rng):
    X = rng.normal(size=(50, 4))
    gb = GreedyBasis(n_basis=5, random_state=0).fit(X)
    assert isinstance(gb.kernel_, RBF)
    np.testing.assert_allclose(gb.kernel_.gamma, 1.0 / (4 * X.var()))


def test_save_load_round_trip(rng, tmp_path):
    X = rng.normal(size=(80, 3))
    gb = GreedyBasis(n_basis=12, kernel=RBF(0.5), random_state=0).fit(X)
    sparsekm.save(gb, tmp_path / "gb.skm")
    gb2 = sparsekm.load(tmp_path / "gb.skm")
    np.testing.assert_array_equal(gb2.transform(X), gb.transform(X))
    np.testing.assert_array_equal(gb2.basis_indices_, gb.basis_indices_)
    assert gb2.mse_ == gb.mse_


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_basis": 0}, r"'n_basis' parameter of GreedyBasis must be an int in the range \[1, inf\)"),
        ({"n_basis": 2.5}, "'n_basis' parameter"),
        ({"tol": -1.0}, r"'tol' parameter of GreedyBasis must be a float in the range \[0.0, inf\)"),
        ({"init": "kmeans"}, "'init' parameter of GreedyBasis must be a str among"),
        ({"kernel": Sigmoid()}, "positive semi-definite"),
    ],
)
def test_bad_parameters(rng, params, match):
    with pytest.raises(ValueError, match=match):
        GreedyBasis(**params).fit(rng.normal(size=(10, 2)))


def test_bad_inputs(rng):
    X = rng.normal(size=(20, 2))
    with pytest.raises(NotFittedError):
        GreedyBasis().transform(X)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        GreedyBasis().fit(Xn)
    gb = GreedyBasis(n_basis=3, random_state=0).fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but GreedyBasis is expecting 2"):
        gb.transform(rng.normal(size=(4, 3)))
    with pytest.raises(ValueError, match="X has 3 features"):
        gb.partial_fit(rng.normal(size=(4, 3)))
    with pytest.raises(TypeError, match="'kernel' parameter of GreedyBasis"):
        GreedyBasis(kernel=3).fit(X)


def test_blocked_lookahead_selects_the_same_pivots(rng):
    from sparsekm.approx import pivoted_cholesky

    X = _clusters(1500, 3, rng)
    k = RBF(0.5)
    plain = pivoted_cholesky(X, k, 120, lookahead=0, first=7)
    blocked = pivoted_cholesky(X, k, 120, lookahead=8, first=7)
    np.testing.assert_array_equal(blocked[0], plain[0])
    np.testing.assert_allclose(blocked[1], plain[1], atol=1e-12)
    np.testing.assert_allclose(blocked[2], plain[2], atol=1e-12)
    assert blocked[3] == plain[3] == 1500 * 120


def test_random_pivoting_blocked_matches_distribution(rng):
    # Rejection sampling in blocks draws pivots from the same law as the plain
    # sampler: compare the first pivots after a fixed greedy start, over many seeds.
    from sparsekm.approx import pivoted_cholesky

    X = _clusters(300, 2, rng, n_centers=3)
    k = RBF(0.5)
    _, L, se, _ = pivoted_cholesky(X, k, 3, lookahead=0, first=0)
    p_expected = se / se.sum()
    bins = np.digitize(X[:, 0], np.quantile(X[:, 0], [0.2, 0.4, 0.6, 0.8]))
    counts = np.zeros(300)
    for seed in range(1000):
        piv, *_ = pivoted_cholesky(X, k, 1, pivoting="random", random_state=seed, lookahead=4,
                                   factor=L, residuals=se)
        counts[piv[0]] += 1
    # total-variation distance over five bins of points (sampling noise ~ 0.03)
    emp = np.bincount(bins, weights=counts / 1000, minlength=5)
    exact = np.bincount(bins, weights=p_expected, minlength=5)
    assert 0.5 * np.abs(emp - exact).sum() < 0.07
    assert np.all(counts[se == 0] == 0)


def test_random_pivoting_is_valid_factorisation(rng):
    from sparsekm.approx import pivoted_cholesky

    X = _clusters(1200, 3, rng)
    k = RBF(0.5)
    piv, L, se, _ = pivoted_cholesky(X, k, 80, pivoting="random", random_state=0, lookahead=8)
    assert len(set(piv.tolist())) == 80
    Xr = X[piv]
    expected = k(X, Xr) @ np.linalg.solve(k(Xr), k(Xr, X))
    np.testing.assert_allclose(L.T @ L, expected, atol=1e-8)
    np.testing.assert_allclose(se, np.maximum(1.0 - np.diag(expected), 0), atol=1e-8)
    a = GreedyBasis(n_basis=20, kernel=k, pivoting="random", random_state=3).fit(X)
    b = GreedyBasis(n_basis=20, kernel=k, pivoting="random", random_state=3).fit(X)
    np.testing.assert_array_equal(a.basis_indices_, b.basis_indices_)
    with pytest.raises(ValueError, match="'pivoting' parameter of GreedyBasis"):
        GreedyBasis(pivoting="best").fit(X)


def test_random_pivoting_blocked_equals_plain_in_law(rng):
    # Several pivots inside one block (rejections happen): the residual left after
    # 6 random pivots has the same law with and without the blocked sampler.
    from sparsekm.approx import pivoted_cholesky

    X = _clusters(300, 2, rng, n_centers=4)
    k = RBF(2.0)
    stats = {}
    for la in (0, 8):
        stats[la] = np.array([
            pivoted_cholesky(X, k, 6, pivoting="random", random_state=s, lookahead=la)[2].sum()
            for s in range(300)
        ])
    diff = stats[8].mean() - stats[0].mean()
    se_diff = np.sqrt(stats[8].var() / 300 + stats[0].var() / 300)
    assert abs(diff) < 4 * se_diff


@pytest.mark.parametrize("random_state", [0, 7])
def test_random_pivoting_stream_survives_save_load(tmp_path, random_state):
    """partial_fit after save/load draws the same random pivots as without them."""
    import sparsekm

    X = np.random.default_rng(5).normal(size=(300, 4))
    gb = GreedyBasis(n_basis=60, kernel=RBF(0.5), pivoting="random", tol=0.0,
                     random_state=random_state).fit(X[:150])
    assert gb.random_stream_["key"].shape == (624,)
    sparsekm.save(gb, tmp_path / "gb.skm")
    back = sparsekm.load(tmp_path / "gb.skm")
    gb.partial_fit(X[150:])
    back.partial_fit(X[150:])
    assert gb.n_basis_ > 30  # the second batch added random pivots
    np.testing.assert_array_equal(back.basis_indices_, gb.basis_indices_)
    np.testing.assert_array_equal(back.cholesky_, gb.cholesky_)
    # the greedy rule uses no random stream: nothing of it in the file
    assert not hasattr(GreedyBasis(n_basis=10, kernel=RBF(0.5)).fit(X), "random_stream_")
