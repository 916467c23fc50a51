"""The reduced-set solvers against their own equations, recomputed here: the one-term
step (eq. 18-19) on expansions of one vector, the kernel-PCA elimination (eq. 64-65),
the L1 selection's optimality conditions (eq. 66), Proposition 8 (re-fitting never
hurts, is linear in alpha, and splits over duplicate vectors), and exact answers for an
affine kernel, a duplicated vector and an expansion refined against itself."""

import numpy as np
import pytest

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF, Polynomial
from sparsekm.reduced_set import (
    approximation_error,
    construct,
    exact_reduction,
    one_term_shared,
    optimal_coefficients,
    refine,
    select_kpca,
    select_l1,
)

from ._small_cases import rbf_expansion

X0 = np.array([[0.3, -0.2, 0.5]])


@pytest.fixture(scope="module")
def psi():
    return rbf_expansion()


def test_one_gaussian_term_is_its_own_best_one_term_approximation():
    # Psi^k = a_k Phi(x0): z = x0 leaves nothing, so S(z) = sum_k a_k^2 k(x0, x0)
    z, score, _ = one_term_shared(RBF(0.6), X0, np.array([[2.0, -1.0]]), X0 + 0.05,
                                  random_state=np.random.default_rng(0))
    np.testing.assert_allclose(z, X0[0], atol=1e-6)
    assert score == pytest.approx(5.0, rel=1e-9)


def test_one_quadratic_term_is_found_along_its_direction():
    # (x.y)^2: Psi = a x0 x0^T; any z parallel to x0 reproduces it, S = a^2 |x0|^4
    z, score, _ = one_term_shared(Polynomial(2), X0, np.array([[2.0]]), 1.3 * X0 + 0.05,
                                  random_state=np.random.default_rng(0))
    cos = abs(z @ X0[0]) / (np.linalg.norm(z) * np.linalg.norm(X0))
    assert cos == pytest.approx(1.0, abs=1e-6)
    assert score == pytest.approx(4.0 * (X0[0] @ X0[0]) ** 2, rel=1e-6)


def test_of_two_starts_the_better_one_term_is_returned():
    Y = np.array([[-3.0, 0.0, 0.0], [3.0, 0.0, 0.0]])  # far apart: k = e^{-21.6}
    z, score, _ = one_term_shared(RBF(0.6), Y, np.array([[1.0], [2.0]]), Y + 0.01,
                                  random_state=np.random.default_rng(0))
    np.testing.assert_allclose(z, Y[1], atol=1e-5)  # the heavier term
    assert score == pytest.approx(4.0, rel=1e-6)


def _eq64(psi):
    """rho(i, n) = |alpha_n / gamma_n^i|^2 lambda_i for every eigenpair i and term n."""
    lam, V = np.linalg.eigh(psi.kernel(psi.vectors, psi.vectors))
    a = np.ravel(psi.coef)
    return (a[:, None] / V) ** 2 * lam[None, :], V


def test_one_kernel_pca_removal_costs_the_smallest_eq_64_value(psi):
    # removing x_n along eigenvector i changes Psi by (alpha_n / gamma_n^i) sum_j
    # gamma_j^i Phi(x_j), whose squared norm is rho(i, n): the error after one step
    rho, _ = _eq64(psi)
    n = int(np.unravel_index(np.argmin(rho), rho.shape)[0])
    result = select_kpca(psi, psi.n_terms - 1, refit=False)
    assert result.objective == pytest.approx(rho.min(), rel=1e-6)
    assert n not in set(result.support.tolist())


def test_the_others_absorb_the_removed_term_by_eq_65(psi):
    rho, V = _eq64(psi)
    n, i = np.unravel_index(np.argmin(rho), rho.shape)
    a = np.ravel(psi.coef)
    expected = np.delete(a - a[n] * V[:, i] / V[n, i], n)
    result = select_kpca(psi, psi.n_terms - 1, refit=False)
    np.testing.assert_allclose(np.ravel(result.expansion.coef), expected, rtol=1e-8)


def test_the_l1_solution_meets_the_lasso_optimality_conditions(psi):
    # eq. 66 with c = 1: 2 (K (alpha - beta))_i = lam sign(beta_i) on the support and
    # |2 (K (alpha - beta))_i| <= lam off it
    lam = 0.3
    beta = np.ravel(select_l1(psi, lam, tol=1e-10, max_iter=100_000).info["beta_l1"])
    g = 2 * psi.kernel(psi.vectors, psi.vectors) @ (np.ravel(psi.coef) - beta)
    on = beta != 0
    assert on.any() and not on.all()
    np.testing.assert_allclose(g[on], lam * np.sign(beta[on]), atol=1e-4 * lam)
    assert np.all(np.abs(g[~on]) <= lam * (1 + 1e-4))


@pytest.mark.parametrize("select", [lambda e: select_kpca(e, 5, refit=False),
                                    lambda e: select_l1(e, 0.3, refit=False)],
                         ids=["kpca", "l1"])
def test_refitting_the_kept_vectors_never_hurts(psi, select):
    raw = select(psi)
    refitted = KernelExpansion(raw.expansion.vectors,
                               optimal_coefficients(psi, raw.expansion.vectors),
                               psi.kernel, 0.0)
    assert approximation_error(psi, refitted) <= raw.objective * (1 + 1e-12)
    assert approximation_error(psi, refitted) < raw.objective  # strictly, here


def test_proposition_8_is_linear_in_the_coefficients(psi):
    rng = np.random.default_rng(3)
    other = KernelExpansion(psi.vectors, rng.normal(size=psi.n_terms), psi.kernel, 0.0)
    both = KernelExpansion(psi.vectors, np.ravel(psi.coef) + np.ravel(other.coef),
                           psi.kernel, 0.0)
    Z = rng.normal(size=(4, 3))
    np.testing.assert_allclose(optimal_coefficients(both, Z),
                               optimal_coefficients(psi, Z) + optimal_coefficients(other, Z),
                               rtol=1e-8, atol=1e-10)


def test_a_duplicated_vector_shares_its_coefficient_silently(psi):
    Z = np.asarray(psi.vectors[:2])
    single = optimal_coefficients(psi, Z)
    doubled = optimal_coefficients(psi, np.vstack([Z, Z[:1]]), warn=False)  # no warning
    assert doubled[0] + doubled[2] == pytest.approx(single[0], rel=1e-8)
    assert doubled[1] == pytest.approx(single[1], rel=1e-8)


def test_an_affine_kernel_expansion_is_one_vector():
    # (x.y + 1): Phi(x) = (x, 1), Psi = (w, s) with s = sum alpha: z = w / s, beta = s
    rng = np.random.default_rng(5)
    X, a = rng.normal(size=(9, 3)), rng.normal(size=9)
    psi = KernelExpansion(X, a, Polynomial(degree=1, coef0=1.0), 0.0)
    result = construct(psi, 1, refine=True, random_state=0)
    assert result.objective <= 1e-10 * result.norm2
    np.testing.assert_allclose(result.expansion.vectors[0], (a @ X) / a.sum(), rtol=1e-5)


def test_exact_reduction_merges_a_duplicated_vector(psi):
    X, a = np.asarray(psi.vectors[:3]), np.ravel(psi.coef)[:3]
    dup = KernelExpansion(np.vstack([X, X[:1]]), np.r_[a, 1.0], psi.kernel, 0.0)
    result = exact_reduction(dup)
    assert result.expansion.n_terms == 3
    assert approximation_error(dup, result.expansion) <= 1e-10 * result.norm2


def test_refining_an_expansion_against_itself_leaves_it(psi):
    result = refine(psi, psi)
    assert result.objective <= 1e-12 * result.norm2
    assert approximation_error(psi, result.expansion) <= 1e-12 * result.norm2


def test_the_recorded_kernel_pca_error_is_the_distance_of_the_returned_expansion(psi):
    result = select_kpca(psi, 6, refit=False)
    assert len(result.objective_path) == psi.n_terms - 6
    assert result.objective_path[-1] == pytest.approx(
        approximation_error(psi, result.expansion), rel=1e-9)
