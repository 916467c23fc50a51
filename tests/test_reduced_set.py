"""Tests of the reduced-set functions (sparsekm.reduced_set)."""

import itertools
import re
import warnings

import numpy as np
import pytest
from scipy import optimize

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF, InverseMultiquadric, Polynomial, Sigmoid
from sparsekm.reduced_set import (
    ReducedSetWarning,
    approximation_error,
    construct,
    exact_reduction,
    one_term_shared,
    optimal_coefficients,
    optimal_threshold,
    refine,
    refit_intercept,
    select_kpca,
    select_l1,
    select_l1_multi,
)
from sparsekm.reduced_set.selection import l1_multi_objective


def _expansion(rng, n=30, d=3, n_out=None, kernel=None):
    X = rng.normal(size=(n, d))
    coef = rng.normal(size=(n,) if n_out is None else (n, n_out))
    return KernelExpansion(X, coef, kernel or RBF(0.5), 0.3 if n_out is None else 0.1)


def _poly2_features(X):
    """Explicit feature map of (x.y + 1)^2."""
    n, d = X.shape
    cols = [np.ones(n)] + [np.sqrt(2) * X[:, i] for i in range(d)]
    cols += [X[:, i] ** 2 for i in range(d)]
    cols += [np.sqrt(2) * X[:, i] * X[:, j] for i, j in itertools.combinations(range(d), 2)]
    return np.column_stack(cols)


# -- Proposition 8 -----------------------------------------------------------------------
def test_optimal_coefficients_match_explicit_least_squares(rng):
    k = Polynomial(degree=2, coef0=1.0)
    psi = _expansion(rng, n=25, d=3, n_out=2, kernel=k)
    Z = rng.normal(size=(4, 3))
    beta = optimal_coefficients(psi, Z)
    Phi_x, Phi_z = _poly2_features(np.asarray(psi.vectors)), _poly2_features(Z)
    np.testing.assert_allclose(Phi_x @ Phi_x.T, k(psi.vectors), rtol=1e-10, atol=1e-10)
    target = Phi_x.T @ np.asarray(psi.coef)  # Psi in the explicit feature space
    ref = np.linalg.lstsq(Phi_z.T, target, rcond=None)[0]
    np.testing.assert_allclose(beta, ref, rtol=1e-8, atol=1e-10)


def test_optimal_coefficients_no_perturbation_improves(rng):
    psi = _expansion(rng, n=40)
    Z = rng.normal(size=(6, 3))
    beta = optimal_coefficients(psi, Z)

    def err(b):
        return approximation_error(psi, KernelExpansion(Z, b, psi.kernel))

    best = err(beta)
    for _ in range(50):
        assert err(beta + 1e-3 * rng.normal(size=beta.shape)) >= best - 1e-12


def test_optimal_coefficients_warns_on_duplicates(rng):
    psi = _expansion(rng)
    Z = rng.normal(size=(4, 3))
    Z = np.vstack([Z, Z[1]])
    with pytest.warns(ReducedSetWarning, match=r"near-duplicate vectors.*\(1, 4\)"):
        beta = optimal_coefficients(psi, Z)
    # The pseudo-inverse still gives an optimal (minimum-norm) solution.
    ref = optimal_coefficients(psi, Z[:4])
    e1 = approximation_error(psi, KernelExpansion(Z, beta, psi.kernel))
    e2 = approximation_error(psi, KernelExpansion(Z[:4], ref, psi.kernel))
    np.testing.assert_allclose(e1, e2, rtol=1e-8)


def test_optimal_coefficients_errors(rng):
    psi = _expansion(rng)
    with pytest.raises(TypeError, match="KernelExpansion"):
        optimal_coefficients(np.ones(3), np.ones((2, 3)))
    with pytest.raises(ValueError, match="Z has 2 features"):
        optimal_coefficients(psi, np.ones((2, 2)))
    with pytest.raises(ValueError, match="Z contains NaN"):
        optimal_coefficients(psi, np.full((2, 3), np.nan))


# -- construction ---------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", [RBF(0.5), InverseMultiquadric(-0.5),
                                    Polynomial(degree=2, coef0=1.0)])
def test_construct_objective_non_increasing(rng, kernel):
    psi = _expansion(rng, n=30, kernel=kernel)
    res = construct(psi, 6, random_state=0)
    path = res.objective_path
    assert 1 <= path.shape[0] <= 6 and res.expansion.n_terms == path.shape[0]
    assert np.all(np.diff(path) <= 1e-10 * psi.norm2())
    assert path[0] < psi.norm2()
    np.testing.assert_allclose(res.objective, approximation_error(psi, res.expansion),
                               rtol=1e-6, atol=1e-9 * psi.norm2())
    if kernel.is_radial:
        assert res.expansion.n_terms == 6


def test_construct_reproducible(rng):
    psi = _expansion(rng)
    a = construct(psi, 4, random_state=3)
    b = construct(psi, 4, random_state=3)
    np.testing.assert_array_equal(a.expansion.vectors, b.expansion.vectors)


def test_construct_exact_copy_when_enough_vectors(rng):
    psi = _expansion(rng, n=10)
    res = construct(psi, 10)
    np.testing.assert_array_equal(res.expansion.vectors, psi.vectors)
    np.testing.assert_array_equal(res.expansion.coef, psi.coef)
    assert res.expansion.intercept == psi.intercept
    assert res.objective == 0.0
    with pytest.warns(ReducedSetWarning, match="asked for n_vectors=50 but the expansion has "
                                               "only 10 terms"):
        res = construct(psi, 50)
    np.testing.assert_array_equal(res.expansion.coef, psi.coef)


def test_refine_never_increases_and_helps(rng):
    psi = _expansion(rng, n=40)
    res1 = construct(psi, 5, random_state=0)
    res2 = construct(psi, 5, refine=True, random_state=0)
    assert res2.objective <= res1.objective + 1e-12
    assert res2.info["objective_phase1"] == pytest.approx(res1.objective, rel=1e-10)
    r = refine(psi, res1.expansion, max_iter=50)
    assert r.objective_path[1] <= r.objective_path[0] + 1e-12
    np.testing.assert_allclose(r.objective, approximation_error(psi, r.expansion), rtol=1e-7)


def _phase2_fun_and_grad(psi, m):
    from sparsekm.reduced_set.construction import phase2_objective

    kernel, X, A = psi.kernel, np.asarray(psi.vectors), np.asarray(psi.coef)
    d, n_out = X.shape[1], A.shape[1]
    norm2 = psi.norm2()

    def split(theta):
        return theta[: m * d].reshape(m, d), theta[m * d:].reshape(m, n_out)

    def f(theta):
        # Reference value through the expansion algebra, not the formula under test.
        Z, B = split(theta)
        value = float(np.sum(psi.distance2(KernelExpansion(Z, B, kernel))))
        np.testing.assert_allclose(phase2_objective(kernel, X, A, Z, B, norm2)[0], value,
                                   rtol=1e-9, atol=1e-9)
        return value

    def g(theta):
        _, gZ, gB = phase2_objective(kernel, X, A, *split(theta), norm2)
        return np.concatenate([gZ.ravel(), gB.ravel()])

    return f, g


def test_refine_gradient_matches_finite_differences(rng):
    from scipy.optimize import check_grad

    for kernel in (RBF(0.4), Polynomial(degree=3, coef0=1.0, gamma=0.5)):
        psi = _expansion(rng, n=12, d=2, n_out=2, kernel=kernel)
        f, g = _phase2_fun_and_grad(psi, 3)
        theta = np.concatenate([rng.normal(size=6), rng.normal(size=6)])
        assert check_grad(f, g, theta, epsilon=1e-6) < 1e-4 * (1 + np.linalg.norm(g(theta)))


def test_construct_multioutput_separate_and_shared(rng):
    psi = _expansion(rng, n=30, n_out=3)
    sep = construct(psi, 4, shared=False, random_state=0)
    assert sep.expansion.n_terms == 12 and sep.expansion.n_outputs == 3
    coef = np.asarray(sep.expansion.coef)
    # Block-diagonal: output k uses only its own 4 vectors.
    for k in range(3):
        mask = np.ones(12, bool)
        mask[4 * k:4 * k + 4] = False
        assert np.all(coef[mask, k] == 0)
    for k in range(3):
        single = construct(psi.output(k), 4, random_state=None)
        assert single.objective >= 0
    sh = construct(psi, 4, shared=True, random_state=0)
    assert sh.expansion.n_terms == 4
    np.testing.assert_allclose(sh.objective, approximation_error(psi, sh.expansion), rtol=1e-7,
                               atol=1e-10)
    assert np.all(np.diff(sh.objective_path.sum(axis=1)) <= 1e-10)
    np.testing.assert_allclose(np.asarray(sh.expansion.intercept), psi.intercept)


def test_one_term_shared_matches_brute_force_grid():
    # Two outputs in 1-D: the best shared z maximises sum_k (Psi^k . Phi(z))^2.
    k = RBF(2.0)
    Y = np.array([[-1.0], [0.0], [1.2]])
    G = np.array([[1.0, 0.2], [0.5, 1.0], [-0.3, 0.8]])
    grid = np.linspace(-3, 3, 6001)[:, None]
    S = np.sum((G.T @ k(Y, grid)) ** 2, axis=0)
    z, score, _ = one_term_shared(k, Y, G, Y.copy(), max_iter=500, tol=1e-12)
    assert score == pytest.approx(S.max(), rel=1e-6)
    assert z[0] == pytest.approx(grid[np.argmax(S), 0], abs=2e-3)
    # General (non-radial) kernels go through L-BFGS on the same objective.
    kp = Polynomial(degree=2, coef0=1.0)
    Sp = np.sum((G.T @ kp(Y, grid)) ** 2, axis=0) / kp.diag(grid)
    zp, sp, _ = one_term_shared(kp, Y, G, Y.copy(), max_iter=500, tol=1e-10)
    assert sp == pytest.approx(Sp.max(), rel=1e-5)


def test_construct_errors(rng):
    psi = _expansion(rng)
    with pytest.raises(ValueError, match="'n_vectors' parameter of construct must be an int"):
        construct(psi, 0)
    with pytest.raises(ValueError, match="'tol' parameter"):
        construct(psi, 2, tol=-1.0)
    with pytest.raises(ValueError, match="shared must be"):
        construct(psi, 2, shared="yes")
    with pytest.raises(TypeError, match="KernelExpansion"):
        construct("psi", 2)
    sig = KernelExpansion(psi.vectors, psi.coef, Sigmoid(0.1, 0.0))
    with pytest.raises(ValueError, match="positive semi-definite"):
        construct(sig, 2)
    with pytest.raises(ValueError, match="number of features and outputs"):
        refine(psi, _expansion(rng, d=2))
    with pytest.raises(ValueError, match="uses kernel"):
        refine(psi, _expansion(rng, kernel=RBF(3.0)))


# -- selection -------------------------------------------------------------------------------
def test_exact_reduction_rank_deficient_polynomial(rng):
    # (x.y + 1)^2 on R^3 has a 10-dimensional feature space: 40 vectors reduce to 10.
    k = Polynomial(degree=2, coef0=1.0)
    psi = _expansion(rng, n=40, d=3, kernel=k)
    res = exact_reduction(psi)
    assert res.expansion.n_terms == 10
    assert res.objective <= 1e-10 * psi.norm2()
    assert approximation_error(psi, res.expansion) <= 1e-10 * psi.norm2()
    X = rng.normal(size=(20, 3))
    np.testing.assert_allclose(res.expansion.decision_function(X), psi.decision_function(X),
                               rtol=1e-7, atol=1e-7)
    # Multi-output expansions reduce to one shared set.
    res2 = exact_reduction(_expansion(rng, n=30, d=3, n_out=2, kernel=k))
    assert res2.expansion.n_terms == 10 and np.all(res2.objective <= 1e-9)


def test_exact_reduction_full_rank_rbf_keeps_all(rng):
    psi = _expansion(rng, n=15)
    assert exact_reduction(psi).expansion.n_terms == 15


def test_select_kpca(rng):
    psi = _expansion(rng, n=30)
    res = select_kpca(psi, 10)
    assert res.expansion.n_terms == 10 and res.support.shape == (10,)
    np.testing.assert_array_equal(res.expansion.vectors, np.asarray(psi.vectors)[res.support])
    assert res.objective_path.shape == (20,)
    # Proposition 8 re-fit can only improve on the eq. 65 coefficients.
    assert res.objective <= res.objective_path[-1] + 1e-12
    np.testing.assert_allclose(res.objective, approximation_error(psi, res.expansion), rtol=1e-7)
    # Exact on a rank-deficient polynomial Gram matrix: eq. 64 picks null directions first.
    kp = Polynomial(degree=2, coef0=1.0)
    psi_p = _expansion(rng, n=25, d=3, kernel=kp)
    res_p = select_kpca(psi_p, 10)
    assert res_p.objective <= 1e-9 * psi_p.norm2()
    # Beats random subsets of the same size on average.
    rand = [approximation_error(psi, KernelExpansion(
        np.asarray(psi.vectors)[s], optimal_coefficients(psi, np.asarray(psi.vectors)[s]),
        psi.kernel)) for s in (rng.choice(30, 10, replace=False) for _ in range(20))]
    assert res.objective < np.median(rand)


def test_select_l1_lambda_limits(rng):
    psi = _expansion(rng, n=30)
    full = select_l1(psi, 1e-8)
    assert full.expansion.n_terms == 30
    assert full.objective <= 1e-8 * psi.norm2()
    few = select_l1(psi, 2.0)
    assert 0 < few.expansion.n_terms <= 8
    with pytest.warns(ReducedSetWarning, match="no vector was selected"):
        assert select_l1(psi, 1e6).expansion.n_terms == 1
    mid = select_l1(psi, n_vectors=12)
    assert mid.expansion.n_terms <= 12 and mid.expansion.n_terms >= 8
    inv = select_l1(psi, n_vectors=12, c="inverse")
    assert inv.expansion.n_terms <= 12


def test_select_l1_matches_qp(rng):
    # The Lasso solution equals the QP of eq. 68-69 in (beta+, beta-) >= 0.
    psi = _expansion(rng, n=12, d=2)
    lam = 0.5
    c = rng.uniform(0.5, 2.0, size=12)
    res = select_l1(psi, lam, c=c, refit=False, tol=1e-12)
    K = psi.kernel(psi.vectors)
    a = np.asarray(psi.coef)

    def fun(v):
        b = v[:12] - v[12:]
        dlt = a - b
        return dlt @ K @ dlt + lam * c @ (v[:12] + v[12:]), np.concatenate(
            [-2 * K @ dlt + lam * c, 2 * K @ dlt + lam * c])

    qp = optimize.minimize(fun, np.zeros(24), jac=True, method="L-BFGS-B",
                           bounds=[(0, None)] * 24, options={"ftol": 1e-15, "gtol": 1e-12,
                                                             "maxiter": 10000})
    b_qp = qp.x[:12] - qp.x[12:]
    np.testing.assert_allclose(res.info["beta_l1"], b_qp, atol=2e-4)
    b = res.info["beta_l1"]
    assert fun(np.concatenate([np.maximum(b, 0), np.maximum(-b, 0)]))[0] <= qp.fun + 1e-8


def test_select_l1_multi_matches_brute_force(rng):
    psi = _expansion(rng, n=8, d=2, n_out=3)
    lam = 0.3
    res = select_l1_multi(psi, lam, refit=False, tol=1e-12, max_iter=200_000)
    K = psi.kernel(psi.vectors)
    A = np.asarray(psi.coef)
    c = np.ones(8)
    # Brute force: eq. 70-71 as a smooth problem in (B, xi) with |B_ij| <= xi_i (SLSQP).
    n, m = A.shape

    def f(v):
        B = v[: n * m].reshape(n, m)
        D = A - B
        return np.einsum("ij,ij->", D, K @ D) + lam * c @ v[n * m:]

    cons = []
    for i in range(n):
        for j in range(m):
            cons.append({"type": "ineq", "fun": lambda v, i=i, j=j: v[n * m + i] - v[i * m + j]})
            cons.append({"type": "ineq", "fun": lambda v, i=i, j=j: v[n * m + i] + v[i * m + j]})
    v0 = np.concatenate([A.ravel(), np.abs(A).max(axis=1)])
    ref = optimize.minimize(f, v0, method="SLSQP", constraints=cons,
                            options={"ftol": 1e-14, "maxiter": 2000})
    ours = l1_multi_objective(K, A, res.info["B_l1"], lam, c)
    assert ours <= ref.fun + 1e-7
    np.testing.assert_allclose(ours, ref.fun, rtol=1e-5)
    # lam -> 0 keeps every vector, large lam few.
    assert select_l1_multi(psi, 1e-9).expansion.n_terms == 8
    few = select_l1_multi(psi, 7.0)
    assert few.expansion.n_terms == 1 and np.any(few.info["B_l1"] != 0)
    with pytest.warns(ReducedSetWarning, match="no vector was selected"):
        assert select_l1_multi(psi, 1e6).expansion.n_terms == 1


def test_selection_errors(rng):
    psi = _expansion(rng)
    with pytest.raises(ValueError, match="exactly one of lam and n_vectors"):
        select_l1(psi)
    with pytest.raises(ValueError, match="exactly one of lam and n_vectors"):
        select_l1(psi, 1.0, n_vectors=3)
    with pytest.raises(ValueError, match="select_l1_multi"):
        select_l1(_expansion(rng, n_out=2), 1.0)
    with pytest.raises(ValueError, match="c must be 'uniform', 'inverse'"):
        select_l1(psi, 1.0, c="log")
    with pytest.raises(ValueError, match="positive weights"):
        select_l1(psi, 1.0, c=-np.ones(30))
    with pytest.raises(ValueError, match="'lam' parameter of select_l1_multi must be a float > 0"):
        select_l1_multi(psi, 0.0)
    with pytest.raises(ValueError, match="'n_vectors' parameter of select_kpca"):
        select_kpca(psi, 0)
    sig = KernelExpansion(psi.vectors, psi.coef, Sigmoid(0.1, 0.0))
    for fn in (lambda e: select_kpca(e, 2), lambda e: select_l1(e, 1.0), exact_reduction):
        with pytest.raises(ValueError, match="positive semi-definite"):
            fn(sig)


# -- thresholds ------------------------------------------------------------------------------
def test_optimal_threshold_brute_force(rng):
    for _ in range(20):
        s = rng.normal(size=40)
        y = rng.random(40) < 1 / (1 + np.exp(-3 * s))
        b = optimal_threshold(s, y, b0=0.0)
        grid = np.linspace(-4, 4, 8001)
        errs = [np.count_nonzero((s + g > 0) != y) for g in grid]
        assert np.count_nonzero((s + b > 0) != y) == min(errs)


def test_optimal_threshold_middle_of_interval():
    s = np.array([-3.0, -1.0, 1.0, 3.0])
    y = np.array([False, False, True, True])
    assert optimal_threshold(s, y) == pytest.approx(0.0)
    assert optimal_threshold(s + 5, y) == pytest.approx(-5.0)


def test_refit_intercept_binary_and_multiclass(rng):
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0.5).astype(int)
    psi = KernelExpansion(X[:10], rng.normal(size=10), RBF(0.5), 5.0)
    new = refit_intercept(psi, X, y)
    F = psi.decision_function(X) - 5.0
    errs = lambda b: np.count_nonzero((F + b > 0) != (y == 1))  # noqa: E731
    assert errs(new.intercept) == min(errs(b) for b in np.linspace(-10, 10, 4001))
    np.testing.assert_array_equal(new.coef, psi.coef)
    # Multi-class: joint re-fit never has more training errors than the start or per-output.
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    psi3 = _expansion(rng, n=10, d=2, n_out=3)
    joint = refit_intercept(psi3, X, y3, method="joint")
    err = lambda e: np.count_nonzero(e.decision_function(X).argmax(1) != y3)  # noqa: E731
    assert err(joint) <= err(psi3)
    per = refit_intercept(psi3, X, y3)
    Fp = psi3.decision_function(X) - np.asarray(psi3.intercept)
    for k in range(3):
        b = per.intercept[k]
        assert np.count_nonzero((Fp[:, k] + b > 0) != (y3 == k)) == min(
            np.count_nonzero((Fp[:, k] + g > 0) != (y3 == k)) for g in np.linspace(-20, 20, 4001))


def test_refit_intercept_errors(rng):
    psi = _expansion(rng, d=2)
    X = rng.normal(size=(10, 2))
    with pytest.raises(ValueError, match="binary y"):
        refit_intercept(psi, X, np.arange(10) % 3)
    with pytest.raises(ValueError, match="one label per row"):
        refit_intercept(psi, X, np.zeros(9))
    with pytest.raises(ValueError, match="method must be"):
        refit_intercept(psi, X, np.arange(10) % 2, method="best")
    with pytest.raises(ValueError, match="X has 3 features"):
        refit_intercept(psi, np.ones((10, 3)), np.arange(10) % 2)
    with pytest.raises(ValueError, match="classes must name one class per output"):
        refit_intercept(_expansion(rng, d=2, n_out=3), X, np.arange(10) % 2)


def test_no_warnings_in_normal_use(rng):
    psi = _expansion(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        construct(psi, 3, random_state=0)
        select_kpca(psi, 10)


def test_backfitting_sweeps_never_increase(rng):
    psi = _expansion(rng, n=50)
    base = construct(psi, 5, random_state=0)
    swept = construct(psi, 5, n_sweeps=2, random_state=0)
    sweeps = swept.info["objective_sweeps"]
    assert sweeps.shape == (2,)
    assert sweeps[0] <= base.objective + 1e-12 and sweeps[1] <= sweeps[0] + 1e-12
    np.testing.assert_allclose(swept.objective, sweeps[-1], rtol=1e-8)
    with pytest.raises(ValueError, match="'n_sweeps' parameter of construct"):
        construct(psi, 2, n_sweeps=-1)


def test_select_backward_is_the_optimal_greedy_step(rng):
    from sparsekm.reduced_set import select_backward

    psi = _expansion(rng, n=12, n_out=2)
    X = np.asarray(psi.vectors)
    res = select_backward(psi, 11)
    # Brute force: the best single removal with Proposition 8 re-fitting.
    errs = []
    for n in range(12):
        keep = np.delete(np.arange(12), n)
        beta = optimal_coefficients(psi, X[keep])
        errs.append(np.sum(approximation_error(psi, KernelExpansion(X[keep], beta, psi.kernel))))
    assert sorted(set(range(12)) - set(res.support.tolist())) == [int(np.argmin(errs))]
    np.testing.assert_allclose(np.sum(res.objective), min(errs), rtol=1e-8)
    np.testing.assert_allclose(res.objective_path[-1], res.objective, rtol=1e-8)
    # Longer runs: the path is non-decreasing and matches the final re-fit.
    res5 = select_backward(psi, 5, refresh=3)
    assert np.all(np.diff(res5.objective_path.sum(axis=1)) >= -1e-10)
    np.testing.assert_allclose(res5.objective, approximation_error(psi, res5.expansion),
                               rtol=1e-7)
    kp = Polynomial(degree=2, coef0=1.0)
    with pytest.raises(ValueError, match="Apply exact_reduction first"):
        select_backward(_expansion(rng, n=25, d=3, kernel=kp), 5)


def test_shared_refine_is_joint_and_never_increases(rng):
    """Phase 2 for a shared set: one L-BFGS over the shared Z and every output's beta."""
    psi = _expansion(rng, n=30, n_out=3)
    p1 = construct(psi, 5, shared=True, random_state=0)
    p2 = construct(psi, 5, shared=True, refine=True, random_state=0)
    np.testing.assert_allclose(p2.info["objective_phase1"], p1.objective, rtol=1e-10)
    assert p2.expansion.n_terms == 5  # still one shared set
    assert np.sum(p2.objective) < np.sum(p1.objective)
    np.testing.assert_allclose(p2.objective, approximation_error(psi, p2.expansion), rtol=1e-7,
                               atol=1e-12)
    # refine() on the shared phase-1 result: the summed objective never increases
    r = refine(psi, p1.expansion, max_iter=40)
    assert r.objective_path[1].sum() <= r.objective_path[0].sum() + 1e-12
    # its final coefficients are the Proposition-8 optimum for its Z
    np.testing.assert_allclose(np.asarray(r.expansion.coef),
                               optimal_coefficients(psi, r.expansion.vectors, warn=False),
                               rtol=1e-6, atol=1e-9)


def test_shared_refine_with_one_output_equals_single_output_refine(rng):
    psi = _expansion(rng, n=25)
    psi1 = KernelExpansion(psi.vectors, np.asarray(psi.coef)[:, None], psi.kernel)
    a = construct(psi, 4, refine=True, random_state=3)
    b = construct(psi1, 4, shared=True, refine=True, random_state=3)
    np.testing.assert_allclose(np.asarray(b.expansion.vectors), np.asarray(a.expansion.vectors),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(b.expansion.coef)[:, 0], a.expansion.coef, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(b.objective[0], a.objective, rtol=1e-10, atol=1e-14)


def test_phase2_gaussian_fast_path_equals_generic_gradient(rng):
    """The fused RBF gradient of phase 2 equals the two gradient_sum calls it replaces."""
    from sparsekm.reduced_set.construction import phase2_objective

    psi = _expansion(rng, n=20, d=3, n_out=3, kernel=RBF(0.7))
    X, A, k = np.asarray(psi.vectors), np.asarray(psi.coef), psi.kernel
    Z, B = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    f, gZ, gB = phase2_objective(k, X, A, Z, B, psi.norm2())
    gZ_ref = 2.0 * (k.gradient_sum(Z, Z, B @ B.T) - k.gradient_sum(X, Z, A @ B.T))
    np.testing.assert_allclose(gZ, gZ_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f, np.sum(psi.distance2(KernelExpansion(Z, B, k))), rtol=1e-10)


@pytest.mark.parametrize("float32", [False, True])
def test_one_term_gaussian_matches_engine_iteration(rng, float32):
    """The fast Gaussian one-term step reaches the engine's fixed point (eq. 18-19)."""
    from sparsekm.reduced_set._one_term import one_term_gaussian, shared_score

    Y = rng.normal(size=(40, 3))
    G = rng.normal(size=(40, 2))
    G[:, 0] = np.abs(G[:, 0])
    k = RBF(0.4)
    starts = Y[:6]
    z_ref, s_ref, _ = one_term_shared(k, Y, G, starts, max_iter=2000, tol=1e-12)
    z, s, n_it, ends = one_term_gaussian(0.4, Y, G, starts, max_iter=2000, tol=1e-12,
                                         prune=False, float32=float32)
    assert ends.shape == starts.shape and 1 <= n_it <= 2000
    np.testing.assert_allclose(s, shared_score(k, Y, G, z[None, :])[0], rtol=1e-12)
    np.testing.assert_allclose(s, s_ref, rtol=1e-6 if float32 else 1e-9)
    np.testing.assert_allclose(z, z_ref, atol=1e-2 if float32 else 1e-4)
    # pruning stops the starts behind the first converged one: fewer iterations, and here
    # the same maximum as without pruning
    zp, sp, n_p, _ = one_term_gaussian(0.4, Y, G, starts, max_iter=2000, tol=1e-12,
                                       float32=float32)
    assert n_p <= n_it
    np.testing.assert_allclose(sp, s, rtol=1e-6 if float32 else 1e-9)


def _one_vs_one_coef(rng, n_classes=6, n_per_class=30):
    """Coefficients shaped like a one-vs-one SVC's shared expansion: rows class by class,
    a row of class c non-zero only in (some of) the pairs that contain c."""
    pairs = [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]
    G = np.zeros((n_classes * n_per_class, len(pairs)))
    for c in range(n_classes):
        rows = slice(c * n_per_class, (c + 1) * n_per_class)
        for j, p in enumerate(pairs):
            if c in p:
                G[rows, j] = rng.normal(size=n_per_class) * (rng.random(n_per_class) < 0.5)
    return G


@pytest.fixture
def small_block_cost(monkeypatch):
    """A run's own cost scaled to these small test matrices (4096 elements by default)."""
    import sparsekm.reduced_set._one_term as one_term
    monkeypatch.setattr(one_term, "_BLOCK_COST", 64)


def test_row_blocks_of_one_vs_one_coefficients(rng, small_block_cost):
    """One run per class, zero outside its columns; the products equal the dense ones."""
    from sparsekm.reduced_set._one_term import _Products, row_blocks

    G = _one_vs_one_coef(rng, n_classes=7)
    blocks = row_blocks(G)
    # one run per class (a row whose non-zeros all lie in the previous class's pairs may
    # join that run), covering every row in order
    assert len(blocks) == 7 and blocks[0][0] == 0 and blocks[-1][1] == G.shape[0]
    assert all(b0[1] == b1[0] for b0, b1 in zip(blocks[:-1], blocks[1:]))
    assert all(abs(a - 30 * c) <= 3 for c, (a, _, _) in enumerate(blocks))
    for a, b, cols in blocks:
        assert cols.size <= 6  # the 6 pairs of one class out of 21
        rest = np.ones(G.shape[1], dtype=bool)
        rest[cols] = False
        assert not np.any(G[a:b][:, rest])
    K, F = rng.random((G.shape[0], 3)), rng.normal(size=(G.shape[1], 3))
    prod = _Products(G, blocks)
    np.testing.assert_allclose(prod.gt(K), G.T @ K, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(prod.g(F), G @ F, rtol=1e-13, atol=1e-13)
    # dense coefficients and a single output: no blocks (the dense products are used)
    assert row_blocks(rng.normal(size=(50, 6))) is None
    assert row_blocks(G[:, :1]) is None


def test_one_term_gaussian_blocks_equal_dense(rng, small_block_cost):
    from sparsekm.reduced_set._one_term import one_term_gaussian, row_blocks

    G = _one_vs_one_coef(rng)
    Y = rng.normal(size=(G.shape[0], 3))
    blocks = row_blocks(G)
    assert blocks is not None
    for float32 in (False, True):
        kw = dict(max_iter=500, tol=1e-10, float32=float32, random_state=np.random.default_rng(0))
        z0, s0, n0, e0 = one_term_gaussian(0.5, Y, G, Y[:4], **kw)
        kw["random_state"] = np.random.default_rng(0)
        z1, s1, n1, e1 = one_term_gaussian(0.5, Y, G, Y[:4], blocks=blocks, **kw)
        np.testing.assert_allclose(s1, s0, rtol=1e-9)
        np.testing.assert_allclose(z1, z0, atol=1e-5)


def _plain_step(gamma, Y, G, z):
    """One step of eq. 19 for the Gaussian kernel: (T / S, S) at ``z``."""
    K = np.exp(-gamma * np.sum((Y - z) ** 2, axis=1))
    F = G.T @ K
    M = K * (G @ F)
    return M @ Y / M.sum(), float(F @ F)


def test_one_term_gaussian_damps_a_two_cycle():
    """With coefficients of both signs eq. 19 can cycle between two points forever; a
    reversing start is moved by half its step and reaches a fixed point of eq. 19."""
    from sparsekm.reduced_set._one_term import one_term_gaussian

    rng = np.random.default_rng(48)  # a configuration on which the plain iteration cycles
    Y, G = rng.normal(size=(6, 2)), rng.normal(size=(6, 1))
    # the plain iteration of eq. 19, computed here step by step
    z_cycle, s_start = Y[0], _plain_step(0.5, Y, G, Y[0])[1]
    for _ in range(200):
        z_cycle, _ = _plain_step(0.5, Y, G, z_cycle)
    z_next, s_cycle = _plain_step(0.5, Y, G, z_cycle)
    z_back, s_next = _plain_step(0.5, Y, G, z_next)
    assert np.linalg.norm(z_next - z_cycle) > 1e-2  # a real cycle, not slow convergence
    np.testing.assert_allclose(z_back, z_cycle, atol=1e-6)
    z, s, n_it, _ = one_term_gaussian(0.5, Y, G, Y[:1], max_iter=200, tol=1e-10, prune=False)
    assert n_it < 50 and s > max(s_start, s_cycle, s_next)
    z_fix, s_fix = _plain_step(0.5, Y, G, z)
    np.testing.assert_allclose(z_fix, z, atol=1e-4)  # a fixed point of eq. 19
    np.testing.assert_allclose(s, s_fix, rtol=1e-8)


@pytest.mark.parametrize("n_steps", [1, 2, 7, 30])
def test_one_term_gaussian_without_reversals_moves_as_before(rng, n_steps):
    """Positive coefficients (mean shift): no step reverses, so after any number of
    iterations every start is where the plain eq. 19 (computed here) takes it."""
    from sparsekm.reduced_set._one_term import one_term_gaussian

    Y, G = rng.normal(size=(40, 3)), np.abs(rng.normal(size=(40, 2)))
    # tol = 0: no start stops before max_iter
    _, _, n_it, ends = one_term_gaussian(0.4, Y, G, Y[:5], max_iter=n_steps, tol=0.0,
                                         prune=False)
    assert n_it == n_steps
    for z0, end in zip(Y[:5], ends):
        z = z0
        for _ in range(n_steps):
            z, _ = _plain_step(0.4, Y, G, z)
        np.testing.assert_allclose(end, z, rtol=0, atol=1e-10)


def test_one_term_gaussian_vanishing_objective_restarts():
    """S = 0 everywhere (two copies of one vector with opposite signs): every start is
    restarted (the |G| test), the solver returns after max_iter with S = 0."""
    from sparsekm.reduced_set._one_term import one_term_gaussian

    Y = np.array([[0.0, 1.0], [0.0, 1.0], [2.0, 0.0]])
    G = np.array([[1.0], [-1.0], [0.0]])
    z, s, n_it, _ = one_term_gaussian(0.5, Y, G, Y[:2], max_iter=7)
    assert n_it == 7 and s == 0.0


def test_construct_one_vs_one_blocks_match_dense(rng, small_block_cost, monkeypatch):
    """construct() on one-vs-one-shaped coefficients: the row-block products give the
    same reduced set as the dense ones (to rounding) for the first terms. The dense
    products run on the same expansion with its terms interleaved class by class (the
    same Psi, no row blocks); one start per term (the best-scoring candidate, whatever
    the order of the terms). The one-term GEMMs run in float64 here: in float32 (the
    default) the two summation orders move the fixed point along its flat maximum by
    ~1e-3, depending on the BLAS kernel."""
    from sparsekm.reduced_set import construction

    monkeypatch.setattr(construction, "_FLOAT32", False)

    G = _one_vs_one_coef(rng)
    X = rng.normal(size=(G.shape[0], 4))
    n_per_class = 30
    interleaved = np.argsort(np.arange(G.shape[0]) % n_per_class, kind="stable")
    assert construction.row_blocks(G) is not None  # the blocks are used
    assert construction.row_blocks(G[interleaved]) is None  # the dense products are used
    psi = KernelExpansion(X, G, RBF(0.3))
    psi_dense = KernelExpansion(X[interleaved], G[interleaved], RBF(0.3))
    r_blocks = construct(psi, 4, shared=True, n_init=1, random_state=0)
    r_dense = construct(psi_dense, 4, shared=True, n_init=1, random_state=0)
    np.testing.assert_allclose(r_blocks.objective_path, r_dense.objective_path, rtol=1e-6)
    np.testing.assert_allclose(r_blocks.expansion.vectors, r_dense.expansion.vectors, atol=1e-3)


@pytest.mark.parametrize("method, kwargs", [
    ("construct", {"lam": 0.1}),
    ("construct+refine", {"c": "uniform"}),
    ("select-kpca", {"n_sweeps": 2}),
    ("select-l1", {"step": "orthogonal"}),
    ("construct", {"refine_max_iter": 50}),
])
def test_options_of_another_method_are_refused(rng, method, kwargs):
    """reduce_expansion and the estimators refuse an option that the method would ignore."""
    from sklearn.svm import SVC

    from sparsekm.models import ReducedSetClassifier
    from sparsekm.reduced_set import reduce_expansion

    psi = _expansion(rng, n=20, d=3, n_out=1, kernel=RBF(0.7))
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=f"{name}=.* no effect with method='{re.escape(method)}'"):
        reduce_expansion(psi, 3, method=method, **kwargs)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    svc = SVC(gamma=0.7).fit(X, y)
    with pytest.raises(ValueError, match=f"ReducedSetClassifier.*{name}="):
        ReducedSetClassifier(svc, n_vectors=3, method=method, **kwargs).fit(X, y)
    # the same option is accepted by the method it belongs to
    own = {"lam": "select-l1", "c": "select-l1", "n_sweeps": "construct",
           "step": "construct", "refine_max_iter": "construct+refine"}[name]
    reduce_expansion(psi, 3, method=own, **kwargs)
