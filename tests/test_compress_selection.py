"""The default search selects its reduced set at large budgets (issue 39): at a budget of
at least ``SELECT_FRACTION`` of the original's vectors the reduced set is the optimal
greedy backward elimination (eq. 63 with Proposition 8), not the construction."""
import numpy as np
import pytest
from scipy import linalg
from sklearn.datasets import make_blobs
from sklearn.svm import SVC

import sparsekm
from sparsekm.compression import _candidates
from sparsekm.convert import exact_classifier


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(400, centers=3, cluster_std=2.5, random_state=3)
    svc = SVC(C=1, gamma=0.2).fit(X[:150], y[:150])
    return svc, X[:150], y[:150], X[150:300], y[150:300]


def _n_sv(svc):
    return int(exact_classifier(svc, svc.classes_).expansion.merge_duplicates().n_terms)


def _problem(data, bounded=True, shared=True):
    """The search's Problem and validation Split around the fixture's SVC (nothing fitted)."""
    svc, Xtr, ytr, Xv, yv = data
    exact = exact_classifier(svc, svc.classes_)
    split = _candidates.Split(Xtr, ytr, Xv, yv, exact)
    return _candidates.Problem(exact, [split], None, shared, 2, 50, 0, bounded=bounded), split


def _call(data, n_vectors, **kw):
    svc, Xtr, ytr, Xv, yv = data
    return sparsekm.compress(svc, Xv, yv, n_vectors=n_vectors, X_train=Xtr, y_train=ytr,
                             random_state=0, n_init=2, max_iter=50, **kw)


def _brute_backward(K, A, m):
    """Backward elimination written out: at each step remove the vector whose removal,
    with every remaining coefficient re-solved (Proposition 8, a direct solve), leaves
    the least ``sum_k ||Psi_k - Psi'_k||^2``."""
    idx = list(range(K.shape[0]))

    def err(S):
        Ks = K[np.ix_(S, S)]
        B = linalg.solve(Ks, K[S] @ A, assume_a="pos")
        return float(np.sum(A * (K @ A)) - np.sum(B * (K[S] @ A)))

    while len(idx) > m:
        trials = [err([j for j in idx if j != i]) for i in idx]
        idx.pop(int(np.argmin(trials)))
    return idx


def test_the_rule_and_its_boundaries(blobs):
    """``selects`` exactly when SELECT_FRACTION * N <= m < N <= SELECT_MAX_TERMS in the
    default (bounded) search with one set; never for a named method or separate sets."""
    N = _n_sv(blobs[0])

    def selects(m, **kw):
        problem, split = _problem(blobs, **kw)
        return _candidates.selects(problem, split, m)

    half = int(np.ceil(_candidates.SELECT_FRACTION * N))
    assert not selects(half - 1)
    assert selects(half)
    assert selects(N - 1)
    assert not selects(N)
    assert not selects(half, bounded=False)
    assert not selects(half, shared=False)


def test_the_default_search_selects_at_large_budgets(blobs):
    """At 3/4 of the original's vectors the default search's reduced set is a subset of
    the support vectors, the one a written-out backward elimination keeps, with the
    Proposition 8 coefficients; the report says so. Below half it constructs."""
    svc, *_ = blobs
    N = _n_sv(svc)
    m = int(0.75 * N)
    small = _call(blobs, m, method="auto")
    rows = {r["method"]: r for r in small.compress_report_["rows"]}
    assert "selected by backward elimination" in rows["construct"]["reason"]

    psi = exact_classifier(svc, svc.classes_).expansion.merge_duplicates()
    X, A = np.asarray(psi.vectors), np.asarray(psi.coef)
    K = psi.kernel(X)
    keep = _brute_backward(K, A, m)
    # the construct candidate's reduced set, as the search builds it
    problem, split = _problem(blobs)
    red = _candidates.construction(problem, split, m)
    chosen = sorted(int(np.flatnonzero((X == z).all(axis=1))[0]) for z in np.asarray(red.vectors))
    assert chosen == sorted(keep)
    Ks = K[np.ix_(chosen, chosen)]
    beta = linalg.solve(Ks, K[chosen] @ A, assume_a="pos")
    order = [int(np.flatnonzero((X == z).all(axis=1))[0]) for z in np.asarray(red.vectors)]
    np.testing.assert_allclose(np.asarray(red.coef), beta[[chosen.index(i) for i in order]],
                               rtol=1e-7, atol=1e-9)
    assert _candidates.CANDIDATES["construct"].fit(problem, m, _candidates.FULL).notes

    below = _call(blobs, max(2, int(0.25 * N)), method="auto")
    rows = {r["method"]: r for r in below.compress_report_["rows"]}
    assert "selected" not in rows["construct"]["reason"]


@pytest.mark.filterwarnings("ignore:compress.*worse than the uniform:UserWarning")
def test_a_named_construction_is_never_replaced(blobs):
    """``method="construct"`` at a large budget constructs: its vectors are not all
    support vectors (the fixed-point iterates leave the data)."""
    svc, *_ = blobs
    N = _n_sv(svc)
    small = _call(blobs, int(0.75 * N), method="construct")
    psi = exact_classifier(svc, svc.classes_).expansion
    X = np.asarray(psi.vectors)
    Z = np.asarray(small.expansion_.vectors)
    on_data = [bool((np.abs(X - z).max(axis=1) == 0).any()) for z in Z]
    assert not all(on_data)
    assert "selected" not in small.compress_report_["rows"][small.compress_report_["chosen"]]["reason"]
