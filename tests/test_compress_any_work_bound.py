"""The work bound of compress for regressors, one-class SVMs and kernel PCA (issue 36).

With ``method="auto"`` the reduced-set chain (construct, then its refine) may do at most
``R = max(L - F, WORK_FLOOR)`` estimated kernel evaluations, ``L = max(WORK_RATIO * P,
WORK_FLOOR)``, ``P`` the two Nystrom peers' estimate and ``F`` the fixed work (module doc
of ``sparsekm.compression._any``). The numbers are recomputed here from that rule and the
problem's sizes, and what ran is recorded by spies on the solvers, not read from the
report.
"""

import math
import time

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.kernel_ridge import KernelRidge

from sparsekm.compression import _any
from sparsekm.compression import compress as compress_any

X, y = make_friedman1(n_samples=3000, noise=0.3, random_state=1)
Xtr, ytr, Xva, yva = X[:2000], y[:2000], X[2000:2500], y[2000:2500]
SMALL = slice(0, 300)


@pytest.fixture(scope="module")
def krr():
    return KernelRidge(alpha=0.1, kernel="rbf", gamma=0.2).fit(Xtr, ytr)


@pytest.fixture(scope="module")
def krr_small():
    return KernelRidge(alpha=0.1, kernel="rbf", gamma=0.2).fit(Xtr[SMALL], ytr[SMALL])


def chain_share(N, n_fit, n_val, m, ratio=3.0, floor=8e7):
    """The rule, written out again: ``(P, L, F, R)``."""
    P = m * (12 * n_fit + 2 * n_val)       # k-means 10 passes + 2 feature passes + val
    L = max(ratio * P, floor)
    F = P + n_val * N + (n_fit + n_val) * m + 2 * n_val * m
    return P, L, F, max(L - F, floor)


@pytest.fixture
def spies(monkeypatch):
    """Record every construction's (n_init, max_iter, iterations) and refine's max_iter."""
    calls = {"construct": [], "refine": []}
    real_reduce, real_refine = _any.reduce_expansion, _any.refine_phase2

    def reduce_spy(psi, m, **kw):
        res = real_reduce(psi, m, **kw)
        calls["construct"].append((m, kw["n_init"], kw["max_iter"], res.n_iter))
        return res

    def refine_spy(psi, reduced, max_iter=300, **kw):
        res = real_refine(psi, reduced, max_iter=max_iter, **kw)
        calls["refine"].append((reduced.n_terms, max_iter, res.n_iter))
        return res

    monkeypatch.setattr(_any, "reduce_expansion", reduce_spy)
    monkeypatch.setattr(_any, "refine_phase2", refine_spy)
    return calls


def test_bound_holds_with_the_default_constants(krr, spies):
    """2,000 terms at 100 vectors: the default construction (5 starts x 200 iterations,
    2.1e8 evaluations) exceeds the chain's share, which is the 8e7 floor here; it runs
    with one start, and what ran stays within the share."""
    N, m, n_fit, n_val = 2000, 100, 2000, 500
    P, L, F, R = chain_share(N, n_fit, n_val, m)
    assert R == 8e7 and 5 * 200 * m * (N + m) > R  # the bound binds
    small = compress_any(krr, Xva, yva, n_vectors=m, X_train=Xtr, y_train=ytr, random_state=0)
    (m_c, n_init, max_iter, n_iter), = spies["construct"]
    assert m_c == m and n_init == 1 and max_iter == 200  # one start: 4.2e7 <= 8e7
    per_pass = m * (N + m)
    assert n_init * max_iter * per_pass <= R
    # the iterations the fixed point actually ran (the slowest start of each vector)
    assert n_init * n_iter * (N + m) <= R
    refine_iter = math.floor((R - n_init * max_iter * per_pass) / per_pass)
    assert refine_iter == 180  # >= 25 % of 300: run, cut in proportion
    assert spies["refine"] == [(m, refine_iter, spies["refine"][0][2])]
    assert spies["refine"][0][2] <= refine_iter
    assert (n_init * max_iter + refine_iter) * per_pass <= R
    rep = small.compress_report_
    work, = rep["work"]
    for key, want in (("peer", P), ("limit", L), ("fixed", F), ("chain", R)):
        assert work[key] == pytest.approx(want, rel=1e-12), key
    by = {r["method"]: r for r in rep["rows"]}
    assert "work bound: n_init 5 -> 1, max_iter 200 -> 200" in by["construct"]["reason"]
    assert "work bound: 180 of its 300 iterations" in by["construct+refine"]["reason"]
    assert by["construct+refine"]["status"] in ("ok", "chosen")


def _with_floor(model, monkeypatch, sweeps, N=300, m=30):
    """compress_any at ``m`` vectors with ``WORK_RATIO = 0`` and the floor at ``sweeps``
    sweeps over ``[X; Z]`` of the ``N``-term original: the model and its rows by method."""
    monkeypatch.setattr(_any, "WORK_FLOOR", sweeps * m * (N + m))
    monkeypatch.setattr(_any, "WORK_RATIO", 0.0)
    small = compress_any(model, Xva, yva, n_vectors=m, X_train=Xtr[SMALL],
                         y_train=ytr[SMALL], random_state=0)
    return small, {r["method"]: r for r in small.compress_report_["rows"]}


def test_refusals_reach_the_report(krr_small, spies, monkeypatch):
    """A smaller floor and ratio: the refine is refused (its share would leave fewer than
    75 of its 300 iterations), then the construction (fewer than 10 fixed-point
    iterations per vector) and with it the refit; the peers still run."""
    _, by = _with_floor(krr_small, monkeypatch, 50)
    assert spies["construct"][0][1:3] == (1, 50) and spies["refine"] == []
    assert "max_iter 200 -> 50" in by["construct"]["reason"]
    assert by["construct+refine"]["status"] == "refused"
    assert "leaves 0 of its 300 iterations, less than 25 %" in by["construct+refine"]["reason"]
    assert "name it in 'method'" in by["construct+refine"]["reason"]

    spies["construct"].clear()
    small, by = _with_floor(krr_small, monkeypatch, 9)
    assert spies["construct"] == []
    for name in ("construct", "construct+refine", "refit"):
        assert by[name]["status"] == "refused" and by[name]["reason"].startswith("work bound")
    assert "one start of 10 fixed-point iterations" in by["construct"]["reason"]
    assert small.compress_report_["rows"][small.compress_report_["chosen"]]["method"] \
        .startswith("nystroem")


def test_restarts_go_first_to_leave_the_refine_its_iterations(krr_small, spies, monkeypatch):
    """A share of 700 sweeps over [X; Z]: 5 starts x 200 + 300 refine iterations do not
    fit; 2 starts x 200 + 300 do (3 starts would leave the refine 100)."""
    _, by = _with_floor(krr_small, monkeypatch, 700)
    assert [c[1:3] for c in spies["construct"]] == [(2, 200)]
    assert [c[1] for c in spies["refine"]] == [300]
    assert "n_init 5 -> 2, max_iter 200 -> 200" in by["construct"]["reason"]
    assert by["construct+refine"]["reason"] == ""  # its full iterations


def test_named_methods_run_unbounded(krr_small, spies, monkeypatch):
    monkeypatch.setattr(_any, "WORK_FLOOR", 1.0)
    monkeypatch.setattr(_any, "WORK_RATIO", 0.0)
    small = compress_any(krr_small, Xva, yva, n_vectors=30, X_train=Xtr[SMALL],
                         y_train=ytr[SMALL], random_state=0, n_init=2, max_iter=40,
                         method=["construct", "construct+refine", "refit"])
    assert [c[1:3] for c in spies["construct"]] == [(2, 40)]
    assert [c[1] for c in spies["refine"]] == [300]
    assert "work" not in small.compress_report_
    assert all(r["reason"] == "" for r in small.compress_report_["rows"])


def test_same_seed_same_model_and_no_clock(krr, monkeypatch):
    """The bounded call twice with the same seed: the same model byte for byte; with
    timing=False neither time.perf_counter nor time.time is read."""
    def no_clock():
        raise AssertionError("a clock was read")

    kw = dict(n_vectors=100, X_train=Xtr, y_train=ytr, random_state=3)
    monkeypatch.setattr(time, "perf_counter", no_clock)
    monkeypatch.setattr(time, "time", no_clock)
    a = compress_any(krr, Xva, yva, **kw)
    b = compress_any(krr, Xva, yva, **kw)
    monkeypatch.undo()
    assert a.compress_report_["work"][0]["n_init"] == 1  # the bound was applied
    ea, eb = a.expansion_, b.expansion_
    assert ea.vectors.tobytes() == eb.vectors.tobytes()
    assert np.asarray(ea.coef).tobytes() == np.asarray(eb.coef).tobytes()
    assert np.asarray(ea.intercept).tobytes() == np.asarray(eb.intercept).tobytes()
    rows = [{k: v for k, v in r.items() if k != "seconds"} for r in a.compress_report_["rows"]]
    assert rows == [{k: v for k, v in r.items() if k != "seconds"}
                    for r in b.compress_report_["rows"]]
    assert all(np.isnan(r["seconds"]) for r in a.compress_report_["rows"])
