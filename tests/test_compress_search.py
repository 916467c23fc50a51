"""compress's search (issue 39): deterministic without a clock, the same for every
n_jobs, and a screening that never drops the candidate the full search would choose."""

import threading
import time

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.svm import SVC

import sparsekm
from sparsekm.compression._search import screen_margin

from .test_compress import DOCUMENTED_AUTO, compress_checked


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(600, centers=4, cluster_std=2.5, random_state=1)
    ovo = SVC(C=1, gamma=0.2).fit(X[:200], y[:200])
    return ovo, X[:200], y[:200], X[200:400], y[200:400]


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(600, noise=0.25, random_state=0)
    svc = SVC(C=10, gamma=1.0).fit(X[:200], y[:200])
    return svc, X[:200], y[:200], X[200:400], y[200:400]


def _call(data, **kw):
    model, Xtr, ytr, Xv, yv = data
    kw = {"n_vectors": 8, "random_state": 0, "n_init": 2, "max_iter": 50, **kw}
    return compress_checked(model, Xv, yv, X_train=Xtr, y_train=ytr, **kw)


def _bytes(model):
    """The fitted model as bytes: its expansion and decision rule."""
    psi = model.expansion_
    return b"".join(np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in
                    (psi.vectors, psi.coef, np.atleast_1d(psi.intercept))) + \
        repr((model.scheme_, model.n_vectors_, model.classes_.tolist())).encode()


def _saved(model, path):
    """The saved file's members (the ZIP's own time stamps left out)."""
    import zipfile

    sparsekm.save(model, path)
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


class _JumpingClock:
    """Every read from the test's own thread jumps by three hours and is counted.

    Reads from other threads (a dask cluster's event loop that another test left running
    in this process) get the real clock: they are not the search's, and a jumping clock
    would break them.
    """

    def __init__(self, real):
        self.t, self.reads, self.real = 1e6, 0, real
        self.thread = threading.get_ident()

    def __call__(self):
        if threading.get_ident() != self.thread:
            return self.real()
        self.reads += 1
        self.t += 3 * 3600.0
        return self.t


def test_default_call_reads_no_clock_and_gives_the_same_model(blobs, monkeypatch, tmp_path):
    """Without time_limit the search never reads a clock: under a fake clock that jumps
    by hours at every read (were it read, any time-based rule would fire) it is never
    called, and the model (and its saved file) is byte for byte the one of a normal run."""
    reference = _call(blobs)
    clocks = [_JumpingClock(getattr(time, name))
              for name in ("perf_counter", "time", "monotonic", "process_time")]
    for name, clock in zip(("perf_counter", "time", "monotonic", "process_time"), clocks):
        monkeypatch.setattr(time, name, clock)
    jumped = _call(blobs)
    monkeypatch.undo()
    assert [clock.reads for clock in clocks] == [0, 0, 0, 0]
    assert _bytes(jumped) == _bytes(reference)
    assert _saved(jumped, tmp_path / "a.skm") == _saved(reference, tmp_path / "b.skm")
    rows = jumped.compress_report_["rows"]
    assert [r["method"] for r in rows][:len(DOCUMENTED_AUTO)] == DOCUMENTED_AUTO
    assert all(np.isnan(r["seconds"]) for r in rows)  # untimed unless asked
    assert np.isnan(jumped.compress_report_["total_seconds"])


def test_timing_is_reported_but_never_changes_the_model(blobs):
    timed = _call(blobs, timing=True)
    assert _bytes(timed) == _bytes(_call(blobs))
    rep = timed.compress_report_
    assert rep["total_seconds"] > 0
    assert f"total time: {rep['total_seconds']:.1f} s" in rep.table()
    ran = [r for r in rep["rows"] if r["status"] in ("ok", "chosen", "screened")]
    assert ran and all(r["seconds"] >= 0 for r in ran)


@pytest.mark.parametrize("which", ["blobs", "moons"])
def test_n_jobs_1_and_2_give_the_same_model_and_report(which, request):
    data = request.getfixturevalue(which)
    one = _call(data, n_jobs=1)
    two = _call(data, n_jobs=2)
    assert _bytes(one) == _bytes(two)
    assert one.compress_report_.table() == two.compress_report_.table()


@pytest.mark.parametrize("which, n_vectors", [("blobs", 8), ("blobs", 16), ("moons", 8),
                                              ("moons", 4)])
def test_screening_never_drops_the_full_searchs_choice(which, n_vectors, request):
    """The full search (every candidate in full, screen=False) and the screened one
    choose the same candidate and the same model; the screened one finishes only
    candidates within the margin of the best screening error."""
    data = request.getfixturevalue(which)
    full = _call(data, n_vectors=n_vectors, screen=False)
    fast = _call(data, n_vectors=n_vectors)
    assert fast.chosen_method_ == full.chosen_method_
    assert _bytes(fast) == _bytes(full)
    rows = fast.compress_report_["rows"]
    assert all(r["status"] != "screened" for r in full.compress_report_["rows"])
    for r in rows:
        if r["status"] == "screened":
            assert r["reason"].startswith("screening (")
    n_eval = data[4].size
    _check_screened(rows, n_eval)


def _check_screened(rows, n_eval):
    """Each screened row's reason holds: its error (the screening fit's) is more than the
    margin above the best error of the candidates screened (the same fidelity), or it is
    listed after a full fit without validation error."""
    by_method = {r["method"]: r for r in rows}
    for k, r in enumerate(rows):
        if r["status"] != "screened":
            continue
        if "above the best screening error" in r["reason"]:
            best = float(r["reason"].split("best screening error ")[1].split(" %")[0]) / 100
            leader = r["reason"].split("(")[-1].rstrip(")")
            assert by_method[leader]["status"] != "refused"
            assert r["val_error"] > best + screen_margin(best, n_eval) - 1e-4
        else:
            lead = r["reason"].split("cannot beat ")[1].split("'s ")[0]
            L = by_method[lead]
            assert L["status"] in ("ok", "chosen") and L["val_error"] == 0.0
            assert [x["method"] for x in rows].index(lead) < k


def test_screening_on_the_digits_spends_full_fits_only_where_they_can_win():
    """On the embedded digits the construction (fitted in full at once) already has no
    validation error: a later candidate cannot beat it, so none of the costly fits (the
    SLMCs, refine) runs in full; the result is the full search's."""
    from sklearn.model_selection import train_test_split

    from sparsekm import datasets

    Xtr, ytr, _, _ = datasets.load_digits_default()
    Xf, Xv, yf, yv = train_test_split(Xtr, ytr, test_size=0.15, stratify=ytr, random_state=0)
    svc = SVC(C=10, gamma=1 / 32).fit(Xf, yf)
    data = (svc, Xf, yf, Xv, yv)
    kw = dict(n_vectors=60, n_init=1, max_iter=30)
    fast = _call(data, **kw)
    rows = fast.compress_report_["rows"]
    status = {r["method"]: r["status"] for r in rows}
    assert status["construct"] == "chosen" and rows[0]["val_error"] == 0.0
    assert all(status[m] == "screened" for m in ("slmc", "slmc-peer", "uniform-svm"))
    _check_screened(rows, yv.size)
    full = _call(data, screen=False, **kw)
    assert full.chosen_method_ == "construct" and _bytes(full) == _bytes(fast)


def test_screening_keeps_a_costly_winner_on_a_case_with_a_known_answer():
    """A constructed case: labels from a kernel machine on 6 centres, the original an
    SVC with many support vectors, the budget 6. The direct methods on the training data
    can recover the 6-centre machine; the full search's choice must survive screening."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(6, 2)) * 2.0
    X = rng.normal(size=(900, 2)) * 2.0
    d = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
    y = (np.exp(-0.5 * d) @ np.array([1, -1, 1, -1, 1, -1.0]) > 0).astype(int)
    svc = SVC(C=10, gamma=0.5).fit(X[:300], y[:300])
    data = (svc, X[:300], y[:300], X[300:600], y[300:600])
    full = _call(data, n_vectors=6, screen=False)
    fast = _call(data, n_vectors=6)
    assert fast.chosen_method_ == full.chosen_method_
    assert _bytes(fast) == _bytes(full)
    # the answer is known: a 6-vector machine that matches the labelling rule closely
    assert np.mean(fast.predict(X[600:]) != y[600:]) < 0.1


def test_screen_margin_is_two_standard_errors_or_half_a_point():
    np.testing.assert_allclose(screen_margin(0.2, 100), 2 * np.sqrt(0.2 * 0.8 / 100))
    assert screen_margin(0.0, 100) == 0.005
    assert screen_margin(0.01, 10**6) == 0.005


def test_a_dask_client_gives_the_same_model(blobs):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        on_dask = _call(blobs, client=client)
    assert _bytes(on_dask) == _bytes(_call(blobs))
    with pytest.raises(TypeError, match="'client' parameter of compress"):
        _call(blobs, client="localhost:8786")


def test_a_candidate_that_fails_does_not_sink_the_search(blobs, monkeypatch):
    """A candidate raising at its screening fit (here the uniform-subset SVM, screened on
    this problem) is reported as failed; the others are screened, finished and chosen as
    usual (the search crashed on such a failure: bench_many_classes)."""
    import importlib

    cc = importlib.import_module("sparsekm.compression._candidates")

    def broken(self, *a, **k):
        raise RuntimeError("broken on purpose")
    monkeypatch.setattr(cc.UniformSVM, "build", broken)
    small = _call(blobs)
    rows = {r["method"]: r for r in small.compress_report_["rows"]}
    assert rows["uniform-svm"]["status"] == "failed"
    assert rows["uniform-svm"]["reason"] == "RuntimeError: broken on purpose"
    assert small.chosen_method_ != "uniform-svm"


# -- the work bound of the default search (issue 39, large budgets) --------------------
def _problem(svc, n_train, bounded=True):
    """A Problem around ``svc`` whose training split has ``n_train`` rows (the counts
    only: no candidate is fitted)."""
    from sparsekm.compression._candidates import Problem, Split
    from sparsekm.convert import exact_classifier

    exact = exact_classifier(svc, svc.classes_)
    X = np.zeros((n_train, svc.n_features_in_))
    y = np.resize(svc.classes_, n_train)
    split = Split(X, y, X[:10], y[:10], exact)
    return Problem(exact, [split], None, True, 5, 200, 0, source_C=1.0, bounded=bounded)


_ITERATIVE = ("construct+refine", "slmc", "slmc-peer")


@pytest.mark.parametrize("n_train, n_vectors", [(200, 8), (6_000, 100), (6_000, 1_000),
                                                (60_000, 250)])
def test_the_work_bound_holds_for_every_iterative_candidate(blobs, n_train, n_vectors):
    """The stated rule: an iterative candidate of the default search runs (its full fit's
    estimate at most max(WORK_RATIO x the peer's, WORK_FLOOR)) or is refused, and is
    refused exactly when the bound would leave it less than its screening's share of its
    iterations. A candidate within the bound keeps all of its iterations; a named method
    (bounded=False) is never cut."""
    from sparsekm.compression._candidates import (
        CANDIDATES,
        FULL,
        SCREEN_ITER_FRACTION,
        WORK_FLOOR,
        WORK_RATIO,
    )

    problem = _problem(blobs[0], n_train)
    peer = CANDIDATES["kmeans-svm"].cost(problem, n_vectors) + \
        CANDIDATES["uniform-svm"].cost(problem, n_vectors)
    limit = max(WORK_RATIO * peer, WORK_FLOOR)
    assert problem.work_limit(n_vectors) == pytest.approx(limit)
    for m in _ITERATIVE:
        c = CANDIDATES[m]
        unbounded = c.work(problem, n_vectors, FULL)
        why = c.refusal(problem, n_vectors)
        if unbounded <= limit:
            assert why is None and c.cost(problem, n_vectors) == pytest.approx(unbounded)
        elif unbounded * SCREEN_ITER_FRACTION > limit:
            assert why is not None and why.startswith("work bound")
        else:
            assert why is None
            assert c.cost(problem, n_vectors) == pytest.approx(limit)
            # the iterations it is given stay within its share
            full = c.iterations(problem, n_vectors, FULL, 100)
            assert full <= np.ceil(100 * limit / unbounded)
        free = _problem(blobs[0], n_train, bounded=False)
        assert c.refusal(free, n_vectors) is None
        assert c.cost(free, n_vectors) == pytest.approx(unbounded)


def test_the_bound_scales_with_the_peer_so_a_large_budget_is_bounded(blobs):
    """Both the peer's estimate and an SLMC's grow as rows x vectors: from the budget
    where 3 x the peer passes the floor, their ratio is fixed, so a problem ten times
    larger is bounded exactly as much (not more) -- the SLMC, whose full fit is estimated
    at well over four times the bound there, is refused on both."""
    from sparsekm.compression._candidates import CANDIDATES

    slmc = CANDIDATES["slmc"]
    small, large = _problem(blobs[0], 6_000), _problem(blobs[0], 60_000)
    assert slmc.work_fraction(small, 1_000) == pytest.approx(slmc.work_fraction(large, 1_000))
    assert slmc.refusal(small, 1_000) is not None and slmc.refusal(large, 1_000) is not None
    # on the test fixtures' size the floor leaves every candidate all its iterations
    tiny = _problem(blobs[0], 200)
    assert all(CANDIDATES[m].work_fraction(tiny, 8) == 1.0 for m in _ITERATIVE)


def test_a_refused_candidate_is_reported_and_a_named_one_runs(blobs, monkeypatch):
    """With the floor lowered so that the bound binds on the small fixture: the default
    search reports the SLMCs as refused with the bound's reason and chooses among the
    others; naming "slmc" runs it anyway. The SLMC is given at most its share of
    iterations wherever it runs bounded."""
    from sparsekm.compression import _candidates
    from sparsekm.models import SLMC

    monkeypatch.setattr(_candidates, "WORK_FLOOR", 1.0)
    rows = _call(blobs).compress_report_["rows"]
    status = {r["method"]: (r["status"], r["reason"]) for r in rows}
    for m in ("slmc", "slmc-peer"):
        assert status[m][0] == "refused" and status[m][1].startswith("work bound")
    assert any(r["status"] == "chosen" for r in rows)
    seen = []
    real_fit = SLMC.fit

    def fit(self, *a, **kw):
        seen.append(self.max_iter)
        return real_fit(self, *a, **kw)

    monkeypatch.setattr(SLMC, "fit", fit)
    named = _call(blobs, method="slmc")
    assert named.compress_report_["rows"][named.compress_report_["chosen"]]["method"] == "slmc"
    assert seen and max(seen) == _candidates.SLMC_MAX_ITER  # unbounded: every iteration


def test_a_converged_screening_refine_is_the_full_fit():
    """The premise of reusing a screening refine that stopped on its tolerance: L-BFGS
    from the same start with a higher iteration limit stops at the same iterate (two
    independent runs, byte for byte), so no work is done twice."""
    from sparsekm.reduced_set import construct, refine

    X, y = make_blobs(300, centers=3, cluster_std=2.0, random_state=0)
    svc = SVC(C=1, gamma=0.3, decision_function_shape="ovr").fit(X, y)
    from sparsekm.convert import exact_classifier

    psi = exact_classifier(svc, svc.classes_).expansion
    start = construct(psi, 10, shared=True, n_init=1, max_iter=30, random_state=0).expansion
    short = refine(psi, start, max_iter=75)
    assert 0 < short.n_iter < 75  # it converged: the case the reuse is for
    long = refine(psi, start, max_iter=300)
    assert long.n_iter == short.n_iter
    assert np.array_equal(long.expansion.vectors, short.expansion.vectors)
    assert np.array_equal(long.expansion.coef, short.expansion.coef)


def test_a_screening_error_is_never_compared_with_a_full_fit(blobs, monkeypatch):
    """Successive halving compares like with like. A constructed case: the construction
    (fitted in full at once) errs on 10 % of the validation points; the k-means SVM errs
    on 30 % at its screening fidelity (fewer rows) and on 1 % in full. Its screening error
    is far above the construction's full error, but it is the full search's choice, so the
    screened search must finish it and choose it; the uniform SVM, 40 % at screening, is
    more than the margin above the best *screening* error and is screened."""
    from sparsekm.compression import _candidates as cc

    def faked(base, screen_error, full_error):
        class Faked(base):
            def screen_fidelity(self, problem, n_vectors):  # as on a large training set
                return cc.FULL if base is cc.Construct else cc.SCREEN

            def fit(self, problem, n_vectors, fidelity=cc.FULL):
                out = super().fit(problem, n_vectors, fidelity)
                out.error = screen_error if fidelity is not cc.FULL else full_error
                return out
        return Faked()

    for name, fake in (("construct", faked(cc.Construct, 0.10, 0.10)),
                       ("kmeans-svm", faked(cc.KMeansSVM, 0.30, 0.01)),
                       ("uniform-svm", faked(cc.UniformSVM, 0.40, 0.005))):
        monkeypatch.setitem(cc.CANDIDATES, name, fake)
    kw = dict(method=["construct", "kmeans-svm", "uniform-svm"])
    full = _call(blobs, screen=False, **kw)
    fast = _call(blobs, **kw)
    assert full.chosen_method_ == "uniform-svm"  # every candidate in full: the lowest
    rows = {r["method"]: r for r in fast.compress_report_["rows"]}
    assert rows["kmeans-svm"]["status"] == "chosen" and rows["kmeans-svm"]["val_error"] == 0.01
    assert rows["construct"]["status"] == "ok"
    # 40 % is more than the margin (2 SE of 30 % on 200 points: 6.5 points) above 30 %
    assert rows["uniform-svm"]["status"] == "screened"
    assert "best screening error 30.00 % (kmeans-svm)" in rows["uniform-svm"]["reason"]
    _check_screened(fast.compress_report_["rows"], blobs[4].size)
