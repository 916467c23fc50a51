"""Reduced sets against answers known in closed form.

* Homogeneous quadratic kernel ``k(x, y) = (x.y)^2``: ``Phi(x) = x x^T`` with the
  Frobenius inner product, so ``Psi = sum_i alpha_i Phi(x_i)`` is the symmetric matrix
  ``S = sum_i alpha_i x_i x_i^T``. Burges (1996): the best reduced set of ``m`` vectors
  is ``m`` unit eigenvectors of ``S`` with the largest ``|lambda|``, ``beta_j = lambda_j``,
  and ``||Psi - Psi'||^2`` is the sum of the other ``lambda^2`` (Eckart-Young).
* Gaussian kernel, ``Psi = Phi(-a) + Phi(a)`` in one dimension: the one-term
  objective ``||Psi||^2 - (Psi . Phi(z))^2`` is, for ``gamma a^2 < 1/2``, smallest at the
  midpoint ``z = 0`` (``sum_i k(x_i, z)`` is unimodal), giving
  ``2 + 2 e^{-4 gamma a^2} - 4 e^{-2 gamma a^2}``; far apart, the best ``z`` sits on one
  of the two points and the error is ``1`` up to ``e^{-4 gamma a^2}``.
"""

import numpy as np
import pytest

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF, Polynomial
from sparsekm.reduced_set import (
    approximation_error,
    construct,
    optimal_coefficients,
    reduce_expansion,
    select_backward,
)


@pytest.fixture(scope="module")
def quadratic():
    """``Psi`` for ``(x.y)^2`` in 4 dimensions and the eigen-decomposition of its ``S``."""
    rng = np.random.default_rng(21)
    X = rng.normal(size=(12, 4))
    alpha = rng.normal(size=12)
    S = (X.T * alpha) @ X
    lam, V = np.linalg.eigh(S)
    order = np.argsort(-np.abs(lam))
    psi = KernelExpansion(X, alpha, Polynomial(degree=2, coef0=0.0, gamma=1.0), 0.0)
    return psi, S, lam[order], V[:, order]


def _matrix(Z, beta):
    """``sum_j beta_j z_j z_j^T``: a quadratic-kernel expansion as its matrix."""
    Z = np.asarray(Z)
    return (Z.T * np.ravel(beta)) @ Z


def test_the_norm_through_the_kernel_is_the_frobenius_norm(quadratic):
    psi, S, _, _ = quadratic
    empty = KernelExpansion(psi.vectors[:1], np.zeros(1), psi.kernel, 0.0)
    assert approximation_error(psi, empty) == pytest.approx(np.sum(S * S), rel=1e-12)


def test_eigenvectors_get_their_eigenvalues_as_optimal_coefficients(quadratic):
    psi, _, lam, V = quadratic
    beta = optimal_coefficients(psi, V[:, :2].T)
    np.testing.assert_allclose(np.ravel(beta), lam[:2], rtol=1e-10)


def test_the_error_of_the_top_eigenvectors_is_the_rest_of_the_spectrum(quadratic):
    psi, S, lam, V = quadratic
    Z = V[:, :2].T
    reduced = KernelExpansion(Z, lam[:2], psi.kernel, 0.0)
    expected = np.sum(lam[2:] ** 2)
    assert approximation_error(psi, reduced) == pytest.approx(expected, rel=1e-10)
    # the same number from the matrices themselves
    R = S - _matrix(Z, lam[:2])
    assert np.sum(R * R) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_construction_with_refinement_reaches_the_eckart_young_bound(quadratic, m):
    psi, _, lam, _ = quadratic
    bound = np.sum(lam[m:] ** 2)
    result = construct(psi, m, refine=True, random_state=0)
    # no m vectors can do better than the bound; the construction gets to it
    assert result.objective >= bound * (1 - 1e-9)
    assert result.objective <= bound * (1 + 1e-4) + 1e-10 * np.sum(lam ** 2)


def test_four_vectors_reproduce_a_four_dimensional_quadratic_exactly(quadratic):
    psi, S, _, _ = quadratic
    result = construct(psi, 4, refine=True, random_state=0)
    assert result.objective <= 1e-8 * np.sum(S * S)
    z = result.expansion
    np.testing.assert_allclose(_matrix(z.vectors, z.coef), S, atol=1e-4 * np.abs(S).max())


def test_more_vectors_than_the_feature_space_has_dimensions_is_refused(quadratic):
    # 12 vectors, but symmetric 4 x 4 matrices span only 10 dimensions: K is singular
    psi, _, _, _ = quadratic
    with pytest.raises(ValueError, match="singular .* Apply exact_reduction first"):
        select_backward(psi, 3)


@pytest.mark.parametrize("method", ["select-kpca", "select-backward", "select-l1"])
def test_a_selection_is_never_better_than_the_bound(quadratic, method):
    psi, _, _, _ = quadratic
    few = KernelExpansion(psi.vectors[:8], psi.coef[:8], psi.kernel, 0.0)  # 8 < 10
    S = _matrix(few.vectors, few.coef)
    lam = np.linalg.eigvalsh(S)
    lam = lam[np.argsort(-np.abs(lam))]
    for m in (2, 3, 4):
        result = reduce_expansion(few, m, method=method)
        assert result.objective >= np.sum(lam[m:] ** 2) * (1 - 1e-9)
        # and the reported objective is the matrices' own distance
        R = S - _matrix(result.expansion.vectors, result.expansion.coef)
        assert result.objective == pytest.approx(np.sum(R * R), rel=1e-8)


def test_the_inhomogeneous_quadratic_kernel_is_its_explicit_feature_map():
    # (x.y + 1)^2 = <x x^T, y y^T> + 2 x.y + 1: Phi(x) = (x x^T, sqrt(2) x, 1)
    rng = np.random.default_rng(4)
    kernel = Polynomial(degree=2, coef0=1.0, gamma=1.0)
    a = KernelExpansion(rng.normal(size=(6, 3)), rng.normal(size=6), kernel, 0.0)
    b = KernelExpansion(rng.normal(size=(4, 3)), rng.normal(size=4), kernel, 0.0)

    def features(e):
        Z, c = np.asarray(e.vectors), np.ravel(e.coef)
        return np.concatenate([_matrix(Z, c).ravel(), np.sqrt(2) * c @ Z, [c.sum()]])

    direct = np.sum((features(a) - features(b)) ** 2)
    assert approximation_error(a, b) == pytest.approx(direct, rel=1e-10)


def test_the_reported_norm_is_the_gram_quadratic_form():
    rng = np.random.default_rng(6)
    X, alpha = rng.normal(size=(9, 2)), rng.normal(size=9)
    psi = KernelExpansion(X, alpha, RBF(0.7), 0.0)
    K = np.exp(-0.7 * ((X[:, None] - X[None]) ** 2).sum(-1))
    result = construct(psi, 3, random_state=0)
    assert result.norm2 == pytest.approx(alpha @ K @ alpha, rel=1e-12)
    assert result.relative_objective == pytest.approx(result.objective / (alpha @ K @ alpha))


def test_rescaling_the_inputs_with_the_width_rescales_the_reduced_set():
    # exp(-gamma |x - y|^2) = exp(-(gamma / c^2) |c x - c y|^2)
    rng = np.random.default_rng(9)
    X, alpha = rng.normal(size=(12, 2)), rng.normal(size=12)
    r1 = construct(KernelExpansion(X, alpha, RBF(0.5), 0.0), 3, refine=True, random_state=0)
    r2 = construct(KernelExpansion(3 * X, alpha, RBF(0.5 / 9), 0.0), 3, refine=True,
                   random_state=0)
    assert r2.objective == pytest.approx(r1.objective, rel=1e-5)
    # (phase 2 stops at a relative change of the objective: the vectors agree to ~1e-3)
    np.testing.assert_allclose(r2.expansion.vectors / 3, r1.expansion.vectors, atol=5e-3)


def _two_gaussians(a, gamma):
    return KernelExpansion(np.array([[-a], [a]]), np.array([1.0, 1.0]), RBF(gamma), 0.0)


def test_two_close_gaussians_are_best_replaced_at_their_midpoint():
    gamma, a = 1.0, 0.3
    result = construct(_two_gaussians(a, gamma), 1, refine=True, random_state=0)
    expected = 2 + 2 * np.exp(-4 * gamma * a * a) - 4 * np.exp(-2 * gamma * a * a)
    assert result.objective == pytest.approx(expected, rel=1e-6)
    assert abs(float(result.expansion.vectors[0, 0])) < 1e-4
    # beta = Psi . Phi(z) / k(z, z) = 2 e^{-gamma a^2}
    assert float(np.ravel(result.expansion.coef)[0]) == pytest.approx(
        2 * np.exp(-gamma * a * a), rel=1e-5)


def test_two_distant_gaussians_are_best_replaced_by_one_of_them():
    gamma, a = 1.0, 2.0  # k(-a, a) = e^{-16}
    result = construct(_two_gaussians(a, gamma), 1, refine=True, random_state=0)
    assert result.objective == pytest.approx(1.0, abs=1e-6)
    assert abs(abs(float(result.expansion.vectors[0, 0])) - a) < 1e-3
    # the midpoint, where the close pair's optimum lies, is far worse here
    mid = 2 + 2 * np.exp(-4 * gamma * a * a) - 4 * np.exp(-2 * gamma * a * a)
    assert mid > 1.9


@pytest.mark.parametrize("method", ["construct+refine", "select-backward"])
def test_a_rotation_of_the_input_space_rotates_the_reduced_set(method):
    # k(Qx, Qy) = k(x, y) for the Gaussian kernel: the same problem, rotated
    rng = np.random.default_rng(8)
    X, alpha = rng.normal(size=(15, 3)), rng.normal(size=15)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    psi = KernelExpansion(X, alpha, RBF(0.5), 0.0)
    turned = KernelExpansion(X @ Q.T, alpha, RBF(0.5), 0.0)
    r1 = reduce_expansion(psi, 4, method=method, random_state=0)
    r2 = reduce_expansion(turned, 4, method=method, random_state=0)
    # (phase 1 stops its fixed-point steps at a tolerance: equal up to that)
    assert r2.objective == pytest.approx(r1.objective, rel=1e-5)
    np.testing.assert_allclose(r2.expansion.vectors, r1.expansion.vectors @ Q.T, atol=1e-3)
