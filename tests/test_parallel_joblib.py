"""Independent problems through joblib: results never depend on ``n_jobs``.

``n_jobs=2`` runs on joblib's default (loky, process-based) backend.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF, Sigmoid
from sparsekm.models import (
    RSVM,
    SLMC,
    ModifiedRS,
    ModifiedRSVM,
    ReducedSetClassifier,
    SparseKFD,
)
from sparsekm.parallel import parallel_map
from sparsekm.reduced_set import (
    ReducedSetResult,
    ReducedSetWarning,
    construct,
    reduce_expansion,
    reduce_many,
    select_kpca,
    stack_results,
)

# Sequential and parallel runs do the same arithmetic, but worker processes may use a
# different number of BLAS threads (loky limits them), which may change the rounding
# of reductions; the optimisers amplify it a little. Agreement to 1e-9 is the claim.
_SAME = dict(rtol=1e-9, atol=1e-11)


def _assert_expansions_equal(a, b):
    np.testing.assert_allclose(a.vectors, b.vectors, **_SAME)
    np.testing.assert_allclose(a.coef, b.coef, **_SAME)
    np.testing.assert_allclose(a.intercept, b.intercept, **_SAME)
    assert a.kernel == b.kernel


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(n_samples=90, centers=3, n_features=3, cluster_std=1.5, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def ovr(blobs):
    X, y = blobs
    return OneVsRestClassifier(SVC(C=10.0, gamma=0.5)).fit(X, y)


@pytest.fixture(scope="module")
def psis():
    rng = np.random.default_rng(0)
    return [KernelExpansion(rng.normal(size=(25, 2)), rng.normal(size=25), RBF(0.7))
            for _ in range(3)]


# -- reduce_many ---------------------------------------------------------------------
@pytest.mark.parametrize("method", ["construct", "select-kpca"])
def test_reduce_many_is_independent_of_n_jobs(psis, method):
    seq = reduce_many(psis, 4, method=method, n_init=2, max_iter=50, random_state=3)
    par = reduce_many(psis, 4, method=method, n_init=2, max_iter=50, random_state=3, n_jobs=2)
    assert len(seq) == len(par) == 3
    for a, b in zip(seq, par, strict=True):
        _assert_expansions_equal(a.expansion, b.expansion)
        np.testing.assert_allclose(a.objective, b.objective, **_SAME)
        np.testing.assert_allclose(a.objective_path, b.objective_path, **_SAME)


def test_reduce_many_is_the_loop_with_derived_seeds(psis):
    seeds = np.random.RandomState(3).randint(np.iinfo(np.int32).max, size=len(psis))
    got = reduce_many(psis, 4, n_init=2, max_iter=50, random_state=3)
    for psi, seed, res in zip(psis, seeds, got, strict=True):
        ref = construct(psi, 4, n_init=2, max_iter=50, random_state=int(seed))
        _assert_expansions_equal(res.expansion, ref.expansion)
        assert res.objective == ref.objective
        # and the reduction is real: at most the error of the best single vector's output
        assert 0 < res.objective < psi.norm2()


def test_reduce_many_handles_zero_expansions_and_exact_copies():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 2))
    zero = KernelExpansion(np.vstack([X[:1], X[:1]]), [1.0, -1.0], RBF(0.7))  # Psi = 0
    small = KernelExpansion(X[:3], [1.0, 2.0, 3.0], RBF(0.7))
    # five asked of three terms: all three are kept, and the result says so
    with pytest.warns(ReducedSetWarning, match=r"n_vectors=5 but the expansion has only 3 "
                                               r"terms: all 3 are kept \(zero error\)"):
        res0, res1 = reduce_many([zero, small], 5, random_state=0)
    assert res0.expansion.n_terms == 0 and res0.objective == 0.0
    assert res1.expansion.n_terms == 3 and res1.objective == 0.0
    stacked = stack_results([res0, res1])
    assert stacked.expansion.coef.shape == (3, 2)
    np.testing.assert_allclose(stacked.expansion(X), np.column_stack([zero(X), small(X)]),
                               rtol=1e-12, atol=1e-12)


def test_reduce_expansion_multi_output_goes_through_reduce_many(ovr, blobs):
    X, _ = blobs
    psi = KernelExpansion.from_estimator(ovr)
    kw = dict(n_init=2, max_iter=50, random_state=5)
    res = reduce_expansion(psi, 4, n_jobs=2, **kw)
    ref = stack_results(reduce_many([psi.output(k) for k in range(3)], 4, **kw))
    _assert_expansions_equal(res.expansion, ref.expansion)
    np.testing.assert_allclose(res.objective, ref.objective, **_SAME)
    # one block of 4 vectors per output, each output's own intercept
    assert res.expansion.n_terms == 12 and res.objective.shape == (3,)
    np.testing.assert_array_equal(res.expansion.intercept, psi.intercept)
    coef = res.expansion.coef
    for k in range(3):
        assert np.count_nonzero(coef[:, k]) == 4
        assert np.all(coef[4 * k:4 * k + 4, k] != 0)
    # stacked objectives are each output's ||Psi_k - Psi'_k||^2, computed independently
    for k in range(3):
        diff = psi.output(k) - res.expansion.output(k)
        np.testing.assert_allclose(res.objective[k], diff.norm2(), rtol=1e-8, atol=1e-10)
    # path columns are the per-output construction paths (non-increasing)
    assert res.objective_path.shape[1] == 3
    assert np.all(np.diff(res.objective_path, axis=0) <= 1e-12)


def test_stack_results_keeps_per_output_info(psis):
    results = reduce_many(psis, 3, method="construct+refine", n_init=2, max_iter=50,
                          refine_max_iter=20, n_sweeps=1, random_state=0)
    stacked = stack_results(results)
    np.testing.assert_array_equal(stacked.info["objective_phase1"],
                                  [r.info["objective_phase1"] for r in results])
    assert stacked.info["objective_sweeps"].shape == (1, 3)
    assert stacked.n_iter == sum(r.n_iter for r in results)
    np.testing.assert_array_equal(stacked.norm2, [r.norm2 for r in results])
    np.testing.assert_allclose(stacked.relative_objective,
                               [r.relative_objective for r in results], rtol=1e-15)
    sel = [select_kpca(p, 3) for p in psis]
    assert isinstance(stack_results(sel), ReducedSetResult)


def test_reduce_many_validates(psis, ovr):
    multi = KernelExpansion.from_estimator(ovr)
    with pytest.raises(ValueError, match="single-output expansions"):
        reduce_many([multi], 3)
    with pytest.raises(ValueError, match="'method' parameter of reduce_many"):
        reduce_many(psis, 3, method="magic")
    with pytest.raises(ValueError, match="'n_vectors' parameter of reduce_many"):
        reduce_many(psis, 0)
    with pytest.raises(TypeError, match="needs a sparsekm.KernelExpansion"):
        reduce_many([np.zeros(3)], 3)
    with pytest.raises(ValueError, match="needs a positive semi-definite kernel"):
        reduce_many([KernelExpansion(np.ones((3, 2)), [1.0, 2.0, 3.0], Sigmoid(0.1, 0.0))], 1)
    assert reduce_many([], 3) == []
    with pytest.raises(ValueError, match="at least one result"):
        stack_results([])
    other = reduce_many([KernelExpansion(np.ones((2, 2)), [1.0, 1.0], RBF(0.1))], 1)
    with pytest.raises(ValueError, match="one kernel"):
        stack_results(reduce_many(psis[:1], 2, random_state=0) + other)


# -- estimators ------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["construct", "select-l1"])
def test_reduced_set_classifier_n_jobs(ovr, blobs, method):
    X, y = blobs
    kw = dict(n_vectors=3, method=method, n_init=2, max_iter=40, random_state=0)
    seq = ReducedSetClassifier(ovr, **kw).fit(X, y)
    par = ReducedSetClassifier(ovr, n_jobs=2, **kw).fit(X, y)
    assert par.get_params()["n_jobs"] == 2 and seq.n_jobs is None
    _assert_expansions_equal(seq.expansion_, par.expansion_)
    np.testing.assert_allclose(seq.objective_, par.objective_, **_SAME)
    np.testing.assert_array_equal(seq.predict(X), par.predict(X))
    if method == "construct":
        assert seq.score(X, y) > 0.8
        # the classifier's machine is reduce_many's before the thresholds are re-fitted
        raw = ReducedSetClassifier(ovr, refit_intercept=False, **kw).fit(X, y)
        psi = KernelExpansion.from_estimator(ovr)
        ref = stack_results(reduce_many([psi.output(k) for k in range(3)], 3, n_init=2,
                                        max_iter=40, random_state=0))
        _assert_expansions_equal(raw.expansion_, ref.expansion)


# tol=1e-3: the SLMC/SparseKFD fits converge (in 5 to 11 iterations), no cap warning
@pytest.mark.parametrize("cls, params", [
    (SLMC, dict(n_vectors=3, max_iter=40, tol=1e-3)),
    (SparseKFD, dict(n_vectors=3, max_iter=40, tol=1e-3)),
    (RSVM, dict(n_vectors=5)),
    (ModifiedRSVM, dict(n_vectors=5)),
    (ModifiedRS, dict(n_vectors=3)),
], ids=["SLMC", "SparseKFD", "RSVM", "ModifiedRSVM", "ModifiedRS"])
def test_one_vs_rest_problems_in_parallel(blobs, cls, params):
    X, y = blobs
    seq = cls(C=10.0, kernel=RBF(0.5), random_state=0, **params).fit(X, y)
    par = cls(C=10.0, kernel=RBF(0.5), random_state=0, n_jobs=2, **params).fit(X, y)
    assert "n_jobs" in cls().get_params()
    _assert_expansions_equal(seq.expansion_, par.expansion_)
    np.testing.assert_allclose(seq.objective_, par.objective_, **_SAME)
    np.testing.assert_array_equal(seq.predict(X), par.predict(X))
    assert seq.expansion_.coef.shape[1] == 3
    assert seq.score(X, y) > 0.8


def test_binary_problem_is_unchanged_by_n_jobs(blobs):
    X, y = blobs
    yb = (y == 1).astype(int)
    kw = dict(n_vectors=3, C=10.0, kernel=RBF(0.5), max_iter=40, tol=1e-3, random_state=0)
    a = SLMC(**kw).fit(X, yb)  # converges (6 iterations)
    b = SLMC(n_jobs=2, **kw).fit(X, yb)
    _assert_expansions_equal(a.expansion_, b.expansion_)


def test_parameter_errors_surface_before_dispatch(blobs):
    X, y = blobs
    with pytest.raises(ValueError, match="'max_iter' parameter of SparseLargeMarginClassifier"):
        SLMC(max_iter=-1, n_jobs=2).fit(X, y)
    with pytest.raises(ValueError, match="'mu' parameter of SparseKFD"):
        SparseKFD(mu=0.0, n_jobs=2).fit(X, y)
    with pytest.raises(ValueError, match="n_vectors=500 is larger than the number"):
        ModifiedRS(n_vectors=500, n_jobs=2).fit(X, y)


# -- parallel_map ----------------------------------------------------------------------
def _warn_and_square(x):
    warnings.warn(f"task {x}", UserWarning, stacklevel=2)
    return x * x


def test_parallel_map_order_and_warnings_from_workers():
    with pytest.warns(UserWarning) as record:
        out = parallel_map(_warn_and_square, [(1,), (2,), (3,)], n_jobs=2)
    assert out == [1, 4, 9]
    assert [str(w.message) for w in record] == ["task 1", "task 2", "task 3"]
    with pytest.warns(UserWarning, match="task 4"):
        assert parallel_map(_warn_and_square, [(4,)], n_jobs=2) == [16]
    assert parallel_map(_warn_and_square, [], n_jobs=2) == []
