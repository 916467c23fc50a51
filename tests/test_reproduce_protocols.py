"""The reproductions' measuring instruments on small inputs, against independent answers:
Franc & Hlavac's Fig. 1 residuals (Eckart-Young for PCA; a greedy basis never beats it),
the choice of C on training data only, the validation split, the quick grids, the
Table I denoising errors (linear PCA with every component is the identity), the toy
curves' sampling and the randomized section's top eigenpairs."""

import inspect

import numpy as np
import pytest

from sparsekm.kernels import RBF
from sparsekm.reproduce import denoising, franc, randomized


@pytest.fixture(scope="module")
def low_rank():
    rng = np.random.default_rng(40)
    Xtr = rng.normal(size=(60, 4)) @ rng.normal(size=(4, 8))  # rank 4 in R^8
    Xte = rng.normal(size=(30, 8))
    return Xtr, Xte


def test_pca_residual_is_the_rest_of_the_spectrum(low_rank):
    Xtr, Xte = low_rank
    s = np.linalg.svd(Xtr, compute_uv=False)
    ms = [1, 2, 3]
    tr, _ = franc._pca_mse(Xtr, Xte, ms)
    np.testing.assert_allclose(tr, [np.sum(s[m:] ** 2) / len(Xtr) for m in ms], rtol=1e-9)


def test_pca_residual_of_unseen_points_is_their_distance_to_the_subspace(low_rank):
    Xtr, Xte = low_rank
    _, te = franc._pca_mse(Xtr, Xte, [4])
    # the training rows span a 4-dimensional subspace: project onto it by least squares
    B = np.linalg.qr(Xtr.T)[0][:, :4]
    R = Xte - Xte @ B @ B.T
    assert te[0] == pytest.approx(np.mean(np.sum(R * R, axis=1)), rel=1e-9)


def test_a_greedy_basis_never_beats_pca_on_the_training_data(low_rank):
    Xtr, Xte = low_rank
    ms = [1, 2, 3, 4]
    pca_tr, _ = franc._pca_mse(Xtr, Xte, ms)
    greedy_tr, _ = franc._greedy_mse(Xtr, Xte, ms, seed=0)
    scale = np.mean(np.sum(Xtr * Xtr, axis=1))
    assert np.all(greedy_tr >= pca_tr - 1e-9 * scale)
    assert np.all(np.diff(greedy_tr) <= 1e-12)
    assert greedy_tr[0] > pca_tr[0]  # one greedy pivot is not the top principal direction
    # at the rank both reproduce the training data
    assert greedy_tr[-1] <= 1e-9 * scale


def test_at_full_rank_greedy_and_pca_project_unseen_points_alike(low_rank):
    # four pivots of a rank-4 training set span its row space, as do four principal
    # directions: the residual of an unseen point is its distance to that one subspace
    Xtr, Xte = low_rank
    _, greedy_te = franc._greedy_mse(Xtr, Xte, [4], seed=0)
    _, pca_te = franc._pca_mse(Xtr, Xte, [4])
    assert greedy_te[0] == pytest.approx(pca_te[0], rel=1e-8)


def test_ripley_C_is_chosen_from_the_grid_on_training_data_only():
    assert list(inspect.signature(franc.ripley_choose_C).parameters) == [
        "X", "y", "kernel", "seed"]
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=50) > 0, 1, -1)
    chosen = franc.ripley_choose_C(X, y, RBF(0.5), seed=0)
    assert chosen["SVM"] in franc.RIPLEY_C_GRID
    assert 1.0 / chosen["KFD"] == pytest.approx(min(franc.RIPLEY_C_GRID,
                                                    key=lambda c: abs(c - 1 / chosen["KFD"])))
    assert franc.ripley_choose_C(X, y, RBF(0.5), seed=0) == chosen


def test_the_validation_split_is_stratified_and_disjoint():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 3))
    y = np.r_[np.ones(60), -np.ones(20)]
    Xf, yf, Xv, yv = franc._validation_data((X, y, None, None), seed=3)
    assert len(yv) == 20 and len(yf) == 60
    assert np.sum(yv == -1) == 5  # a quarter of each class
    rows = {tuple(r) for r in X}
    assert {tuple(r) for r in Xf}.isdisjoint({tuple(r) for r in Xv})
    assert {tuple(r) for r in Xf} | {tuple(r) for r in Xv} == rows


def test_the_quick_grid_is_part_of_the_full_protocol():
    quick, full = franc.ida_grid(True), franc.ida_grid(False)
    for q, f in zip(quick, full):
        assert set(np.asarray(q).tolist()) <= set(np.asarray(f).tolist())
    assert len(full[3]) == 10 and len(full[2]) == 5  # ten evaluation, five selection splits


def test_linear_pca_with_every_component_leaves_the_noise():
    # in R^10 ten components reproduce each test point: its squared distance to the
    # centre is the noise, sigma^2 per coordinate
    sigma, dim = 0.1, 10
    _, _, err_l = denoising.table_denoise_ratios([sigma], [dim], seed=0, n_train=20,
                                                 n_test=33, dim=dim)
    assert err_l[0, 0] == pytest.approx(dim * sigma ** 2, rel=0.15)


def test_the_toy_curves_are_sampled_uniformly_along_their_length():
    rng = np.random.default_rng(5)
    H = denoising._half_circle(400, 0.0, rng)
    angles = np.arctan2(H[:, 1], H[:, 0])
    assert np.all((angles >= 0) & (angles <= np.pi))
    assert np.histogram(angles, bins=4, range=(0, np.pi))[0].min() > 60  # ~100 each
    S = denoising._square(400, 0.0, rng)
    sides = [np.sum(S[:, 1] == -1), np.sum(S[:, 0] == 1), np.sum(S[:, 1] == 1),
             np.sum(S[:, 0] == -1)]
    assert sum(sides) == 400 and min(sides) > 60  # ~100 per side, corners counted once


def test_the_top_eigenpairs_are_numpys():
    rng = np.random.default_rng(6)
    G = rng.normal(size=(40, 40))
    A = G @ G.T
    w, V = randomized._top(A, 3, seed=0)
    ref_w, ref_V = np.linalg.eigh(A)
    np.testing.assert_allclose(w, ref_w[::-1][:3], rtol=1e-8)
    for j in range(3):  # eigenvectors up to sign
        assert abs(V[:, j] @ ref_V[:, -1 - j]) == pytest.approx(1.0, abs=1e-8)
