"""Test error against kernel evaluations per prediction: sparsekm against its peers.

For each data set and each budget (kernel evaluations per prediction, all classes
together) every method is fitted on the training data minus a stratified validation
split, its variants (thresholds kept or re-fitted, C of the linear peers) are chosen on
that validation split, and the chosen variant's test error is recorded. The best
sparsekm method and the best peer at each budget are then chosen **on the validation
split** too, and only their test errors are compared (targets of issue 14).

Peers: scikit-learn's ``Nystroem`` (uniform landmarks) + ``LinearSVC``, Nyström with
k-means landmarks + ``LinearSVC``, ``RBFSampler`` (as many random features as the
budget: one feature costs about one kernel evaluation) + ``LinearSVC``, and the full
``SVC`` one-vs-one and one-vs-rest. Fit times are recorded as ratios to the full
one-vs-rest SVC's training time measured in the same run (cells computed in different
runs keep the SVC time of their own run).

Methods live in one table, ``METHODS``: add a row ``name: Method(family, fn, ...)`` to
bench a new method. ``fn(ctx, budgets)`` returns ``{budget: cell}``; methods whose
construction is incremental return every budget from one run.

Resumable: each (data set, method, budget) cell is cached in
``benchmarks/results/pareto_cache/<dataset>.json`` under a key made of the method's
source code, the sparsekm sources, the parameters and the seed; a re-run recomputes
only missing or stale cells. Run long sets in the background:

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_pareto.py --datasets banana,usps
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import machine, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FIGURES = ROOT / "docs" / "figures"
TIERS = (50, 100, 250, 500, 1000)
#: Distinct support vectors of the full USPS one-vs-rest SVC: binary sets get budgets
#: ``tier / USPS_SV * (their own SV count)``.
USPS_SV = 2640
C_GRID = (0.1, 1.0, 10.0, 100.0)
SEED = 0
VAL_FRACTION = 0.15
CV_FOLDS = 5
CV_BELOW = 1000


# -- data ------------------------------------------------------------------------------
def _usps():
    from sparsekm.datasets import load_usps
    return load_usps(), 1 / 128, 10.0


def _usps784():
    from scipy.ndimage import zoom

    from sparsekm.datasets import load_usps
    Xtr, ytr, Xte, yte = load_usps()

    def up(X):  # bilinear 16x16 -> 28x28
        return zoom(X.reshape(-1, 16, 16), (1, 28 / 16, 28 / 16), order=1).reshape(-1, 784)

    # squared distances grow with the number of pixels: same kernel width per pixel
    return (up(Xtr), ytr, up(Xte), yte), 1 / 128 * 256 / 784, 10.0


def _digits():
    from sparsekm.datasets import load_digits_default
    return load_digits_default(), 1 / 32, 10.0


def _ida(name, C, sigma):
    def load():
        from sparsekm.datasets import load_ida
        return load_ida(name, split=1), 1.0 / sigma, C
    return load


DATASETS = {
    "digits": _digits,
    "banana": _ida("banana", 316.2, 1.0),
    "waveform": _ida("waveform", 1.0, 20.0),
    "ringnorm": _ida("ringnorm", 1e9, 10.0),
    "image": _ida("image", 500.0, 30.0),
    "usps": _usps,
    "usps784": _usps784,
}


@dataclass
class Context:
    """One data set, split, with the full SVC trained lazily on the fit part."""

    name: str
    X_fit: np.ndarray
    y_fit: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    gamma: float
    C: float
    quick: bool = False
    #: final (refit) mode: budget -> the variant chosen on validation; ``X_val`` is None
    forced: dict | None = None
    _svc: dict = field(default_factory=dict)

    @property
    def classes(self):
        return np.unique(self.y_fit)

    @property
    def multiclass(self):
        return self.classes.size > 2

    def svc_ovr(self):
        """The full one-vs-rest SVC (binary: the SVC) and its training seconds."""
        if "ovr" not in self._svc:
            from sklearn.multiclass import OneVsRestClassifier
            from sklearn.svm import SVC
            est = SVC(C=self.C, gamma=self.gamma)
            if self.multiclass:
                est = OneVsRestClassifier(est)
            t = time.perf_counter()
            est.fit(self.X_fit, self.y_fit)
            self._svc["ovr"] = (est, time.perf_counter() - t)
        return self._svc["ovr"]

    def psi(self):
        from sparsekm import KernelExpansion
        return KernelExpansion.from_estimator(self.svc_ovr()[0])

    def errors(self, predict):
        """(validation error or None in the final mode, test error)."""
        val = None if self.X_val is None else float(np.mean(predict(self.X_val) != self.y_val))
        return val, float(np.mean(predict(self.X_test) != self.y_test))


def n_folds_for(n_train):
    """Validation protocol by training-set size: ``CV_FOLDS``-fold stratified
    cross-validation inside the training data below ``CV_BELOW`` training points (one
    15 % split of 60 points, as on banana, is too noisy to choose on), else one stratified
    ``VAL_FRACTION`` split (returned as 1)."""
    return CV_FOLDS if n_train < CV_BELOW else 1


def _contexts(name, quick, folds=None):
    """The selection contexts (one per fold, or the single validation split) and the final
    context (all training data, the test set; no validation data)."""
    from sklearn.model_selection import StratifiedKFold, train_test_split
    (Xtr, ytr, Xte, yte), gamma, C = DATASETS[name]()
    if quick:  # a small subset: seconds, for the smoke test
        Xtr, _, ytr, _ = train_test_split(Xtr, ytr, train_size=min(250, len(ytr) - 20),
                                          stratify=ytr, random_state=SEED)
        Xte, yte = Xte[:200], yte[:200]
    folds = folds or n_folds_for(len(ytr))
    if folds == 1:
        idx = np.arange(len(ytr))
        i_fit, i_val = train_test_split(idx, test_size=VAL_FRACTION, stratify=ytr,
                                        random_state=SEED)
        splits = [(i_fit, i_val)]
    else:
        splits = list(StratifiedKFold(folds, shuffle=True, random_state=SEED).split(Xtr, ytr))
    sel = [Context(name, Xtr[a], ytr[a], Xtr[v], ytr[v], Xte, yte, gamma, C, quick)
           for a, v in splits]
    final = Context(name, Xtr, ytr, None, None, Xte, yte, gamma, C, quick, forced={})
    return sel, final


def budgets_for(ctx, n_sv, quick):
    """Budgets (kernel evaluations per prediction) and their USPS-scale tiers."""
    tiers = (50, 100) if quick else TIERS
    if ctx.multiclass:
        return {t: t for t in tiers}
    out = {}
    for t in tiers:
        b = max(2, int(round(t / USPS_SV * n_sv)))
        while b in out.values():
            b += 1
        out[t] = b
    return out


# -- helpers shared by the methods ---------------------------------------------------
def _n_per_class(ctx, budget):
    return max(1, budget // ctx.classes.size) if ctx.multiclass else budget


def _distinct(X):
    return int(np.unique(np.asarray(X), axis=0).shape[0])


def _cell(ctx, val, test, n_evals, seconds, variant, val_by_variant=None, **extra):
    """One (method, budget) result on one context. The time ratio to the full OvR SVC is
    added by :func:`_select_and_refit` (the final fit against the final SVC)."""
    out = {"val_error": val, "test_error": test, "n_evals": int(n_evals),
           "fit_seconds": float(seconds), "variant": variant,
           "val_errors_by_variant": val_by_variant if val_by_variant is not None
           else {variant: val}}
    out.update(extra)
    return out


def _best_variant(ctx, budget, candidates):
    """Among ``(variant, make_predict)`` pairs (``make_predict()`` fits lazily and returns
    a predict function): the one with the lowest validation error, and every variant's
    validation error. In the final mode only the variant chosen on validation
    (``ctx.forced[budget]``) is built and only its test error computed."""
    if ctx.forced is not None:
        want = ctx.forced[budget]
        for variant, make in candidates:
            if variant == want:
                return variant, None, ctx.errors(make())[1], {}
        raise KeyError(f"variant {want!r} not among {[v for v, _ in candidates]}")
    best, by_variant = None, {}
    for variant, make in candidates:
        val, test = ctx.errors(make())
        by_variant[variant] = val
        if best is None or val < best[1]:
            best = (variant, val, test)
    return best + (by_variant,)


def _expansion_predict(expansion, classes):
    def predict(X):
        f = expansion.decision_function(X)
        return classes[(f > 0).astype(int)] if np.ndim(f) == 1 else classes[np.argmax(f, 1)]
    return predict


def _threshold_variants(ctx, expansion):
    """The reduced machine with the SVM's thresholds kept, and re-fitted on the fit part."""
    from sparsekm.reduced_set import refit_intercept
    classes = ctx.classes

    def refit():
        if ctx.multiclass:
            return refit_intercept(expansion, ctx.X_fit, ctx.y_fit, classes=classes)
        return refit_intercept(expansion, ctx.X_fit, ctx.y_fit == classes[1])
    return [("b kept", lambda: _expansion_predict(expansion, classes)),
            ("b refit (train)", lambda: _expansion_predict(refit(), classes))]


# -- sparsekm methods ----------------------------------------------------------------
def m_rs_construct(ctx, budgets, shared=False):
    from sparsekm.compression import construct_prefixes
    psi = ctx.psi()
    sizes = {b: (b if (shared or not ctx.multiclass) else _n_per_class(ctx, b)) for b in budgets}
    t = time.perf_counter()
    prefix = construct_prefixes(psi, max(sizes.values()), shared=shared, random_state=SEED)
    seconds = time.perf_counter() - t
    out = {}
    for b, m in sizes.items():
        t2 = time.perf_counter()
        red = prefix(m)
        variant, val, test, by = _best_variant(ctx, b, _threshold_variants(ctx, red))
        out[b] = _cell(ctx, val, test, red.merge_duplicates().n_terms,
                       seconds + time.perf_counter() - t2, variant, by,
                       note="all budgets from one construction (its time counted in full "
                            "for each budget)")
    return out


def m_rs_construct_shared(ctx, budgets):
    return m_rs_construct(ctx, budgets, shared=True)


def _reduce_each(ctx, budgets, method, shared=False):
    from sparsekm.reduced_set import reduce_expansion
    psi = ctx.psi()
    out = {}
    for b in budgets:
        m = b if (shared or not ctx.multiclass) else _n_per_class(ctx, b)
        t = time.perf_counter()
        red = reduce_expansion(psi, m, method=method, shared=shared, random_state=SEED).expansion
        seconds = time.perf_counter() - t
        variant, val, test, by = _best_variant(ctx, b, _threshold_variants(ctx, red))
        out[b] = _cell(ctx, val, test, red.merge_duplicates().n_terms, seconds, variant, by)
    return out


def m_rs_construct_refine(ctx, budgets):
    return _reduce_each(ctx, budgets, "construct+refine")


#: Phase-2 iteration counts offered to validation (the longer run continues the shorter).
REFINE_ITERS = (300, 1000)


def m_rs_construct_refine_shared(ctx, budgets):
    """Shared reduced set, phase 1 then the joint phase 2 (L-BFGS over the shared Z and
    every class's beta), stopped after 300 or continued to 1000 iterations; the count and
    the thresholds (kept / re-fitted) are chosen on validation. The fit time is that of
    the chosen variant (phase 1 plus the phase-2 iterations it needed)."""
    from sparsekm.reduced_set import construct, refine
    out = {}
    for b in budgets:
        t = time.perf_counter()
        stages = {0: (construct(ctx.psi(), b, shared=True, random_state=SEED).expansion,
                      time.perf_counter() - t, True)}

        def stage(n, stages=stages):
            """The expansion after ``n`` phase-2 iterations, its seconds, and whether
            L-BFGS used all of them (else longer runs equal this one)."""
            if n not in stages:  # always continue the previous count (same chain in all runs)
                prev = max((k for k in REFINE_ITERS if k < n), default=0)
                red, secs, more = stage(prev)
                if prev and not more:
                    stages[n] = stages[prev]
                else:
                    t = time.perf_counter()
                    res = refine(ctx.psi(), red, max_iter=n - prev)
                    stages[n] = (res.expansion, secs + time.perf_counter() - t,
                                 int(res.n_iter) >= n - prev)
            return stages[n]

        cands, timing = [], {}
        for n in REFINE_ITERS:
            for label in ("b kept", "b refit (train)"):  # as in _threshold_variants
                v = f"phase 2 <= {n} it., {label}"

                def build(n=n, label=label, v=v, timing=timing):
                    red, secs, _ = stage(n)
                    timing[v] = secs
                    return dict(_threshold_variants(ctx, red))[label]()
                cands.append((v, build))
        variant, val, test, by = _best_variant(ctx, b, cands)
        red = stage(int(variant.split("<= ")[1].split(" ")[0]))[0]
        out[b] = _cell(ctx, val, test, red.merge_duplicates().n_terms, timing[variant], variant, by)
    return out


def m_rs_select_l1(ctx, budgets):
    return _reduce_each(ctx, budgets, "select-l1")


def _c_variants(ctx, b, make, label):
    """``make(C)`` fits and returns a classifier; C chosen on validation among ``C_GRID``
    exactly as for the peers (in the final mode only the chosen C is fitted). Returns the
    cell with the fit time of the chosen C's model."""
    fitted, seconds = {}, {}

    def build(C):
        t = time.perf_counter()
        clf = make(C)
        seconds[C] = time.perf_counter() - t
        fitted[C] = clf
        return clf.predict

    variant, val, test, by = _best_variant(
        ctx, b, [(f"{label}, C={C:g}", lambda C=C: build(C)) for C in C_GRID])
    C = float(variant.rsplit("C=", 1)[1])
    clf = fitted[C]
    ests = getattr(clf, "estimators_", [clf])
    n = _distinct(np.vstack([np.asarray(e.expansion_.vectors) for e in ests]))
    extra = {}
    if hasattr(clf, "n_iter_") and np.ndim(clf.n_iter_):
        extra["n_iter"] = int(np.ravel(clf.n_iter_)[0])
    return _cell(ctx, val, test, n, seconds[C], variant, by, **extra)


def m_slmc(ctx, budgets):
    """SLMC (per class, k-means init), C chosen on validation among ``C_GRID``."""
    from sparsekm.kernels import RBF
    from sparsekm.models import SLMC
    out = {}
    for b in budgets:
        m = _n_per_class(ctx, b)
        out[b] = _c_variants(ctx, b, lambda C, m=m: SLMC(
            n_vectors=m, C=C, kernel=RBF(ctx.gamma), init="kmeans",
            max_iter=30 if ctx.quick else 100, random_state=SEED).fit(ctx.X_fit, ctx.y_fit),
            "kmeans init")
    return out


def m_slmc_shared(ctx, budgets, init="kmeans"):
    """Multi-class SLMC with one set of ``budget`` XVs shared by all classes (sum of the
    one-vs-rest objectives), initialised from k-means centres or from the shared RS."""
    from sparsekm.kernels import RBF
    from sparsekm.models import SLMC
    from sparsekm.reduced_set import construct
    out = {}
    for b in budgets:
        t = time.perf_counter()
        Z0 = init if init == "kmeans" else construct(ctx.psi(), b, shared=True,
                                                     random_state=SEED).expansion.vectors
        # the shared RS can hold fewer vectors than the budget (no more than the model's
        # distinct SVs): SLMC then starts from (and keeps) that many
        m = b if init == "kmeans" else len(Z0)
        clf = SLMC(n_vectors=m, C=ctx.C, kernel=RBF(ctx.gamma), init=Z0, shared=True,
                   max_iter=30 if ctx.quick else 100, random_state=SEED).fit(ctx.X_fit, ctx.y_fit)
        seconds = time.perf_counter() - t
        variant, val, test, by = _best_variant(ctx, b, [(f"shared, {init} init, C of the SVC",
                                                         lambda clf=clf: clf.predict)])
        out[b] = _cell(ctx, val, test, clf.expansion_.merge_duplicates().n_terms, seconds, variant, by,
                       n_iter=int(clf.n_iter_[0]))
    return out


def m_slmc_shared_rs(ctx, budgets):
    return m_slmc_shared_c(ctx, budgets, init="shared RS")


def m_slmc_shared_c(ctx, budgets, init="kmeans"):
    """As :func:`m_slmc_shared` (kept unchanged: its source is part of every cache key),
    with C chosen on validation among ``C_GRID`` exactly as for the peers (issue 24)."""
    from sparsekm.kernels import RBF
    from sparsekm.models import SLMC
    from sparsekm.reduced_set import construct
    out = {}
    for b in budgets:
        t = time.perf_counter()
        Z0 = init if init == "kmeans" else construct(ctx.psi(), b, shared=True,
                                                     random_state=SEED).expansion.vectors
        t_init = time.perf_counter() - t
        m = b if init == "kmeans" else len(Z0)
        cell = _c_variants(ctx, b, lambda C, m=m, Z0=Z0: SLMC(
            n_vectors=m, C=C, kernel=RBF(ctx.gamma), init=Z0, shared=True,
            max_iter=30 if ctx.quick else 100, random_state=SEED).fit(ctx.X_fit, ctx.y_fit),
            f"shared, {init} init")
        cell["fit_seconds"] += t_init
        out[b] = cell
    return out


def m_slmc_shared_kmeans(ctx, budgets):
    return m_slmc_shared_c(ctx, budgets, init="kmeans")


def _ovr_or_binary(ctx, make):
    from sklearn.multiclass import OneVsRestClassifier
    est = make()
    return OneVsRestClassifier(est) if ctx.multiclass else est


def _n_evals_of(clf):
    ests = getattr(clf, "estimators_", [clf])
    return _distinct(np.vstack([np.asarray(e.expansion_.vectors) for e in ests]))


def m_approx_svc(ctx, budgets):
    """ApproxSVC with the whole budget: its greedy basis ignores the labels, so the
    one-vs-rest machines share one basis of ``budget`` vectors (the real distinct count is
    recorded); C chosen on validation among ``C_GRID`` (issue 24: it used to get
    budget / n_classes vectors per class, a tenth of its budget, and the SVC's C)."""
    from sparsekm.kernels import RBF
    from sparsekm.models import ApproxSVC
    out = {}
    for b in budgets:
        m = min(b, ctx.X_fit.shape[0])
        out[b] = _c_variants(ctx, b, lambda C, m=m: _ovr_or_binary(
            ctx, lambda: ApproxSVC(C=C, n_basis=m, kernel=RBF(ctx.gamma),
                                   random_state=SEED)).fit(ctx.X_fit, ctx.y_fit),
            "greedy basis of the whole budget")
        if out[b]["n_evals"] > b:
            raise AssertionError(f"ApproxSVC used {out[b]['n_evals']} > {b} vectors")
    return out


#: per (data set, budget): the (method, variant) compress chose on each selection context
_COMPRESS_CHOICES = {}
#: per (data set, budget): each selection context's validation error of every method
_COMPRESS_VAL = {}


def m_compress_auto(ctx, budgets):
    """``sparsekm.compress(svc, X_val, y_val, n_vectors=b, X_train, y_train)`` with its
    defaults (method="auto", its own time limit), on the full OvR SVC of the context. Its
    choice (method and that method's C / thresholds) is made on the validation data; on
    several folds the method with the lowest mean validation error is taken (variants =
    methods), with the C / thresholds compress chose for it most often; the final model
    is that (method, variant) rebuilt on all training data.

    The rebuild is checked as ``compress`` checks its own (without validation data): a
    rebuilt model whose error on the training data exceeds the method's mean validation
    error by more than ``sparsekm.compression._rebuild_margin`` is not the model the
    validation chose, and the next method by mean validation error is rebuilt instead
    (``rebuild_refused`` in the cell; ``ctx.forced`` then names the method used, so that
    the cell's ``val_error`` is that method's). Only training data enter the check."""
    from collections import Counter

    from sparsekm.compression import (
        CANDIDATES,
        FULL,
        CandidateFit,
        Problem,
        _rebuild_margin,
        compress,
    )
    from sparsekm.compression._candidates import Split
    from sparsekm.compression._search import _source_C
    from sparsekm.multiclass import ExpansionClassifier
    est = ctx.svc_ovr()[0]
    out = {}
    for b in budgets:
        if ctx.forced is not None:
            folds = _COMPRESS_VAL.get((ctx.name, b), [])
            means = {m: float(np.mean([f[m] for f in folds])) for m in folds[0]
                     if all(m in f for f in folds)} if folds else {}
            first = ctx.forced[b]
            ranked = [first] + sorted((m for m in means if m != first), key=means.get)
            exact = ExpansionClassifier.from_estimator(est)
            refused, tried = [], []  # tried: (name, method built, variant, model)
            t = time.perf_counter()
            for name in ranked:
                method = name
                votes = Counter(v for m, v in _COMPRESS_CHOICES.get((ctx.name, b), [])
                                if m == name)
                variant = votes.most_common(1)[0][0]
                if method == "original" and exact.expansion.merge_duplicates().n_terms > b:
                    # chosen on a fold whose SVC had at most b vectors; the SVC refitted on
                    # all training data has more: its reduced set at the budget stands in
                    method, variant = "construct", "b kept"
                split = Split(ctx.X_fit, ctx.y_fit, None, None, exact)
                # the C values compress tried: those nearest the SVC's C (its report's labels)
                problem = Problem(exact, [split], None, True, 5, 200, SEED,
                                  source_C=_source_C(est))
                if method != "original":
                    cand = CANDIDATES[method]
                    chosen = next(v for v in cand.variants(problem, FULL) if v.label == variant)
                clf = exact if method == "original" else cand.build(
                    problem, split, b, chosen, FULL,
                    CandidateFit(None, None, float("nan"), "full"), all_rows=True)
                tried.append((name, method, variant, clf))
                if name not in means:
                    break
                fit_err = float(np.mean(clf.predict(ctx.X_fit) != ctx.y_fit))
                if fit_err <= means[name] + _rebuild_margin(means[name], ctx.y_fit.size) + 1e-12:
                    break
                refused.append({"method": name, "variant": variant, "fit_error": fit_err,
                                "val_error": means[name]})
            else:  # every rebuild refused: the validation choice, flagged
                tried.append(tried[0])
            used, method, variant, clf = tried[-1]
            ctx.forced[b] = used  # the same dict as _select_and_refit's choice: see above
            secs = time.perf_counter() - t
            test = float(np.mean(clf.predict(ctx.X_test) != ctx.y_test))
            out[b] = _cell(ctx, None, test, clf.expansion.merge_duplicates().n_terms, secs,
                           used, {}, detail=f"{method}, {variant}", rebuild_refused=refused)
            continue
        t = time.perf_counter()
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            small = compress(est, ctx.X_val, ctx.y_val, n_vectors=b, X_train=ctx.X_fit,
                             y_train=ctx.y_fit, random_state=SEED)
        secs = time.perf_counter() - t
        rows = small.compress_report_["rows"]
        by = {r["method"]: r["val_error"] for r in rows if r["status"] in ("ok", "chosen")}
        _COMPRESS_VAL.setdefault((ctx.name, b), []).append(by)
        for r in rows:
            if r["status"] in ("ok", "chosen"):
                _COMPRESS_CHOICES.setdefault((ctx.name, b), []).append((r["method"],
                                                                        r["variant"]))
        ch = rows[small.compress_report_["chosen"]]
        test = float(np.mean(small.predict(ctx.X_test) != ctx.y_test))
        out[b] = _cell(ctx, ch["val_error"], test, small.n_vectors_, secs, ch["method"], by,
                       report=[{k: r[k] for k in ("method", "variant", "n_vectors", "val_error",
                                                 "seconds", "status", "reason")}
                               for r in rows])
    return out


def m_greedy_basis_linear(ctx, budgets):
    """One greedy basis (Franc & Hlavac's training-set approximation, pivoted incomplete
    Cholesky) shared by all classes, a linear SVM on its coordinates; C on validation."""
    from sparsekm.approx import GreedyBasis
    from sparsekm.kernels import RBF
    out = {}
    for b in budgets:
        t = time.perf_counter()
        basis = GreedyBasis(n_basis=min(b, ctx.X_fit.shape[0]), tol=1e-6, kernel=RBF(ctx.gamma),
                            random_state=SEED).fit(ctx.X_fit)
        out[b] = _linear_svc_on(ctx, b, basis.transform, time.perf_counter() - t,
                                basis.n_basis_, "greedy basis shared by the classes")
    return out


def m_approx_kfd(ctx, budgets):
    from sparsekm.kernels import RBF
    from sparsekm.models import ApproxKFD
    out = {}
    for b in budgets:
        m = _n_per_class(ctx, b)
        seconds, fitted = [0.0], {}

        def make(C, m=m, seconds=seconds, fitted=fitted):
            t = time.perf_counter()
            clf = _ovr_or_binary(ctx, lambda: ApproxKFD(n_basis=m, C=C, kernel=RBF(ctx.gamma),
                                                        random_state=SEED))
            clf.fit(ctx.X_fit, ctx.y_fit)
            seconds[0] += time.perf_counter() - t
            fitted[f"C={C}"] = clf
            return clf.predict

        variant, val, test, by = _best_variant(
            ctx, b, [(f"C={C}", lambda C=C: make(C)) for C in (1e-3, 1e-1)])
        out[b] = _cell(ctx, val, test, _n_evals_of(fitted[variant]), seconds[0], variant, by)
    return out


# -- peers ---------------------------------------------------------------------------
def _linear_svc_on(ctx, b, transform, fit_seconds, n_evals, label):
    """LinearSVC on the features, C chosen on validation (in the final mode only the
    chosen C is fitted)."""
    from sklearn.svm import LinearSVC
    t = time.perf_counter()
    F_fit = transform(ctx.X_fit)
    seconds = [fit_seconds + time.perf_counter() - t]

    def make(C):
        t = time.perf_counter()
        clf = LinearSVC(C=C, max_iter=5000, random_state=SEED).fit(F_fit, ctx.y_fit)
        seconds[0] += time.perf_counter() - t
        return lambda X: clf.predict(transform(X))

    variant, val, test, by = _best_variant(
        ctx, b, [(f"{label}, C={C:g}", lambda C=C: make(C)) for C in C_GRID])
    return _cell(ctx, val, test, n_evals, seconds[0], variant, by)


def m_nystroem_uniform(ctx, budgets):
    from sklearn.kernel_approximation import Nystroem
    out = {}
    for b in budgets:
        t = time.perf_counter()
        ny = Nystroem(gamma=ctx.gamma, n_components=min(b, ctx.X_fit.shape[0]),
                      random_state=SEED).fit(ctx.X_fit)
        out[b] = _linear_svc_on(ctx, b, ny.transform, time.perf_counter() - t, ny.n_components,
                                "uniform landmarks")
    return out


def m_nystroem_kmeans(ctx, budgets):
    from scipy import linalg
    from sklearn.cluster import KMeans
    from sklearn.metrics.pairwise import rbf_kernel
    out = {}
    for b in budgets:
        t = time.perf_counter()
        k = min(b, ctx.X_fit.shape[0])
        centres = KMeans(n_clusters=k, n_init=1, random_state=SEED).fit(ctx.X_fit).cluster_centers_
        w, V = linalg.eigh(rbf_kernel(centres, gamma=ctx.gamma))
        keep = w > 1e-12 * w.max()
        M = V[:, keep] / np.sqrt(w[keep])  # K_cc^{-1/2} on its range (as sklearn's Nystroem)

        def transform(X, centres=centres, M=M):
            return rbf_kernel(X, centres, gamma=ctx.gamma) @ M

        out[b] = _linear_svc_on(ctx, b, transform, time.perf_counter() - t, k,
                                "k-means landmarks")
    return out


def m_rbf_sampler(ctx, budgets):
    from sklearn.kernel_approximation import RBFSampler
    out = {}
    for b in budgets:
        t = time.perf_counter()
        rs = RBFSampler(gamma=ctx.gamma, n_components=b, random_state=SEED).fit(ctx.X_fit)
        out[b] = _linear_svc_on(ctx, b, rs.transform, time.perf_counter() - t, b,
                                "random Fourier features (one per budget unit)")
    return out


@dataclass
class Method:
    family: str  # "sparsekm" or "peer"
    fn: object
    label: str
    multiclass: bool = True
    binary: bool = True
    #: data set -> largest budget run (time caps on the shared 2-core machine)
    max_budget: dict = field(default_factory=dict)


METHODS = {
    "rs_construct": Method("sparsekm", m_rs_construct, "RS construct (per class)"),
    "rs_construct_shared": Method("sparsekm", m_rs_construct_shared, "RS construct, shared",
                                  binary=False,
                                  max_budget={"digits": 250, "usps": 250, "usps784": 100}),
    "rs_construct_refine": Method("sparsekm", m_rs_construct_refine, "RS construct + refine",
                                  max_budget={"usps": 250, "usps784": 100}),
    "rs_construct_refine_shared": Method("sparsekm", m_rs_construct_refine_shared,
                                         "RS construct + joint refine, shared", binary=False,
                                         max_budget={"digits": 500, "usps": 250,
                                                     "usps784": 100}),
    "rs_select_l1": Method("sparsekm", m_rs_select_l1, "RS selection (L1)",
                           max_budget={"usps": 250, "usps784": 100}),
    "slmc": Method("sparsekm", m_slmc, "SLMC (k-means init, C tuned)",
                   max_budget={"digits": 500, "usps": 250, "usps784": 100, "ringnorm": 250}),
    "slmc_shared": Method("sparsekm", m_slmc_shared_kmeans, "SLMC shared (k-means init, C tuned)",
                          binary=False,
                          max_budget={"digits": 500, "usps": 250, "usps784": 100}),
    "slmc_shared_rs": Method("sparsekm", m_slmc_shared_rs,
                             "SLMC shared (shared-RS init, C tuned)",
                             binary=False,
                             max_budget={"digits": 500, "usps": 250, "usps784": 100}),
    "approx_svc": Method("sparsekm", m_approx_svc, "ApproxSVC (one greedy basis, C tuned)",
                         max_budget={"usps": 500, "usps784": 250}),
    "compress_auto": Method("sparsekm", m_compress_auto, "sparsekm.compress (auto)",
                            max_budget={"usps784": 250}),
    "greedy_basis_linear": Method("sparsekm", m_greedy_basis_linear,
                                  "greedy basis (shared) + LinearSVC"),
    "approx_kfd": Method("sparsekm", m_approx_kfd, "ApproxKFD (greedy basis)", multiclass=False),
    "nystroem_uniform": Method("peer", m_nystroem_uniform, "Nyström uniform + LinearSVC"),
    "nystroem_kmeans": Method("peer", m_nystroem_kmeans, "Nyström k-means + LinearSVC"),
    "rbf_sampler": Method("peer", m_rbf_sampler, "RBFSampler + LinearSVC"),
}


# -- cache ---------------------------------------------------------------------------
#: The numerical code the cells depend on (the CLI, plotting, persistence, reproductions
#: and docs tooling are left out, so that editing them keeps the cache).
_CORE = ("backend.py", "kernels", "expansion.py", "preimage.py", "sparse_learning",
         "datasets.py",
         "reduced_set", "approx", "models", "utils/validation.py")


def _src_hash():
    from sparsekm.compression import construct_prefixes
    h = hashlib.sha256()
    src = ROOT / "src" / "sparsekm"
    for name in _CORE:
        paths = sorted((src / name).rglob("*.py")) if (src / name).is_dir() else [src / name]
        for p in paths:
            h.update(p.read_bytes())
    h.update(inspect.getsource(construct_prefixes).encode())
    return h.hexdigest()[:16]


def _method_deps():
    """Code a method's cells depend on beyond its function and the common helpers."""
    import importlib
    cm = importlib.import_module("sparsekm.compression")  # the module, not the function
    tuned = (_c_variants,)
    return {"slmc": tuned, "approx_svc": tuned, "slmc_shared": tuned + (m_slmc_shared_c,),
            "slmc_shared_rs": tuned + (m_slmc_shared_c,),
            # the whole module: its constants (time limit, C grid, C_SEARCH_ROWS) too
            "compress_auto": (cm,)}


def _cell_key(name, method, budget, ctx, src, n_folds):
    fn = METHODS[method].fn
    code = inspect.getsource(fn) + inspect.getsource(_cell) + inspect.getsource(_contexts)
    for helper in (_threshold_variants, _linear_svc_on, _reduce_each, m_rs_construct,
                   m_rs_construct_refine_shared,
                   m_slmc_shared, _best_variant, _select_and_refit, Context):
        code += inspect.getsource(helper)
    for dep in _method_deps().get(method, ()):  # only these methods' keys (issue 24)
        code += inspect.getsource(dep)
    blob = json.dumps([name, method, int(budget), ctx.gamma, ctx.C, ctx.quick, SEED,
                       VAL_FRACTION, n_folds, list(C_GRID), list(REFINE_ITERS), src,
                       hashlib.sha256(code.encode()).hexdigest()])
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _load_cache(path):
    return json.loads(path.read_text()) if path.exists() else {}


def _save_json(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    tmp.replace(path)


# -- one data set --------------------------------------------------------------------
def _full_svcs(ctx):
    """The full SVCs (one-vs-rest, and one-vs-one on multi-class sets) on ``ctx``'s
    fitting data (the final context: all training data)."""
    from sklearn.svm import SVC
    est, seconds = ctx.svc_ovr()
    n_ovr = ctx.psi().merge_duplicates().n_terms
    rows = {"svc_ovr": {"test_error": ctx.errors(est.predict)[1], "n_evals": int(n_ovr),
                        "fit_seconds": seconds, "time_ratio_to_svc_ovr": 1.0}}
    if ctx.multiclass:
        t = time.perf_counter()
        ovo = SVC(C=ctx.C, gamma=ctx.gamma).fit(ctx.X_fit, ctx.y_fit)
        s = time.perf_counter() - t
        rows["svc_ovo"] = {"test_error": ctx.errors(ovo.predict)[1],
                           "n_evals": int(ovo.support_.size), "fit_seconds": s,
                           "time_ratio_to_svc_ovr": s / max(seconds, 1e-9)}
    return rows


def _select_and_refit(fn, sel, final, budgets):
    """Choose each budget's variant on validation, then refit it on all training data.

    ``fn`` runs on every selection context (the folds, or the one validation split); at
    each budget the variant with the lowest mean validation error is chosen (ties: the
    first listed). ``fn`` then runs once more on the final context (all training data)
    with those variants forced, and only that run touches the test set. The cell's
    ``val_error`` is the chosen variant's mean validation error (what the best method is
    chosen on); its fit time is the final fit's, as a ratio to the full OvR SVC trained
    on the same (all) training data in the same run.
    """
    runs = []
    for ctx in sel:
        t = time.perf_counter()
        runs.append(fn(ctx, budgets))
        runs[-1]["_seconds"] = time.perf_counter() - t
    chosen, mean_val = {}, {}
    for b in budgets:
        variants = [v for v in runs[0][b]["val_errors_by_variant"]
                    if all(v in r[b]["val_errors_by_variant"] for r in runs)]
        means = {v: float(np.mean([r[b]["val_errors_by_variant"][v] for r in runs]))
                 for v in variants}
        chosen[b] = min(variants, key=lambda v: means[v])  # min keeps the first on ties
        mean_val[b] = means
    final.forced = chosen
    res = fn(final, budgets)
    svc_s = final.svc_ovr()[1]
    out = {}
    for b in budgets:
        cell = dict(res[b])
        cell.update(
            val_error=mean_val[b][chosen[b]], val_errors_by_variant=mean_val[b],
            val_error_per_fold=[r[b]["val_errors_by_variant"][chosen[b]] for r in runs],
            selection_test_error_not_used=[r[b]["test_error"] for r in runs],
            selection_seconds=float(sum(r["_seconds"] for r in runs)),
            svc_ovr_seconds_same_run=float(svc_s),
            time_ratio_to_svc_ovr=float(cell["fit_seconds"] / max(svc_s, 1e-9)),
            n_fit_final=int(final.X_fit.shape[0]))
        out[b] = cell
    return out


def run_dataset(name, *, quick=False, methods=None, cache_dir=None, log=print, only_tiers=None,
                folds=None):
    sel, final = _contexts(name, quick, folds)
    ctx = final
    cache_path = (cache_dir or RESULTS / "pareto_cache") / f"{name}{'_quick' if quick else ''}.json"
    cache = _load_cache(cache_path)
    src = _src_hash()
    full = _full_svcs(final)
    n_sv = full["svc_ovr"]["n_evals"]
    tiers = budgets_for(final, n_sv, quick)
    if only_tiers:
        tiers = {t: b for t, b in tiers.items() if t in only_tiers}
    log(f"[{name}] train {final.X_fit.shape}, test {final.X_test.shape[0]}; choices on "
        + (f"{len(sel)}-fold CV" if len(sel) > 1 else f"one split of {sel[0].X_val.shape[0]}")
        + f"; full SVC OvR {100 * full['svc_ovr']['test_error']:.2f} % with {n_sv} vectors "
        f"({full['svc_ovr']['fit_seconds']:.1f} s); budgets {tiers}")
    cells = {}
    for mname, meth in METHODS.items():
        if (ctx.multiclass and not meth.multiclass) or (not ctx.multiclass and not meth.binary):
            continue
        cap = meth.max_budget.get(name, np.inf)
        wanted = [b for t, b in tiers.items() if t <= cap]
        keys = {b: _cell_key(name, mname, b, ctx, src, len(sel)) for b in wanted}
        todo = [b for b in wanted if keys[b] not in cache]
        if methods and mname not in methods:  # not selected: report cached cells only
            if any(keys[b] in cache for b in wanted):
                cells[mname] = {str(b): cache[keys[b]] for b in wanted if keys[b] in cache}
                missing = [b for b in wanted if keys[b] not in cache]
                if missing:
                    cells[mname]["not_run"] = {"budgets": missing, "reason": "not run yet"}
            continue
        if todo:
            t = time.perf_counter()
            res = _select_and_refit(meth.fn, sel, final, todo)
            for b, cell in res.items():
                cache[keys[b]] = {"dataset": name, "method": mname, "budget": int(b), **cell}
            _save_json(cache_path, cache)
            log(f"[{name}] {mname}: budgets {todo} in {time.perf_counter() - t:.1f} s")
        cells[mname] = {str(b): cache[keys[b]] for b in wanted}
        skipped = [b for t, b in tiers.items() if t > cap]
        if skipped:
            cells[mname]["not_run"] = {"budgets": skipped,
                                       "reason": "time cap on the shared 2-core machine"}
    return sel, final, full, tiers, cells


def summarize(name, ctx, full, tiers, cells):
    """Best sparsekm method and best peer per budget, both chosen on validation."""
    rows = []
    for tier, b in tiers.items():
        best = {}
        for family in ("sparsekm", "peer"):
            cands = [(c["val_error"], c["n_evals"], m, c) for m, cs in cells.items()
                     if METHODS[m].family == family for k, c in cs.items() if k == str(b)]
            if cands:
                v, _, m, c = min(cands, key=lambda r: (r[0], r[1]))
                best[family] = {"method": m, "val_error": v, "test_error": c["test_error"],
                                "n_evals": c["n_evals"], "variant": c["variant"]}
        row = {"tier": tier, "budget": b, **best}
        # information only, never used to choose: the lowest test error in each family
        row["diagnostic_lowest_test_error_not_used"] = {
            fam: min((c["test_error"] for m, cs in cells.items() if METHODS[m].family == fam
                      for k, c in cs.items() if k == str(b)), default=None)
            for fam in ("sparsekm", "peer")}
        if "sparsekm" in best and "peer" in best:
            row["target_a_applies"] = tier >= 100
            row["sparsekm_test_le_peer"] = best["sparsekm"]["test_error"] <= \
                best["peer"]["test_error"]
        rows.append(row)
    # issue 24: compress(auto) against the best peer (chosen on validation) + one
    # binomial standard error of the test set
    n_test = int(ctx.X_test.shape[0])
    for row in rows:
        c = cells.get("compress_auto", {}).get(str(row["budget"]))
        if c is None or "peer" not in row:
            continue
        p = row["peer"]["test_error"]
        se = float(np.sqrt(p * (1 - p) / n_test))
        row["compress_auto"] = {"test_error": c["test_error"],
                                "method": c.get("detail") or c["variant"],
                                "n_evals": c["n_evals"], "peer_plus_se": p + se,
                                "le_peer_plus_se": bool(c["test_error"] <= p + se + 1e-12)}
    out = {"per_budget": rows}
    ca = [r for r in rows if "compress_auto" in r and r["tier"] >= 100]
    if ca:
        out["target_compress"] = {
            "statement": "at every budget >= 100 (tier) compress(auto)'s test error <= the "
                         "best peer's (chosen on validation) + one binomial SE of the test "
                         "set, and <= the best peer's on average over those tiers",
            "met_every_tier": all(r["compress_auto"]["le_peer_plus_se"] for r in ca),
            "failed_tiers": [r["tier"] for r in ca if not r["compress_auto"]["le_peer_plus_se"]],
            "mean_compress": float(np.mean([r["compress_auto"]["test_error"] for r in ca])),
            "mean_best_peer": float(np.mean([r["peer"]["test_error"] for r in ca])),
            "tiers": [r["tier"] for r in ca]}
        t = out["target_compress"]
        t["met_on_average"] = bool(t["mean_compress"] <= t["mean_best_peer"] + 1e-12)
    applies = [r for r in rows if r.get("target_a_applies")]
    out["target_a"] = {
        "statement": "at every budget >= 100 (tier) the best sparsekm method chosen on "
                     "validation has test error <= the best peer chosen on validation",
        "met": bool(applies) and all(r["sparsekm_test_le_peer"] for r in applies),
        "failed_tiers": [r["tier"] for r in applies if not r["sparsekm_test_le_peer"]]}
    if name == "usps":
        r250 = next((r for r in rows if r["tier"] == 250 and "sparsekm" in r), None)
        if r250:
            e = r250["sparsekm"]["test_error"]
            out["target_b"] = {
                "statement": "USPS at 250 evaluations: <= 4.6 % and within 0.3 points of "
                             "4.33 % (full OvR SVC on all 7291 training images)",
                "test_error_percent": 100 * e, "method": r250["sparsekm"]["method"],
                "met": bool(100 * e <= 4.6 and 100 * e - 4.33 <= 0.3),
                "full_svc_ovr_this_run_percent": 100 * full["svc_ovr"]["test_error"],
                "note": "choices on a validation split of the training set; the chosen "
                        "models (and the full SVC) then refitted on all 7291 training images"}
        c250 = cells.get("compress_auto", {}).get("250")
        if c250:  # issue 24's own target, for the one-call compress
            e = c250["test_error"]
            out["target_compress_usps"] = {
                "statement": "compress(auto) on USPS at 250 evaluations: <= 4.5 % (issue 24)",
                "test_error_percent": 100 * e, "method": c250["variant"],
                "met": bool(100 * e <= 4.5)}
    return out


def figure(name, full, tiers, cells, path):
    from sparsekm.plotting import _plt, savefig
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (m, cs) in enumerate(cells.items()):
        pts = sorted((c["n_evals"], 100 * c["test_error"]) for k, c in cs.items()
                     if k != "not_run")
        if not pts:
            continue
        x, y = zip(*pts, strict=True)
        peer = METHODS[m].family == "peer"
        ax.plot(x, y, "s--" if peer else "o-", color=f"C{i % 10}", markersize=4,
                label=METHODS[m].label + (" [peer]" if peer else ""))
    for key, mk in (("svc_ovr", "*"), ("svc_ovo", "P")):
        if key in full:
            ax.plot(full[key]["n_evals"], 100 * full[key]["test_error"], mk, color="k",
                    markersize=10, label=f"full SVC {key[4:].upper()}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("kernel evaluations per prediction (all classes)")
    ax.set_ylabel("test error (%)")
    ax.set_title(f"{name}: test error vs prediction cost", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=6, loc="upper right")
    from _benchutil import plain_log_ticks
    plain_log_ticks(ax)
    return savefig(fig, path)


def markdown_report(names, out_dir=RESULTS):
    """Markdown tables of the written JSON files (for docs/performance.md)."""
    lines = []
    for name in names:
        path = Path(out_dir) / f"pareto_{name}.json"
        if not path.exists():
            lines += [f"#### {name}", "", "(not run)", ""]
            continue
        res = json.loads(path.read_text())
        if "n_train" not in res["protocol"]:  # written before the CV + refit protocol
            lines += [f"#### {name}", "", "(only a result of the previous protocol: re-run)", ""]
            continue
        tiers = res["protocol"]["budget_tiers"]
        budgets = list(tiers.values())
        full = res["full"]
        m = res["machine"]
        lines += [f"#### {name}", "",
                  f"{res['protocol']['n_train']} training / {res['protocol']['n_test']} test "
                  f"points; every choice on {res['protocol']['choices_on']} "
                  f"({'/'.join(map(str, res['protocol']['n_val']))} validation points), then "
                  "the chosen model refitted on all training data; "
                  f"gamma = {res['protocol']['gamma']:.4g}, "
                  f"C = {res['protocol']['C']:g}; run {m['date']} at load "
                  f"{m['load_average_1_5_15_min'][0]}. Full SVC: "
                  + ", ".join(f"{k[4:].upper()} {100 * v['test_error']:.2f} % with "
                              f"{v['n_evals']} evaluations ({v['fit_seconds']:.2f} s)"
                              for k, v in full.items()) + ".", "",
                  "Test error (%) of each method at each budget (variant chosen on validation); "
                  "in brackets the fit time / full OvR SVC training time:", "",
                  "| method | " + " | ".join(f"{b}" + (f" (tier {t})" if str(t) != str(b) else "")
                                            for t, b in tiers.items()) + " |",
                  "|---|" + "---|" * len(budgets)]
        for meth, cells in res["cells"].items():
            row = []
            for b in budgets:
                c = cells.get(str(b))
                row.append("–" if c is None else
                           f"{100 * c['test_error']:.2f} ({c['time_ratio_to_svc_ovr']:.3g}×)")
            fam = " [peer]" if res["methods"][meth]["family"] == "peer" else ""
            lines.append(f"| {res['methods'][meth]['label']}{fam} | " + " | ".join(row) + " |")
        lines += ["", "Chosen on validation (test error %): best sparsekm vs best peer; the "
                  "last column (lowest test error of any sparsekm method / any peer) is for "
                  "information only and chose nothing:", "",
                  "| budget | sparsekm (method) | peer (method) | sparsekm ≤ peer | lowest on test "
                  "(info) |", "|---|---|---|---|---|"]
        for r in res["summary"]["per_budget"]:
            if "sparsekm" not in r or "peer" not in r:
                continue
            sk, pe = r["sparsekm"], r["peer"]
            ok = "yes" if r["sparsekm_test_le_peer"] else "**no**"
            diag = r.get("diagnostic_lowest_test_error_not_used", {})
            info = " / ".join("–" if diag.get(f) is None else f"{100 * diag[f]:.2f}"
                              for f in ("sparsekm", "peer"))
            lines.append(f"| {r['budget']} | {100 * sk['test_error']:.2f} ({sk['method']}) | "
                         f"{100 * pe['test_error']:.2f} ({pe['method']}) | {ok} | {info} |")
        wins = [r for r in res["summary"]["per_budget"]
                if "sparsekm" in r and "peer" in r and not r["sparsekm_test_le_peer"]]
        if wins:
            lines += ["", "Where a peer still wins (validation-chosen): " + "; ".join(
                f"budget {r['budget']}: {res['methods'][r['peer']['method']]['label']} "
                f"{100 * r['peer']['test_error']:.2f} % against "
                f"{res['methods'][r['sparsekm']['method']]['label']} "
                f"{100 * r['sparsekm']['test_error']:.2f} %" for r in wins) + "."]
        comp = [r for r in res["summary"]["per_budget"] if "compress_auto" in r]
        if comp:
            lines += ["", "`sparsekm.compress` (auto, default time limit) against the best peer "
                      "(both chosen on validation); SE = binomial standard error of the best "
                      "peer's test error on this test set:", "",
                      "| budget | compress(auto): test % (method chosen, evaluations) | best "
                      "peer % | peer + 1 SE % | compress ≤ peer + SE |", "|---|---|---|---|---|"]
            for r in comp:
                c = r["compress_auto"]
                lines.append(f"| {r['budget']} | {100 * c['test_error']:.2f} ({c['method']}, "
                             f"{c['n_evals']}) | {100 * r['peer']['test_error']:.2f} | "
                             f"{100 * c['peer_plus_se']:.2f} | "
                             f"{'yes' if c['le_peer_plus_se'] else '**no**'} |")
            tc = res["summary"].get("target_compress")
            if tc:
                lines += ["", f"compress target (tiers ≥ 100: {tc['tiers']}): every tier "
                          f"**{'yes' if tc['met_every_tier'] else 'no'}**"
                          + (f" (fails at {tc['failed_tiers']})" if tc["failed_tiers"] else "")
                          + f"; on average {100 * tc['mean_compress']:.2f} % vs best peer "
                          f"{100 * tc['mean_best_peer']:.2f} %: "
                          f"**{'yes' if tc['met_on_average'] else 'no'}**."]
        ta = res["summary"]["target_a"]
        run = sorted(int(t) for t in res["protocol"]["budget_tiers"])
        partial = [t for t in TIERS if t not in run]
        lines += ["", f"Target (a) met: **{'yes' if ta['met'] else 'no'}**"
                  + (f" (fails at tiers {ta['failed_tiers']})" if ta["failed_tiers"] else "")
                  + (f" at the tiers run, {run}; tiers {partial} not run" if partial else "")
                  + "."]
        if "target_b" in res["summary"]:
            tb = res["summary"]["target_b"]
            lines.append(f"Target (b): {tb['test_error_percent']:.2f} % ({tb['method']}) — met: "
                         f"**{'yes' if tb['met'] else 'no'}**.")
        if "target_compress_usps" in res["summary"]:
            tc = res["summary"]["target_compress_usps"]
            lines.append(f"{tc['statement']}: {tc['test_error_percent']:.2f} % "
                         f"({tc['method']}) — met at this seed: "
                         f"**{'yes' if tc['met'] else 'no'}**.")
        lines += ["", f"![{name}](figures/pareto_{name}.png)", ""]
    return "\n".join(lines)


def update_docs(text, path=ROOT / "docs" / "performance.md"):
    """Replace what lies between ``<!-- pareto:begin -->`` and ``<!-- pareto:end -->``."""
    doc = Path(path).read_text()
    begin, end = "<!-- pareto:begin -->", "<!-- pareto:end -->"
    if doc.count(begin) != 1 or doc.count(end) != 1:
        raise ValueError(f"{path} must hold exactly one {begin} and one {end} marker")
    head, rest = doc.split(begin)
    Path(path).write_text(head + begin + "\n" + text.strip() + "\n" + end + rest.split(end)[1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default="digits,banana,waveform,ringnorm,image,usps,usps784")
    p.add_argument("--methods", default=None, help="comma-separated subset of METHODS")
    p.add_argument("--tiers", default=None,
                   help="comma-separated subset of the budget tiers (exploration only)")
    p.add_argument("--cv-folds", type=int, default=None,
                   help=f"choose on k-fold CV (1: one {VAL_FRACTION:g} split); default "
                        f"{CV_FOLDS} below {CV_BELOW} training points, else 1")
    p.add_argument("--quick", action="store_true", help="small subsets, two budgets (smoke test)")
    p.add_argument("--out-dir", default=str(RESULTS))
    p.add_argument("--fig-dir", default=str(FIGURES))
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--report", action="store_true",
                   help="print markdown tables of the JSON files already written and exit")
    p.add_argument("--update-docs", action="store_true",
                   help="with --report: also write them between the pareto:begin/end markers "
                        "of docs/performance.md")
    args = p.parse_args(argv)
    if args.report:
        text = markdown_report(args.datasets.split(","), args.out_dir)
        print(text)
        if args.update_docs:
            update_docs(text)
        return []
    methods = args.methods.split(",") if args.methods else None
    for m in methods or ():
        if m not in METHODS:
            p.error(f"unknown method {m!r}; choose from {sorted(METHODS)}")
    only_tiers = [int(t) for t in args.tiers.split(",")] if args.tiers else None
    names = args.datasets.split(",")
    for n in names:
        if n not in DATASETS:
            p.error(f"unknown data set {n!r}; choose from {sorted(DATASETS)}")
    out_dir, fig_dir = Path(args.out_dir), Path(args.fig_dir)
    cache_dir = Path(args.cache_dir) if args.cache_dir else out_dir / "pareto_cache"
    written = []
    for name in names:
        try:
            sel, ctx, full, tiers, cells = run_dataset(name, quick=args.quick, methods=methods,
                                                       cache_dir=cache_dir,
                                                       only_tiers=only_tiers,
                                                       folds=args.cv_folds)
        except FileNotFoundError as exc:
            print(f"[{name}] skipped: {exc}")
            continue
        summary = summarize(name, ctx, full, tiers, cells)
        suffix = "_quick" if args.quick else ""
        res = {"machine": machine(), "dataset": name,
               "protocol": {"choices_on": (f"{len(sel)}-fold stratified CV inside the training "
                                           "data" if len(sel) > 1 else
                                           f"one stratified {VAL_FRACTION:g} validation split "
                                           "of the training data"),
                            "final_models": "refitted on all training data with the variant "
                                            "chosen on validation; test set used once, by them",
                            "n_folds": len(sel), "seed": SEED,
                            "gamma": ctx.gamma, "C": ctx.C, "n_train": int(ctx.X_fit.shape[0]),
                            "n_val": [int(c.X_val.shape[0]) for c in sel],
                            "n_test": int(ctx.X_test.shape[0]),
                            "budget_tiers": {str(t): b for t, b in tiers.items()},
                            "peer_C_grid": list(C_GRID),
                            "split": "IDA split 1" if name in ("banana", "waveform", "ringnorm",
                                                               "image") else "standard"},
               "methods": {m: {"family": METHODS[m].family, "label": METHODS[m].label}
                           for m in cells},
               "full": full, "cells": cells, "summary": summary}
        out = out_dir / f"pareto_{name}{suffix}.json"
        write_results(out, res)
        fig = figure(name, full, tiers, cells, fig_dir / f"pareto_{name}{suffix}.png")
        written += [str(out), fig]
        print(f"[{name}] target (a) met: {summary['target_a']['met']} "
              f"(failed tiers {summary['target_a']['failed_tiers']})"
              + (f"; target (b): {summary['target_b']}" if "target_b" in summary else "")
              + (f"; issue 24: {summary['target_compress_usps']}"
                 if "target_compress_usps" in summary else ""))
    return written


if __name__ == "__main__":
    main()
