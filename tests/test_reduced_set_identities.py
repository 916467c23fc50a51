"""Identities of the reduced-set mathematics (Proposition 8, eq. 6, eq. 60-61), each
checked against an independent computation: the normal equations, the exact quadratic
around the optimum, a direct feature-space distance for the linear kernel, and the
selections that keep every term reproducing ``Psi``."""

import numpy as np
import pytest

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF, InverseMultiquadric, Linear, Polynomial
from sparsekm.reduced_set import (
    ReducedSetWarning,
    approximation_error,
    construct,
    exact_reduction,
    optimal_coefficients,
    optimal_threshold,
    reduce_expansion,
    select_backward,
    select_kpca,
    select_l1,
    stack_results,
)

KERNELS = {"rbf": RBF(0.5), "poly3": Polynomial(degree=3, coef0=1.0, gamma=0.5),
           "poly2": Polynomial(degree=2, coef0=1.0),
           "imq": InverseMultiquadric()}
# the methods docs/api.md lists for reduce_expansion (stated here, not read from the code)
METHODS = ["construct", "construct+refine", "select-kpca", "select-backward", "select-l1"]


def _psi(seed=0, n=20, d=3, n_out=None, kernel=None):
    rng = np.random.default_rng(seed)
    coef = rng.normal(size=(n,) if n_out is None else (n, n_out))
    return KernelExpansion(rng.normal(size=(n, d)), coef, kernel or RBF(0.5),
                           0.2 if n_out is None else np.zeros(n_out))


def _sq_dist_direct(psi, Z, beta):
    """||Psi - sum_j beta_j Phi(z_j)||^2 from the full Gram matrix of [X; Z] (eq. 6)."""
    X = np.asarray(psi.vectors)
    W = np.concatenate([np.asarray(psi.coef).reshape(len(X), -1),
                        -np.asarray(beta).reshape(len(Z), -1)])
    K = psi.kernel(np.concatenate([X, Z]))
    return np.einsum("ij,ij->j", W, K @ W)


@pytest.mark.parametrize("n_out", [None, 3], ids=["single", "multi"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_optimal_coefficients_satisfy_the_normal_equations(name, n_out):
    """Proposition 8: beta = (K^z)^-1 K^zx alpha, i.e. K^z beta = K^zx alpha."""
    k = KERNELS[name]
    psi = _psi(1, n_out=n_out, kernel=k)
    Z = np.random.default_rng(2).normal(size=(5, 3))
    beta = optimal_coefficients(psi, Z)
    assert beta.shape == ((5,) if n_out is None else (5, n_out))
    lhs = k(Z) @ beta
    rhs = k(Z, np.asarray(psi.vectors)) @ np.asarray(psi.coef)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("n_out", [None, 2], ids=["single", "multi"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_error_grows_by_the_exact_quadratic_around_the_optimum(name, n_out):
    """At the optimum the gradient vanishes: E(beta + t) - E(beta) = t^T K^z t, exactly."""
    k = KERNELS[name]
    psi = _psi(3, n_out=n_out, kernel=k)
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(4, 3))
    beta = optimal_coefficients(psi, Z)
    e0 = _sq_dist_direct(psi, Z, beta)
    for _ in range(3):
        t = 0.1 * rng.normal(size=beta.shape)
        grow = np.einsum("ij,ij->j", t.reshape(4, -1), k(Z) @ t.reshape(4, -1))
        np.testing.assert_allclose(_sq_dist_direct(psi, Z, beta + t) - e0, grow,
                                   rtol=1e-6, atol=1e-9)
        assert np.all(grow > 0)


@pytest.mark.parametrize("m", [1, 2, 4])
def test_distance_through_the_kernel_equals_the_direct_one_for_a_linear_kernel(m):
    """For k(x, y) = x.y, Psi = sum_i alpha_i x_i = w: ||Psi - Psi'||^2 = ||w - w'||^2."""
    rng = np.random.default_rng(m)
    psi = KernelExpansion(rng.normal(size=(15, 4)), rng.normal(size=15), Linear())
    Z, beta = rng.normal(size=(m, 4)), rng.normal(size=m)
    red = KernelExpansion(Z, beta, Linear())
    w = np.asarray(psi.coef) @ np.asarray(psi.vectors)
    np.testing.assert_allclose(approximation_error(psi, red), np.sum((w - beta @ Z) ** 2),
                               rtol=1e-10)
    np.testing.assert_allclose(psi.norm2(), w @ w, rtol=1e-10)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_optimal_linear_reduced_set_is_the_projection_of_w(m):
    """Linear kernel: the optimal sum_j beta_j z_j is the orthogonal projection of w onto
    span{z_j} (least squares in R^d, computed with numpy alone)."""
    rng = np.random.default_rng(10 + m)
    psi = KernelExpansion(rng.normal(size=(12, 4)), rng.normal(size=12), Linear())
    Z = rng.normal(size=(m, 4))
    w = np.asarray(psi.coef) @ np.asarray(psi.vectors)
    ref = np.linalg.lstsq(Z.T, w, rcond=None)[0]
    np.testing.assert_allclose(optimal_coefficients(psi, Z), ref, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("n_out", [None, 2], ids=["single", "multi"])
@pytest.mark.parametrize("name", ["rbf", "imq"])
def test_the_expansions_own_vectors_give_back_its_coefficients(name, n_out):
    """Strictly positive definite kernel, distinct x_i: Z = X gives beta = alpha, error 0."""
    psi = _psi(5, n=10, n_out=n_out, kernel=KERNELS[name])
    beta = optimal_coefficients(psi, np.asarray(psi.vectors))
    np.testing.assert_allclose(beta, np.asarray(psi.coef), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("select", [
    lambda p, n: select_kpca(p, n), lambda p, n: select_backward(p, n),
    lambda p, n: select_l1(p, n_vectors=n)], ids=["kpca", "backward", "l1"])
def test_a_selection_keeping_every_term_reproduces_psi(select):
    psi = _psi(6, n=8)
    res = select(psi, psi.n_terms)
    X = np.random.default_rng(7).normal(size=(30, 3))
    np.testing.assert_allclose(res.expansion.decision_function(X), psi.decision_function(X),
                               rtol=1e-6, atol=1e-8)
    assert res.objective <= 1e-8 * psi.norm2()
    np.testing.assert_array_equal(np.sort(res.support), np.arange(psi.n_terms))


@pytest.mark.parametrize("method", ["select-kpca", "select-backward", "select-l1"])
def test_asking_for_more_vectors_than_terms_warns_and_keeps_all(method):
    psi = _psi(8, n=6)
    with pytest.warns(ReducedSetWarning, match="has only 6 terms"):
        res = reduce_expansion(psi, 9, method=method)
    assert res.expansion.n_terms == 6 and res.objective <= 1e-8 * psi.norm2()


@pytest.mark.parametrize("method", METHODS)
def test_reported_objective_is_the_distance_computed_independently(method):
    """result.objective = ||Psi - Psi'||^2 of the returned expansion (eq. 6, from the full
    Gram matrix), and no larger than ||Psi||^2 (beta = 0 is feasible)."""
    psi = _psi(9, n=25)
    kw = dict(random_state=0, n_init=2, max_iter=50) if method.startswith("construct") else {}
    if method == "construct+refine":
        kw["refine_max_iter"] = 30
    res = reduce_expansion(psi, 4, method=method, **kw)
    red = res.expansion
    direct = _sq_dist_direct(psi, np.asarray(red.vectors), np.asarray(red.coef))[0]
    np.testing.assert_allclose(res.objective, direct, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(res.norm2, psi.norm2(), rtol=1e-10)
    assert 0.0 <= res.relative_objective <= 1.0 + 1e-12
    assert red.n_terms <= 4


@pytest.mark.parametrize("n", [2, 4, 6])
def test_construction_error_never_grows_with_another_vector(n):
    """Each added z_j comes with the Proposition-8 coefficients of all vectors so far, so
    the path of ||Psi - Psi'||^2 cannot increase (a margin for rounding)."""
    psi = _psi(11, n=30)
    path = np.asarray(construct(psi, n, random_state=0, n_init=2, max_iter=50).objective_path)
    assert path.shape[0] >= 1
    assert np.all(np.diff(path) <= 1e-9 * psi.norm2())


@pytest.mark.parametrize("select", [select_kpca, select_backward], ids=["kpca", "backward"])
def test_selection_error_never_shrinks_with_a_removal(select):
    psi = _psi(12, n=15)
    path = np.asarray(select(psi, 3).objective_path)
    assert path.shape[0] >= 1 and np.all(np.diff(path) >= -1e-9 * psi.norm2())


@pytest.mark.parametrize("d", [1, 2, 3])
def test_exact_reduction_keeps_at_most_the_dimension_under_a_linear_kernel(d):
    """Eq. 60-61: under k(x, y) = x.y the Gram matrix of 7 vectors in R^d has rank d; all
    but d vectors go at zero error."""
    rng = np.random.default_rng(d)
    psi = KernelExpansion(rng.normal(size=(7, d)), rng.normal(size=7), Linear())
    res = exact_reduction(psi)
    assert res.expansion.n_terms == d
    assert approximation_error(psi, res.expansion) <= 1e-9 * psi.norm2()


@pytest.mark.parametrize("scores, y, expected", [
    ([-2.0, -1.0, 1.0, 2.0], [False, False, True, True], 0.0),   # middle of (-1, 1)
    ([0.0, 1.0, 3.0, 4.0], [False, False, True, True], -2.0),    # middle of (1, 3)
    ([-3.0, -2.0, -1.0], [False, True, True], 2.5),              # middle of (-3, -2)
    ([5.0, 6.0, 7.0, 9.0], [False, False, False, True], -8.0),   # middle of (7, 9)
])
def test_optimal_threshold_reference_values(scores, y, expected):
    b = optimal_threshold(np.array(scores), np.array(y))
    assert b == pytest.approx(expected)
    assert np.all((np.array(scores) + b > 0) == np.array(y))


@pytest.mark.parametrize("Z, exc, match", [
    (np.full((2, 3), np.nan), ValueError, "Z"),
    (np.ones((2, 4)), ValueError, "feature"),
    (np.ones(3), ValueError, "Z"),
])
def test_optimal_coefficients_names_bad_vectors(Z, exc, match):
    with pytest.raises(exc, match=match):
        optimal_coefficients(_psi(13), Z)


def test_optimal_coefficients_refuses_what_is_no_expansion():
    with pytest.raises(TypeError, match="KernelExpansion"):
        optimal_coefficients(np.ones((3, 3)), np.ones((2, 3)))


def test_duplicate_vectors_warn_and_still_solve_the_normal_equations():
    """Singular K^z: the minimum-norm solution (pseudo-inverse) still satisfies
    K^z beta = K^zx alpha, and the two copies share the weight equally."""
    psi = _psi(14)
    z = np.random.default_rng(15).normal(size=(1, 3))
    Z = np.concatenate([z, z, np.random.default_rng(16).normal(size=(1, 3))])
    with pytest.warns(ReducedSetWarning):
        beta = optimal_coefficients(psi, Z)
    k = psi.kernel
    np.testing.assert_allclose(k(Z) @ beta, k(Z, np.asarray(psi.vectors)) @ psi.coef,
                               rtol=1e-6, atol=1e-8)
    assert beta[0] == pytest.approx(beta[1], rel=1e-6)


def test_stacked_results_decide_as_the_single_results():
    psis = [_psi(20 + i, n=12) for i in range(3)]
    results = [select_backward(p, 3) for p in psis]
    stacked = stack_results(results)
    X = np.random.default_rng(30).normal(size=(20, 3))
    want = np.column_stack([r.expansion.decision_function(X) for r in results])
    np.testing.assert_allclose(stacked.expansion.decision_function(X), want, rtol=1e-10,
                               atol=1e-12)


# -- the distance of eq. 6 is a metric ------------------------------------------------------
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_distance_to_itself_is_zero_and_symmetric(name):
    a, b = _psi(40, kernel=KERNELS[name]), _psi(41, n=7, kernel=KERNELS[name])
    assert approximation_error(a, a) == 0.0
    np.testing.assert_allclose(approximation_error(a, b), approximation_error(b, a),
                               rtol=1e-10)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_feature_space_distance_obeys_the_triangle_inequality(name):
    a, b, c = (_psi(50 + i, n=6 + i, kernel=KERNELS[name]) for i in range(3))
    d = lambda p, q: np.sqrt(approximation_error(p, q))  # noqa: E731
    assert d(a, c) <= d(a, b) + d(b, c) + 1e-12


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_norm_is_the_quadratic_form_of_the_gram_matrix(name):
    psi = _psi(60, n=9, kernel=KERNELS[name])
    a = np.asarray(psi.coef)
    np.testing.assert_allclose(psi.norm2(), a @ psi.kernel(np.asarray(psi.vectors)) @ a,
                               rtol=1e-10)


# -- one vector that can be exact ----------------------------------------------------------
@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("name", ["rbf", "imq"])
def test_two_copies_of_one_vector_reduce_to_it_exactly(name, sign):
    """Psi = a1 Phi(x) + a2 Phi(x): the one-term optimum is z = x, beta = a1 + a2."""
    x = np.array([[0.3, -0.2, 0.5]])
    psi = KernelExpansion(np.vstack([x, x]), sign * np.array([0.7, 0.6]), KERNELS[name])
    res = construct(psi, 1, random_state=0, n_init=3, max_iter=300)
    np.testing.assert_allclose(np.asarray(res.expansion.vectors), x, atol=1e-4)
    np.testing.assert_allclose(res.expansion.coef, [sign * 1.3], rtol=1e-6)
    assert res.objective <= 1e-8


@pytest.mark.parametrize("d", [2, 3, 5])
def test_a_linear_expansion_is_one_vector(d):
    """k(x, y) = x.y: Psi = w, and one term beta z = w reproduces it."""
    rng = np.random.default_rng(d)
    psi = KernelExpansion(rng.normal(size=(10, d)), rng.normal(size=10), Linear())
    res = construct(psi, 1, random_state=0, n_init=2)
    red = res.expansion
    w = np.asarray(psi.coef) @ np.asarray(psi.vectors)
    # to the one-term solver's stopping tolerance (an L-BFGS over z, not a closed form)
    np.testing.assert_allclose(np.asarray(red.coef) @ np.asarray(red.vectors), w, rtol=2e-3)
    assert res.relative_objective <= 1e-5


# -- refusals ------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["select-kpca", "select-backward", "select-l1",
                                    "construct"])
def test_a_kernel_that_is_no_inner_product_is_refused(method):
    from sparsekm.kernels import Sigmoid

    psi = _psi(70, n=8, kernel=Sigmoid(1.0, 0.0))
    with pytest.raises(ValueError, match="positive semi-definite"):
        reduce_expansion(psi, 2, method=method)


@pytest.mark.parametrize("method, option", [
    ("construct", {"lam": 0.1}), ("select-kpca", {"c": "uniform"}),
    ("select-backward", {"n_sweeps": 2}), ("construct", {"refine_max_iter": 10}),
    ("select-l1", {"step": "orthogonal"}),
])
def test_an_option_of_another_method_is_refused_not_ignored(method, option):
    with pytest.raises(ValueError, match="would be ignored"):
        reduce_expansion(_psi(71), 2, method=method, **option)


@pytest.mark.parametrize("n_vectors", [0, -2, 1.5])
def test_sizes_below_one_or_fractional_are_refused(n_vectors):
    with pytest.raises((ValueError, TypeError), match="n_vectors"):
        reduce_expansion(_psi(72), n_vectors, method="select-backward")


def test_an_unknown_method_is_named():
    with pytest.raises(ValueError, match="magic"):
        reduce_expansion(_psi(73), 2, method="magic")


@pytest.mark.parametrize("lam_scale, most", [(1e6, 1), (1e-9, 20)])
def test_l1_penalty_trades_vectors_for_error(lam_scale, most):
    """A huge penalty keeps the best single vector; a vanishing one keeps the error ~0."""
    psi = _psi(74)
    if most == 1:
        with pytest.warns(ReducedSetWarning, match="no vector was selected"):
            res = select_l1(psi, lam=lam_scale * psi.norm2())
    else:
        res = select_l1(psi, lam=lam_scale * psi.norm2())
    assert 1 <= res.expansion.n_terms <= most
    if most == 1:
        assert res.objective < psi.norm2()
    else:
        assert res.relative_objective < 1e-3


# -- Proposition 8 is linear in alpha and equivariant in Z -------------------------------
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_optimal_coefficients_scale_with_the_expansion(name):
    psi = _psi(80, kernel=KERNELS[name])
    Z = np.random.default_rng(81).normal(size=(4, 3))
    scaled = KernelExpansion(psi.vectors, -2.5 * np.asarray(psi.coef), psi.kernel)
    np.testing.assert_allclose(optimal_coefficients(scaled, Z),
                               -2.5 * optimal_coefficients(psi, Z), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_permuting_the_vectors_permutes_the_coefficients(name):
    psi = _psi(82, kernel=KERNELS[name])
    Z = np.random.default_rng(83).normal(size=(5, 3))
    perm = np.array([3, 0, 4, 1, 2])
    np.testing.assert_allclose(optimal_coefficients(psi, Z[perm]),
                               optimal_coefficients(psi, Z)[perm], rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_output_column_is_its_own_single_output_problem(name):
    psi = _psi(84, n_out=3, kernel=KERNELS[name])
    Z = np.random.default_rng(85).normal(size=(4, 3))
    beta = optimal_coefficients(psi, Z)
    for k in range(3):
        single = KernelExpansion(psi.vectors, np.asarray(psi.coef)[:, k], psi.kernel)
        np.testing.assert_allclose(beta[:, k], optimal_coefficients(single, Z), rtol=1e-8,
                                   atol=1e-12)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_distance_scales_with_the_square_of_the_coefficients(name):
    a, b = _psi(86, kernel=KERNELS[name]), _psi(87, n=5, kernel=KERNELS[name])
    s = lambda p: KernelExpansion(p.vectors, 3.0 * np.asarray(p.coef), p.kernel)  # noqa: E731
    np.testing.assert_allclose(approximation_error(s(a), s(b)),
                               9.0 * approximation_error(a, b), rtol=1e-9)


@pytest.mark.parametrize("method", ["construct", "select-kpca", "select-backward"])
def test_reduce_many_is_reduce_expansion_one_by_one(method):
    """Documented: reduce_many equals reduce_expansion per expansion with the same seeds;
    without randomness (the selections) the seeds do not matter."""
    from sparsekm.reduced_set import reduce_many

    psis = [_psi(90 + i, n=10) for i in range(3)]
    kw = dict(n_init=2, max_iter=30) if method == "construct" else {}
    many = reduce_many(psis, 3, method=method, random_state=0, **kw)
    X = np.random.default_rng(95).normal(size=(15, 3))
    for psi, res in zip(psis, many, strict=True):
        assert res.expansion.n_terms <= 3
        if method != "construct":
            one = reduce_expansion(psi, 3, method=method)
            np.testing.assert_allclose(res.expansion.decision_function(X),
                                       one.expansion.decision_function(X), rtol=1e-10)
        np.testing.assert_allclose(res.objective, approximation_error(psi, res.expansion),
                                   rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("y, b0, expected", [
    ([True, True], 0.0, 2.0),           # all positive: below the lowest score by half the range
    ([False, False], 0.0, -2.0),        # all negative: above the highest
])
def test_optimal_threshold_for_one_class(y, b0, expected):
    assert optimal_threshold(np.array([-1.0, 1.0]), np.array(y), b0=b0) == pytest.approx(
        expected)


@pytest.mark.parametrize("b0, expected", [(0.0, -0.5), (-3.0, -2.5), (-1.4, -0.5),
                                          (-1.6, -2.5)])
def test_optimal_threshold_ties_go_to_the_interval_nearest_b0(b0, expected):
    """Scores 0, 1, 2, 3 labelled -, +, -, +: one error at -b in (0, 1) or (2, 3)."""
    scores, y = np.array([0.0, 1.0, 2.0, 3.0]), np.array([False, True, False, True])
    b = optimal_threshold(scores, y, b0=b0)
    assert b == pytest.approx(expected)
    assert np.count_nonzero((scores + b > 0) != y) == 1


@pytest.mark.parametrize("scores", [np.array([0.0, np.nan]), np.ones((2, 2))])
def test_optimal_threshold_refuses_bad_scores(scores):
    with pytest.raises(ValueError, match="scores"):
        optimal_threshold(scores, np.array([True, False]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_refitted_intercept_makes_no_more_training_errors(seed):
    from sparsekm.reduced_set import refit_intercept

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int)
    psi = KernelExpansion(X[:8], rng.normal(size=8), RBF(0.5), 1.5)
    refit = refit_intercept(psi, X, y)
    errors = lambda p: np.count_nonzero((p.decision_function(X) > 0) != (y == 1))  # noqa: E731
    assert errors(refit) <= errors(psi)
    np.testing.assert_array_equal(refit.coef, psi.coef)
    for shift in (-0.3, 0.3):  # and it is a minimum among nearby thresholds
        moved = KernelExpansion(psi.vectors, psi.coef, psi.kernel, refit.intercept + shift)
        assert errors(refit) <= errors(moved)
