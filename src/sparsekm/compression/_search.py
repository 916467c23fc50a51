"""The search of :func:`sparsekm.compress`: screen every candidate, finish the ones that
can still win, choose on validation data.

Deterministic by default: without ``time_limit`` nothing here reads a clock (timings are
recorded only with ``timing=True``, and never steer a choice); every candidate's work is
bounded by counts (:class:`~._candidates.Fidelity`). The search rule (docs/reduced_set.md):

1. *Screening.* Every candidate is fitted at its screening fidelity (at most
   ``SCREEN_ROWS`` training rows, one C value, a quarter of the iterations; a candidate
   whose screening would save less than half its work, such as the construction, is
   fitted in full at once).
2. *Successive halving, like with like.* A candidate screened at the screening fidelity
   goes on to its full fit only when its screening error is within
   ``margin = max(SCREEN_SE * SE, SCREEN_MIN_MARGIN)`` of the best screening error among
   the candidates screened (SE: the binomial standard error of that best error on the
   validation points). A screening error (fewer rows, one C, fewer iterations) overstates
   the full fit's, so it is never compared with a candidate fitted in full at once. The
   others are reported as ``"screened"`` with their screening error.
3. *The one bound across fidelities.* No error is below zero and ties go to the
   candidate listed first: a candidate listed after a full fit without validation error
   cannot win and is not finished. The rest are fitted in full together.
4. *Choice.* Among the full fits: the lowest validation error; ties go to fewer vectors,
   then to the candidate listed first.

With ``method="auto"`` the iterative candidates (refine, the SLMCs) are bounded first
(``_candidates.WORK_RATIO``, ``WORK_FLOOR``): a full fit may do at most ``max(3 x the
peer's estimated work, WORK_FLOOR)`` kernel evaluations, its iterations cut in proportion;
one left less than its screening's share is refused.

Candidates of one stage are independent: with ``n_jobs`` they run in parallel (joblib),
each with one BLAS/OpenMP thread, so that the result is the same for every ``n_jobs``.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
from sklearn.utils import check_random_state

from ..convert import exact_classifier
from ..expansion import KernelExpansion
from ..utils.optimize import Deadline
from ..utils.progress import progress
from ..utils.validation import check_array, check_labels, check_scalar
from ._any import compress_any, is_any_model
from ._candidates import CANDIDATES, FULL, Problem, Split
from ._model import CompressedClassifier
from ._report import CompressReport, _pct

__all__ = ["compress", "AUTO_METHODS", "METHOD_LABELS"]

#: Default tolerance when neither ``n_vectors`` nor ``max_error_increase`` is given.
DEFAULT_MAX_ERROR_INCREASE = 0.005
#: A result whose validation error exceeds the full machine's by more than this
#: (absolute: 0.02 = two percentage points) is warned about.
WARN_MARGIN = 0.02
#: Stratified folds when no validation data is given.
DEFAULT_CV = 3
#: Without validation data the model returned is built once more, on all the training
#: data, after the folds chose it. One whose error on them exceeds its CV estimate by
#: more than ``max(WARN_MARGIN, REBUILD_SE * SE)`` (SE: the binomial standard error of the
#: estimate over the training points) is not the model the folds validated (a non-convex
#: build landed elsewhere: on IDA image at 16 vectors, construct + refine had 5.3 % in CV
#: and 11.7 % on the training data once rebuilt). Such a candidate is refused.
REBUILD_SE = 2.0
#: Screening: a candidate is finished when its screening error is within this many
#: binomial standard errors of the best screening error ...
SCREEN_SE = 2.0
#: ... or within this absolute margin (half a point), whichever is larger.
SCREEN_MIN_MARGIN = 0.005
#: ``method="auto"``: the candidates, from cheap to costly (ties go to the earlier one).
#: Among the fixed-Z linear SVMs the k-means one (scikit-learn's Nystroem k-means +
#: LinearSVC, the peer) comes first; ``"slmc-peer"`` is Wu et al.'s SLMC started from the
#: peer's landmarks.
AUTO_METHODS = ("construct", "construct+refine", "kmeans-svm", "uniform-svm", "greedy-svm",
                "slmc", "slmc-peer")
_RS_METHODS = ("construct", "construct+refine", "select-kpca", "select-backward", "select-l1")
_DIRECT_METHODS = ("uniform-svm", "kmeans-svm", "greedy-svm", "slmc", "slmc-peer")
#: What every method is (the report's and the CLI's words).
METHOD_LABELS = {**{name: c.label for name, c in CANDIDATES.items()},
                 "original": "the original machine, unchanged"}


def _source_C(model):
    """The original machine's ``C`` (an SVC, or a one-vs-rest / one-vs-one wrapper around
    one), or None when it has none."""
    get = getattr(model, "get_params", None)
    if get is None:
        return None
    try:
        params = get()
    except Exception:  # noqa: BLE001 - a model without usable parameters has no C
        return None
    for key in ("C", "estimator__C"):
        C = params.get(key)
        if isinstance(C, (int, float)) and not isinstance(C, bool) and np.isfinite(C) and C > 0:
            return float(C)
    return None


def _binomial_se(p, n):
    """Binomial standard error of an error rate ``p`` measured on ``n`` points."""
    return float(np.sqrt(p * (1.0 - p) / n))


def _rebuild_margin(cv_error, n):
    """How far a rebuilt model's error on its own ``n`` training points may exceed its CV
    estimate ``cv_error`` (see ``REBUILD_SE``)."""
    return max(WARN_MARGIN, REBUILD_SE * _binomial_se(cv_error, n))


def screen_margin(best_error, n_eval):
    """How far above the best screening error a candidate may be and still be finished
    (see ``SCREEN_SE``, ``SCREEN_MIN_MARGIN``)."""
    return max(SCREEN_SE * _binomial_se(best_error, n_eval), SCREEN_MIN_MARGIN)


def _check_labels(X, y, nx, ny, owner):
    X = check_array(X, nx)
    return X, check_labels(y, X.shape[0], ny, nx)


def _methods(method, owner):
    known = set(CANDIDATES)
    if isinstance(method, str):
        names = list(AUTO_METHODS) if method == "auto" else [method]
    elif isinstance(method, (list, tuple)):
        names = list(method)
    else:
        raise TypeError(f"The 'method' parameter of {owner} must be 'auto', a method name or "
                        f"a list of them. Got {type(method).__name__} {method!r} instead.")
    bad = [m for m in names if not isinstance(m, str) or m not in known]
    if not names or bad:
        raise ValueError(f"The 'method' parameter of {owner} must be 'auto', one of "
                         f"{sorted(known)} or a list of them. Got {method!r} instead.")
    return list(dict.fromkeys(names))


def _refittable(model):
    """An unfitted copy of the original estimator, if it can be re-trained on folds."""
    from sklearn.base import clone
    try:
        return clone(model) if hasattr(model, "fit") and hasattr(model, "get_params") and \
            not hasattr(model, "_classifier") and not isinstance(model, KernelExpansion) and \
            type(model).__name__ != "ExpansionClassifier" else None
    except Exception:
        return None


def _fit_one(problem, candidate, n_vectors, fidelity, may_skip, timing):
    """One candidate's fit, with one BLAS/OpenMP thread: ``(status, CandidateFit or
    reason, seconds)``. Never raises: a candidate failing must not sink the others."""
    from threadpoolctl import threadpool_limits

    if may_skip and problem.expired():
        return "skipped", f"time limit {problem.deadline.seconds:g} s spent", float("nan")
    t0 = time.perf_counter() if timing else None
    try:
        with threadpool_limits(limits=1):
            fit = candidate.fit(problem, n_vectors, fidelity)
        status, out = "ok", fit
    except Exception as exc:  # noqa: BLE001
        status, out = "failed", f"{type(exc).__name__}: {exc}"[:300]
    return status, out, (time.perf_counter() - t0) if timing else float("nan")


class _Search:
    """The state of one :func:`compress` call: the problem, the report, the models."""

    def __init__(self, problem, report, n_jobs, timing, verbose, chance, X_agree, client=None):
        self.client = client
        self.problem, self.report = problem, report
        self.n_jobs, self.timing, self.verbose = n_jobs, timing, verbose
        self.chance, self.X_agree = chance, X_agree
        self.built = {}        # row index -> model
        self._exact_pred = None
        self.cut = []          # what the time limit cut (for the warning)
        self.any_fit = False   # a candidate has been fitted (the first is never skipped)

    @property
    def rows(self):
        return self.report["rows"]

    def agreement(self, model):
        if self._exact_pred is None:
            self._exact_pred = self.problem.exact.predict(self.X_agree)
        return float(np.mean(model.predict(self.X_agree) == self._exact_pred))

    def row(self, m, budget, **kw):
        """Append a report row (``budget``: the budget asked; ``n_vectors``, in ``kw``:
        the model's distinct vectors)."""
        r = {"method": m, "variant": "", "budget": int(budget), "n_vectors": 0,
             "val_error": float("nan"), "agreement": float("nan"), "seconds": float("nan"),
             "status": "ok", "reason": ""}
        r.update(kw)
        self.rows.append(r)
        return len(self.rows) - 1

    def run(self, names, n_vectors, fidelities):
        """Fit the candidates ``names`` at budget ``n_vectors`` (each at ``fidelities[name]``),
        in parallel with ``n_jobs``; returns ``{name: (status, fit or reason, seconds)}``.
        The first candidate is never skipped for time."""
        if not names:
            return {}
        started = self.any_fit
        jobs = [(self.problem, CANDIDATES[m], n_vectors, fidelities[m], started or i > 0,
                 self.timing) for i, m in enumerate(names)]
        stage = "/".join(sorted({f.name for f in fidelities.values()}))
        if self.client is not None and len(jobs) > 1:
            # one task per candidate on the cluster (each with one thread, as here); the
            # results come back in the candidates' order, whatever order they finish in
            futures = [self.client.submit(_fit_one, *job, pure=False) for job in jobs]
            results = self.client.gather(futures)
        elif self.n_jobs in (None, 1) or len(jobs) == 1:
            results = []
            # progress in units of the candidates' cost estimates (kernel evaluations, in
            # millions), so that the bar's rate gives an estimate of the time left
            cost = [CANDIDATES[m].cost(self.problem, n_vectors, fidelities[m]) / 1e6
                    for m in names]
            bar = progress(total=sum(cost), desc=f"compress {stage} n_vectors={n_vectors}",
                           unit="M kernel evaluations", unit_scale=False,
                           bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix} "
                                      "[{elapsed}<{remaining}]",
                           disable=None if self.verbose else True)
            for m, job, c in zip(names, jobs, cost, strict=True):
                bar.set_postfix_str(m)
                results.append(_fit_one(*job))
                bar.update(c)
            bar.close()
        else:
            from joblib import Parallel, delayed

            # the construction every RS candidate and the SLMC start from: once, here,
            # so that the workers receive it (a worker would build the same one again)
            if any(m in ("construct+refine", "slmc") for m in names) and \
                    "construct" in names[:1]:
                first = _fit_one(*jobs[0])
                rest = Parallel(n_jobs=self.n_jobs, verbose=10 if self.verbose else 0)(
                    delayed(_fit_one)(*job) for job in jobs[1:])
                results = [first, *rest]
            else:
                results = Parallel(n_jobs=self.n_jobs, verbose=10 if self.verbose else 0)(
                    delayed(_fit_one)(*job) for job in jobs)
        self.any_fit = self.any_fit or any(r[0] == "ok" for r in results)
        return dict(zip(names, results, strict=True))

    def record(self, m, n_vectors, result, reference=False, screened_reason=None):
        """A report row for ``result`` (see :meth:`run`); returns its index."""
        status, fit, secs = result
        if status != "ok":
            if status == "skipped":
                self.cut.append(f"{m} skipped")
            return self.row(m, n_vectors, status=status, reason=fit, seconds=secs)
        p = self.problem
        notes = list(fit.notes)
        if fit.deadline_stops:
            notes.append(f"time limit: {fit.deadline_stops} SLMC fit(s) stopped at the "
                         "deadline before L-BFGS converged (stop reason: deadline)")
            self.cut.append(f"{m}: {fit.deadline_stops} SLMC fit(s) stopped")
        if fit.cut:
            notes.append(f"time limit: {', '.join(fit.cut)} not tried")
            self.cut.append(f"{m}: {', '.join(fit.cut)} not tried")
        n = fit.n_vectors
        i = self.row(m, n_vectors, variant=fit.variant.label, n_vectors=n, val_error=fit.error,
                     agreement=self.agreement(fit.model), seconds=secs,
                     status="reference" if reference else "ok")
        r = self.rows[i]
        n_full = p.n_full
        if screened_reason is not None:
            r.update(status="screened", reason="; ".join([screened_reason, *notes]))
            self.built[i] = fit.model
            return i
        r["reason"] = "; ".join(notes)
        if n > n_vectors or n > n_full:  # never more vectors than asked (a bug if it happens)
            r.update(status="failed", reason=f"{n} vectors exceed the budget {n_vectors}")
        elif not reference and fit.error >= self.chance - 1e-12 and self.chance > 0:
            r.update(status="refused", reason=f"error {_pct(fit.error)} is no better than "
                     f"always predicting the most frequent class ({_pct(self.chance)})")
        elif not reference and p.final is not None and \
                fit.fit_error > fit.error + _rebuild_margin(fit.error, p.final.y_fit.size) \
                + 1e-12:
            r.update(status="refused", reason=f"rebuilt on all the training data it errs on "
                     f"{_pct(fit.fit_error)} of them against {_pct(fit.error)} in CV: not "
                     "the model the folds validated")
        self.built[i] = fit.model
        if self.verbose:
            print(f"compress: {m} at {n_vectors}: {r['status']} {_pct(r['val_error'])} "
                  f"{r['reason']}", file=sys.stderr)
        return i

    def _usable(self, result, n_vectors):
        """Whether a fit would be an ``ok`` row (the checks of :meth:`record`)."""
        status, fit, _ = result
        if status != "ok" or fit.n_vectors > n_vectors or fit.n_vectors > self.problem.n_full:
            return False
        if fit.error >= self.chance - 1e-12 and self.chance > 0:
            return False
        f = self.problem.final
        return f is None or fit.fit_error <= fit.error + \
            _rebuild_margin(fit.error, f.y_fit.size) + 1e-12

    def budget(self, names, n_vectors, screen, n_eval):
        """Every candidate at budget ``n_vectors``: screened, then the ones that can still win
        fitted in full. Returns the row indices (one per candidate,
        in order)."""
        why = {m: CANDIDATES[m].refusal(self.problem, n_vectors) for m in names}
        runnable = [m for m in names if not why[m]]
        order = {m: k for k, m in enumerate(names)}
        screened = {}
        if screen and len(runnable) > 1:
            fid = {m: CANDIDATES[m].screen_fidelity(self.problem, n_vectors) for m in runnable}
            results = self.run(runnable, n_vectors, fid)
            # successive halving's rule: candidates compete only at the same fidelity. A
            # screening error (fewer rows, one C, fewer iterations) overstates the full
            # fit's, so it is compared with the other screening errors, never with a
            # candidate fitted in full at once (on the 26-class stand-in at 1,000 vectors
            # the k-means SVM screened at 5.44 % on 4,000 rows and fitted in full at
            # 3.28 %, below the construction's 3.89 %).
            errs = {m: r[1].error for m, r in results.items()
                    if r[0] == "ok" and fid[m] is not FULL}
            if errs:
                best = min(errs.values())
                margin = screen_margin(best, n_eval)
                leader = min(errs, key=lambda m: (errs[m], order[m]))
                for m, e in errs.items():
                    if e > best + margin + 1e-12:
                        screened[m] = (f"screening ({_fidelity_words(fid[m])}): error "
                                       f"{_pct(e)}, more than {_pct(margin)} above the best "
                                       f"screening error {_pct(best)} ({leader})")
                finish = [m for m in runnable if m in errs and m not in screened]
                # the one bound that holds across fidelities: no error is below zero, and
                # ties go to the candidate listed first, so none listed after a full fit
                # without validation error can win
                perfect = [m for m in runnable if fid[m] is FULL and m in results
                           and self._usable(results[m], n_vectors)
                           and results[m][1].error <= 0.0]
                if perfect:
                    lead = perfect[0]
                    for m in [m for m in finish if order[m] > order[lead]]:
                        finish.remove(m)
                        screened[m] = (f"screening ({_fidelity_words(fid[m])}): error "
                                       f"{_pct(errs[m])}; it cannot beat {lead}'s 0.00 % "
                                       "(full fit, listed first)")
                results.update(self.run(finish, n_vectors, {m: FULL for m in finish}))
        else:
            results = self.run(runnable, n_vectors, {m: FULL for m in runnable})
        idx = []
        for m in names:
            if why[m]:
                idx.append(self.row(m, n_vectors, status="refused", reason=why[m]))
            else:
                idx.append(self.record(m, n_vectors, results[m], screened_reason=screened.get(m)))
        return idx

    def usable(self, idx):
        return [i for i in idx if self.rows[i]["status"] == "ok"]

    def best_of(self, idx):
        """Lowest error; ties: fewer vectors, then listed first."""
        idx = self.usable(idx)
        return min(idx, key=lambda i: (self.rows[i]["val_error"], self.rows[i]["n_vectors"],
                                       i)) if idx else None


def _fidelity_words(f):
    if f is FULL:
        return "full"
    return (f"at most {max(f.rows, 0):,} rows, {f.n_C} C value, "
            f"{100 * f.iter_fraction:.0f} % of the iterations")


def compress(model, X_val=None, y_val=None, *, n_vectors=None, max_error_increase=None,
             method="auto", X_train=None, y_train=None, time_limit=None, random_state=None,
             shared=True, cv=DEFAULT_CV, n_init=5, max_iter=200, screen=True, n_jobs=None,
             client=None, timing=False, verbose=False, max_bytes=None, max_latency_us=None,
             latency_target="cost model", precision=None):
    """The best small classifier for a budget, or the smallest within a tolerance.

    Tries several ways to make a kernel classifier cheap -- reduced sets of the
    machine itself and machines trained directly with few vectors -- and picks on
    validation data (never on a test set). Deterministic: the same inputs and
    ``random_state`` give the same model, byte for byte, at any machine load and for
    any ``n_jobs``; without ``time_limit`` no clock is read.

    A fitted ``KernelRidge``, ``GaussianProcessRegressor``, ``SVR``/``NuSVR``,
    ``OneClassSVM`` or ``KernelPCA`` is compressed at the budget ``n_vectors`` (or the
    smallest of 2, 4, 8, ... within ``max_error_increase``) by
    :func:`sparsekm.compression._any.compress_any` (reduced sets, the ridge refit of the
    outer weights, the Nyström + ridge peers; ``y_val=None`` for the unsupervised ones)
    and returned as an :class:`~sparsekm.models.ExpansionRegressor`,
    :class:`~sparsekm.models.ExpansionOutlierDetector` or
    :class:`~sparsekm.models.ExpansionTransformer` with its ``compress_report_``.

    Parameters
    ----------
    model : fitted classifier or KernelExpansion
        ``SVC``/``NuSVC`` (binary or one-vs-one), ``OneVsRestClassifier(SVC)``,
        ``OneVsOneClassifier(SVC)``, an :class:`~sparsekm.multiclass.ExpansionClassifier`,
        a sparsekm classifier with ``expansion_`` (SLMC, ApproxSVC,
        ReducedSetClassifier, ...) or a ``KernelExpansion`` (binary: sign; several
        outputs: one-vs-rest over ``np.unique(y)``); converted by
        :func:`sparsekm.convert.exact_classifier`.
    X_val, y_val : array-like, optional
        Validation data: every choice (method, C, thresholds, size) is made on it; it
        is never used to fit anything. Without it, choices are made by ``cv``-fold
        stratified cross-validation inside ``X_train`` (cost: every candidate is built
        ``cv`` times, plus once on all training data; the reduced-set candidates need
        the original estimator re-trained on each fold, so they are refused for a
        model that cannot be re-trained, such as a loaded file). The model built on all
        training data is checked there: one that errs on them by more than its CV
        estimate plus ``max(WARN_MARGIN, REBUILD_SE * SE)`` is refused as not the model
        the folds validated, and the next candidate taken.
    n_vectors : int, optional
        Budget: distinct kernel evaluations per prediction, all classes together. The
        candidate with the lowest validation error within it is returned.
    max_error_increase : float >= 0, optional
        Tolerance: the smallest budget whose validation error is at most the
        original's plus this (a fraction). Not together with ``n_vectors``. With
        neither, the tolerance is ``DEFAULT_MAX_ERROR_INCREASE`` (0.005, half a point).
    method : "auto", str or list of str, default="auto"
        ``"auto"`` tries ``AUTO_METHODS``: ``"construct"`` (RS construction, eq. 74-77,
        one set shared by all binary machines), ``"construct+refine"`` (plus phase 2,
        joint L-BFGS), ``"kmeans-svm"`` and ``"uniform-svm"`` (fixed ``Z`` = the k-means
        centres / a uniform subset of the training data, features
        ``K(x, Z) K_zz^{-1/2}``, ``LinearSVC``, written back as ``beta = K_zz^{-1/2} w``:
        scikit-learn's Nystroem + LinearSVC, exactly), ``"greedy-svm"`` (one greedy
        basis, Franc & Hlavac, shared by all classes + ``LinearSVC``), ``"slmc"``
        (shared SLMC, Wu et al., started from the shared RS) and ``"slmc-peer"`` (the
        same, started from the k-means landmarks of the peer). The linear SVMs choose C
        on validation among ``C_GRID`` (on more than 13,333 fit rows on a stratified
        subsample of ``C_SEARCH_ROWS`` rows, the chosen C then fitted on all rows); the
        SLMCs among the ``SLMC_N_C`` grid values nearest the original's C; the RS
        methods their thresholds (kept, or re-fitted on the training data). Also
        ``"select-kpca"``, ``"select-backward"``, ``"select-l1"``. The direct methods
        need ``X_train, y_train``; without them they are refused.
    X_train, y_train : array-like, optional
        The original's training data (for the direct methods and re-fitted thresholds).
    time_limit : float, optional
        A hard cap in seconds (default: none, and then no clock is read). Its clock
        starts after the input checks. Candidates not started when it is spent are
        skipped, a candidate's C values not yet tried are cut, and an SLMC fit running
        then stops after its current L-BFGS iteration, keeping the best ``Z`` so far
        (stop reason: the deadline). The report and a warning say what it cut; the
        result then depends on the machine's speed and load.
    random_state : int, RandomState instance or None
    shared : bool, default=True
        Reduced-set candidates of a multi-class machine: one set shared by all binary
        machines (``False``: ``n_vectors // n_outputs`` per machine).
    cv : int, default=3
        Folds when ``X_val`` is not given (another value together with ``X_val`` is
        refused: it would not be used).
    n_init, max_iter : int
        RS construction settings (see :func:`~sparsekm.reduced_set.construct`).
    screen : bool, default=True
        Budget mode: screen every candidate cheaply and finish only those that can
        still win (the rule in the Notes). ``False``: every candidate in full.
    n_jobs : int or None, default=None
        Candidates fitted in parallel (joblib processes; each with one BLAS thread).
        The result does not depend on it.
    client : dask.distributed.Client, optional
        Fit the candidates of a stage as tasks on this cluster instead (one per
        candidate); the result does not depend on it either.
    timing : bool, default=False
        Record each candidate's wall-clock seconds and the total in the report (they
        never steer a choice; off by default so that the saved report, too, is the
        same byte for byte).
    verbose : bool, default=False
        A progress display per stage and candidate, and a line per candidate.
    max_bytes : int, optional
        Budget in bytes of the deployed form (vectors, scales, coefficients,
        thresholds, class labels as :func:`sparsekm.c_export.to_c` stores them; see
        :func:`sparsekm.deploy.plan_budget`), for classifiers. Instead of
        ``n_vectors``: each storage precision's largest ``n_vectors`` is built, and
        the (size, precision) pair with the lowest validation error as stored is
        returned (ties: fewer bytes). Needs ``X_val, y_val``. The report's
        ``deploy_*`` entries give the precision, the conversion and every
        precision's result.
    max_latency_us : float, optional
        Budget in microseconds per row, with or instead of ``max_bytes``.
    latency_target : {"cost model", "this machine"}, default="cost model"
        How latency is computed (:func:`sparsekm.deploy.plan_budget`); "this machine"
        compiles and times the C code (reads a clock).
    precision : str or tuple of str, default=None
        The storage precisions searched with a byte/latency budget (default
        float32, float16, int8).

    Returns
    -------
    CompressedClassifier
        ``predict``, ``decision_function``, ``classes_``, ``n_vectors_`` (at most the
        budget, and never more than the original's distinct vectors) and
        ``compress_report_`` (:class:`CompressReport`: one row per candidate, ``plot()``).

    Notes
    -----
    Search (budget mode, ``screen=True``): every candidate is fitted at its screening
    fidelity (at most ``SCREEN_ROWS`` training rows, one C value, a quarter of the
    iterations; at full fidelity at once where that would save less than half the
    work). A screened candidate is then fitted in full only when its screening error is
    within ``max(SCREEN_SE * SE, SCREEN_MIN_MARGIN)`` (two binomial standard errors of
    the best screening error on the validation points, at least half a point) of the
    best screening error (successive halving: screening errors are compared with each
    other only, never with a full fit); the others are reported as ``"screened"``, and
    so is one listed after a full fit without validation error (it cannot win the tie).
    With ``method="auto"`` the iterative candidates (``construct+refine``,
    the SLMCs) are first bounded: a full fit may do at most ``max(WORK_RATIO * P,
    WORK_FLOOR)`` estimated kernel evaluations (``P``: the same estimate for the peer's
    fit with its C search, Nystrom k-means and uniform + LinearSVC; 3 and 8e7), its
    iterations cut in proportion; one left less than ``SCREEN_ITER_FRACTION`` of its
    iterations is refused (the report says why). A screening refine that converged
    before its iteration limit is its full fit.

    Choice rule: the lowest validation error; ties go to fewer vectors, then to the
    candidate listed first. A candidate whose validation error is no better than
    always predicting the most frequent class is refused. The result is warned about
    when its error exceeds the original's by more than ``WARN_MARGIN`` (two points) or
    exceeds the uniform-subset Nystrom SVM of the same budget; the report always gives
    its agreement with the original. When the budget is at least the original's number
    of distinct vectors, the original expansion is returned unchanged. The report's
    messages name the candidates whose validation error is within one binomial standard
    error of the chosen one's (a near tie that the validation data cannot resolve; the
    choice rule is unchanged). Tolerance mode walks the budgets ``1, 2, 4, ...`` (at
    each, the candidates in order, in full, until one meets the target), then bisects
    with the winning method.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklearn.svm import SVC
    >>> import sparsekm
    >>> X, y = make_moons(600, noise=0.2, random_state=0)
    >>> svc = SVC(C=10).fit(X[:300], y[:300])
    >>> small = sparsekm.compress(svc, X[300:450], y[300:450], n_vectors=10,
    ...                           X_train=X[:300], y_train=y[:300],
    ...                           method=["construct", "kmeans-svm"], random_state=0)
    >>> small.n_vectors_ <= 10
    True
    """
    owner = "compress"
    if max_bytes is not None or max_latency_us is not None:  # issue 37
        from ._budget import compress_within_budget

        return compress_within_budget(
            compress, model, X_val, y_val, n_vectors=n_vectors,
            max_error_increase=max_error_increase, max_bytes=max_bytes,
            max_latency_us=max_latency_us, latency_target=latency_target, precision=precision,
            method=method, X_train=X_train, y_train=y_train, time_limit=time_limit,
            random_state=random_state, shared=shared, cv=cv, n_init=n_init, max_iter=max_iter,
            screen=screen, n_jobs=n_jobs, client=client, timing=timing, verbose=verbose)
    if is_any_model(model):  # a regressor, one-class SVM or kernel PCA (issue 36)
        return compress_any(model, X_val, y_val, n_vectors=n_vectors, method=method,
                            X_train=X_train, y_train=y_train, random_state=random_state,
                            n_init=n_init, max_iter=max_iter, timing=timing,
                            max_error_increase=max_error_increase, time_limit=time_limit,
                            cv=cv, screen=screen, n_jobs=n_jobs, shared=shared,
                            verbose=verbose)
    (n_vectors, tol, methods, n_init, max_iter, n_jobs, time_limit, X_val, y_val, X_train,
     y_train) = _checked_arguments(owner, n_vectors, max_error_increase, method, n_init,
                                   max_iter, shared, screen, timing, n_jobs, time_limit, X_val,
                                   y_val, X_train, y_train, cv)
    exact = _checked_original(model, X_val, y_val, X_train, y_train, owner)
    psi = exact.expansion
    if X_val is None:
        cv = check_scalar(cv, "cv", owner, kind="int", lower=2)
    # the clock (with a time limit, or timing=True) starts after the checks
    t_start = time.perf_counter() if timing else None
    deadline = None if time_limit is None else Deadline(time_limit)
    rng = check_random_state(random_state)
    seed = int(rng.randint(np.iinfo(np.int32).max))
    n_full = int(psi.merge_duplicates().n_terms)
    splits, final, selection, messages = _splits(model, exact, X_val, y_val, X_train,
                                                 y_train, cv, seed, owner)
    problem = Problem(exact, splits, final, shared, n_init, max_iter, seed,
                      source_C=_source_C(model), deadline=deadline,
                      bounded=isinstance(method, str) and method == "auto")
    errs = [float("nan") if s.exact is None else problem.error(s.exact, s.X_eval, s.y_eval)
            for s in splits]
    full_error = float(np.nanmean(errs)) if not all(np.isnan(errs)) else float("nan")
    chance = float(np.mean([1 - np.max(np.unique(s.y_eval, return_counts=True)[1]) /
                            s.y_eval.size for s in splits]))
    report = CompressReport(mode="budget" if tol is None else "tolerance",
                            budget=int(n_vectors or 0), full_error=full_error,
                            full_n_vectors=n_full, selection=selection, rows=[],
                            chosen=-1, messages=messages,
                            target_error=float("nan") if tol is None else full_error + tol,
                            time_limit=float("nan") if time_limit is None else time_limit,
                            total_seconds=float("nan"))
    X_agree = X_val if X_val is not None else X_train
    if client is not None and not (hasattr(client, "submit") and hasattr(client, "gather")):
        raise TypeError(f"The 'client' parameter of {owner} must be a dask.distributed.Client; "
                        f"got {type(client).__name__}.")
    search = _Search(problem, report, n_jobs, timing, verbose, chance, X_agree, client)
    n_eval = int(y_val.size if X_val is not None else y_train.size)

    def original(reason):
        i = search.row("original", n_full, n_vectors=n_full, val_error=full_error,
                       agreement=1.0, status="ok", reason=reason)
        search.built[i] = exact
        return i

    if tol is None:
        if n_vectors >= n_full:
            chosen = original(f"budget {n_vectors} >= the original's {n_full} distinct "
                              "vectors: returned unchanged")
        else:
            chosen = search.best_of(search.budget(methods, n_vectors, screen, n_eval))
    else:
        chosen = _tolerance_walk(search, methods, n_full)
        if chosen is None:
            target = report["target_error"]
            chosen = original(f"no candidate below {n_full} vectors met the target "
                              f"{_pct(target)}: returned unchanged")
            report["budget"] = n_full
            warnings.warn(f"compress: no candidate below the original's {n_full} vectors met "
                          f"the target error {_pct(target)} on the {selection}; the original "
                          "is returned unchanged.", UserWarning, stacklevel=2)
    if chosen is None:
        reasons = "; ".join(f"{r['method']}: {r['status']} ({r['reason']})"
                            for r in report["rows"])
        raise ValueError(f"{owner}: no candidate gave a usable model at {n_vectors} vectors "
                         f"({reasons}).")
    report["rows"][chosen]["status"] = "chosen"
    report["chosen"] = int(chosen)
    best = report["rows"][chosen]
    _warnings(search, best, full_error, tol, selection, X_train is not None)
    messages.append(f"chosen: {best['method']} ({best['variant'] or 'as is'}), "
                    f"{best['n_vectors']} vectors, error {_pct(best['val_error'])}, agreement "
                    f"with the original {_pct(best['agreement'])} on the "
                    + ("validation data" if X_val is not None else "training data"))
    if tol is None:
        _near_ties(report, chosen, n_eval, selection)
    if search.cut:
        msg = (f"compress: the time limit of {time_limit:g} s cut the search ("
               + "; ".join(search.cut) + "): the result depends on the machine's speed and "
               "load")
        messages.append("warning: " + msg[10:])
        warnings.warn(msg, UserWarning, stacklevel=2)
    if timing:
        report["total_seconds"] = float(time.perf_counter() - t_start)
    return _result(search.built[chosen], best, report, exact, psi, n_full, seed)



def _checked_arguments(owner, n_vectors, max_error_increase, method, n_init, max_iter, shared,
                       screen, timing, n_jobs, time_limit, X_val, y_val, X_train, y_train, cv):
    """:func:`compress`'s arguments checked: ``(n_vectors, tol, methods, n_init, max_iter,
    n_jobs, time_limit, X_val, y_val, X_train, y_train)`` (``tol`` None in budget mode)."""
    if n_vectors is not None and max_error_increase is not None:
        raise ValueError(f"{owner}: give a budget (n_vectors) or a tolerance "
                         "(max_error_increase), not both.")
    if n_vectors is not None:
        n_vectors = check_scalar(n_vectors, "n_vectors", owner, kind="int", lower=1)
    tol = None
    if n_vectors is None:
        tol = DEFAULT_MAX_ERROR_INCREASE if max_error_increase is None else \
            check_scalar(max_error_increase, "max_error_increase", owner, lower=0.0)
    methods = _methods(method, owner)
    # the construction's settings, checked here: a bad value must not just fail the
    # reduced-set rows and leave the direct candidates to win in silence
    n_init = check_scalar(n_init, "n_init", owner, kind="int", lower=1)
    max_iter = check_scalar(max_iter, "max_iter", owner, kind="int", lower=1)
    for flag, name in ((shared, "shared"), (screen, "screen"), (timing, "timing")):
        if flag not in (True, False):
            raise ValueError(f"The '{name}' parameter of {owner} must be a bool. "
                             f"Got {flag!r}.")
    if n_jobs is not None:
        n_jobs = check_scalar(n_jobs, "n_jobs", owner, kind="int")
        if n_jobs == 0:
            raise ValueError(f"The 'n_jobs' parameter of {owner} must be a non-zero int "
                             "or None. Got 0.")
    if time_limit is not None:
        time_limit = check_scalar(time_limit, "time_limit", owner, lower=0.0)
    if (X_val is None) != (y_val is None):
        raise ValueError("Pass both X_val and y_val, or neither.")
    if (X_train is None) != (y_train is None):
        raise ValueError("Pass both X_train and y_train, or neither.")
    if X_val is not None:
        X_val, y_val = _check_labels(X_val, y_val, "X_val", "y_val", owner)
        if not (isinstance(cv, int) and cv == DEFAULT_CV):
            raise ValueError(f"{owner}: cv={cv!r} applies without validation data (folds "
                             "inside X_train); with X_val, y_val every choice is made on them.")
    if X_train is not None:
        X_train, y_train = _check_labels(X_train, y_train, "X_train", "y_train", owner)
    if X_val is None and X_train is None:
        raise ValueError(f"{owner} needs validation data (X_val, y_val) or training data "
                         "(X_train, y_train) to choose on; it never chooses blind.")
    return (n_vectors, tol, methods, n_init, max_iter, n_jobs, time_limit, X_val, y_val,
            X_train, y_train)


def _checked_original(model, X_val, y_val, X_train, y_train, owner):
    """The original machine as an exact classifier, checked against the data given."""
    # a bare expansion's classes: those of all the labels given (the validation data may
    # miss a class that the training data has)
    y_hint = np.concatenate([y for y in (y_val, y_train) if y is not None])
    exact = exact_classifier(model, y_hint, owner=owner)
    classes = np.asarray(exact.classes)
    psi = exact.expansion
    for X, name in ((X_val, "X_val"), (X_train, "X_train")):
        if X is not None and X.shape[1] != psi.n_features:
            raise ValueError(f"{name} has {X.shape[1]} features, but the model is expecting "
                             f"{psi.n_features} features as input.")
    for y, name in ((y_val, "y_val"), (y_train, "y_train")):
        if y is not None:
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                raise ValueError(f"{name} holds labels the model does not know: "
                                 f"{unknown[:5].tolist()}.")
    if y_val is not None and np.unique(y_val).size < 2:
        # the error of always predicting that class is 0: no rule can judge a candidate
        raise ValueError(f"{owner}: y_val holds one class only ({np.unique(y_val)[:1].tolist()}"
                         "); validation rows of one class cannot tell a good classifier from "
                         "one that always predicts it. Give rows of at least two classes.")
    return exact


def _splits(model, exact, X_val, y_val, X_train, y_train, cv, seed, owner):
    """What the candidates are built and judged on: ``(splits, final, selection,
    messages)`` -- the validation data (``final`` None), or ``cv`` stratified folds inside
    the training data with the original re-trained on each (``final``: all of it)."""
    messages = []
    # the splits: the validation data, or k folds inside the training data
    if X_val is not None:
        selection = "validation data"
        splits = [Split(X_train, y_train, X_val, y_val, exact)]
        final = None
    else:
        from sklearn.base import clone
        from sklearn.model_selection import StratifiedKFold
        selection = f"{cv}-fold CV inside the training data"
        base = _refittable(model)
        splits = []
        for a, v in StratifiedKFold(cv, shuffle=True, random_state=seed).split(X_train, y_train):
            ex = None
            if base is not None:
                ex = exact_classifier(clone(base).fit(X_train[a], y_train[a]), y_train,
                                      owner=owner)
            splits.append(Split(X_train[a], y_train[a], X_train[v], y_train[v], ex))
        final = Split(X_train, y_train, None, None, exact)
        messages.append(f"no validation data: choices on {selection} (every candidate built "
                        f"{cv} + 1 times" + (", the original re-trained on each fold)"
                                             if base is not None else ")"))
    return splits, final, selection, messages


def _tolerance_walk(search, methods, n_full):
    """Tolerance mode: the budgets 1, 2, 4, ... (at each the candidates in order, in
    full, until one meets the target), then bisection with the winning method; the
    chosen row index, or None."""
    report = search.report
    target = report["target_error"]

    def passing(i):
        return report["rows"][i]["status"] == "ok" and \
            report["rows"][i]["val_error"] <= target + 1e-12

    def one(m, n_vectors):
        why = CANDIDATES[m].refusal(search.problem, n_vectors)
        if why:
            return search.row(m, n_vectors, status="refused", reason=why)
        return search.record(m, n_vectors, search.run([m], n_vectors, {m: FULL})[m])

    chosen, lo, n_vectors = None, 0, 1
    while n_vectors < n_full and chosen is None:
        for m in methods:
            i = one(m, n_vectors)
            if passing(i):
                chosen = i
                break
        if chosen is None:
            lo, n_vectors = n_vectors, min(2 * n_vectors, n_full)
    if chosen is not None:  # bisect with the winning method
        m = report["rows"][chosen]["method"]
        hi = n_vectors
        while hi - lo > 1:
            mid = (lo + hi) // 2
            i = one(m, mid)
            if passing(i):
                chosen, hi = i, mid
            else:
                lo = mid
        report["budget"] = int(report["rows"][chosen]["budget"])
    return chosen


def _warnings(search, best, full_error, tol, selection, has_train):
    """Never useless in silence: against the full machine and the uniform Nystrom SVM."""
    report, messages = search.report, search.report["messages"]
    if best["method"] != "original" and np.isfinite(full_error):
        margin = WARN_MARGIN if tol is None else tol
        if best["val_error"] > full_error + margin + 1e-12:
            msg = (f"compress: the result ({best['method']}, {best['n_vectors']} vectors) has "
                   f"error {_pct(best['val_error'])} on the {selection}, more than "
                   f"{100 * margin:.1f} points above the original's {_pct(full_error)} "
                   f"({report['full_n_vectors']} vectors)")
            messages.append("warning: " + msg[10:])
            warnings.warn(msg, UserWarning, stacklevel=3)
    if best["method"] == "original" or not has_train:
        return
    rows = report["rows"]
    same = [i for i, r in enumerate(rows) if r["method"] == "uniform-svm"
            and r["budget"] == best["budget"]]
    uni = [i for i in same if rows[i]["status"] in ("ok", "chosen", "reference")
           and np.isfinite(rows[i]["val_error"])]
    if not same and not search.problem.expired():
        m = "uniform-svm"
        uni = [search.record(m, best["budget"], search.run([m], best["budget"], {m: FULL})[m],
                             reference=True)]
    if uni and np.isfinite(rows[uni[0]]["val_error"]) and \
            best["val_error"] > rows[uni[0]]["val_error"] + 1e-12:
        u = rows[uni[0]]
        msg = (f"compress: the result ({best['method']}, error {_pct(best['val_error'])}) "
               f"is worse than the uniform-subset Nystrom SVM of the same budget "
               f"({_pct(u['val_error'])}) on the {selection}")
        messages.append("warning: " + msg[10:])
        warnings.warn(msg, UserWarning, stacklevel=3)


def _near_ties(report, chosen, n_eval, selection):
    """A choice the validation data cannot make: other candidates within one binomial
    standard error of the chosen one's error (said, never acted on)."""
    best = report["rows"][chosen]
    p = float(best["val_error"])
    se = _binomial_se(p, n_eval)
    close = [r for i, r in enumerate(report["rows"]) if i != chosen
             and r["status"] == "ok" and r["budget"] == best["budget"]
             and r["val_error"] <= p + se + 1e-12]
    if close:
        report["messages"].append(
            "near tie: " + ", ".join(f"{r['method']} {_pct(r['val_error'])}" for r in close)
            + f" within one standard error ({_pct(se)}, {n_eval} points) of the chosen "
            f"{_pct(p)}; the {selection} cannot tell them apart")


def _result(clf, best, report, exact, psi, n_full, seed):
    """The :class:`CompressedClassifier` around the chosen model."""
    out = CompressedClassifier(estimator=None, n_vectors=int(best["budget"]),
                               method=best["method"] if best["method"] in _RS_METHODS else
                               "construct", shared="auto",
                               refit_intercept="refit" in best["variant"],
                               random_state=seed)
    out.expansion_ = clf.expansion
    out.classes_ = np.asarray(exact.classes)
    out.scheme_ = clf.scheme
    out.decision_function_shape_ = clf.decision_function_shape
    out.break_ties_ = bool(clf.break_ties)
    out.vote_ = clf.vote
    out.n_features_in_ = int(psi.n_features)
    out.n_vectors_ = int(clf.expansion.merge_duplicates().n_terms)
    out.n_support_vectors_ = n_full
    out.objective_ = float("nan")
    out.relative_objective_ = float("nan")
    out.n_iter_ = 1
    out.compress_report_ = report
    return out
