"""The best small classifier in one call: :func:`compress`.

:func:`compress` makes a fitted kernel classifier cheap to apply. Given a *budget*
(``n_vectors``: distinct kernel evaluations per prediction, all classes together) it
tries several ways to build a classifier within it -- reduced sets of the machine itself
(construction, eq. 74-77; plus phase 2) and machines trained directly with few vectors
(shared SLMC from the reduced set; linear SVMs on the features ``K(x, Z) K_zz^{-1/2}`` of
a uniform subset, the k-means centres or a greedy basis, i.e. the Nystrom + LinearSVC
peers written as kernel expansions) -- and returns the one with the lowest validation
error, with a report of every candidate. Given a *tolerance* (``max_error_increase``)
it returns the smallest budget whose validation error stays within it.

:func:`construct_prefixes` (one construction whose prefixes give every smaller reduced
set: the first ``m`` vectors of an ``N``-vector run with the Proposition-8 coefficients
``beta = (K^z)^-1 K^zx alpha`` re-computed) serves the budget walk and the benchmarks.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
from sklearn.svm import SVC
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import persistence
from .expansion import KernelExpansion
from .models.reduced_set import ReducedSetClassifier
from .reduced_set import construct, optimal_coefficients
from .utils.validation import check_array, check_scalar

__all__ = ["compress", "CompressReport", "CompressedClassifier", "CompressCurve",
           "construct_prefixes", "nystroem_features", "nystroem_normalization",
           "AUTO_METHODS"]


@dataclass
class CompressCurve:
    """The error-budget curve of models saved by earlier versions of :func:`compress`.

    Those models hold it as ``compress_curve_`` (a dictionary;
    :func:`sparsekm.plotting.compress_curve` plots it). :func:`compress` now returns a
    :class:`CompressedClassifier` whose ``compress_report_`` (:class:`CompressReport`)
    replaces it; this class is kept so that such files still load and plot.

    Attributes
    ----------
    n_vectors : list of int
        The ``n_vectors`` parameter of every size walked (per class unless shared), in
        the order walked.
    budget : list of int
        Kernel evaluations per prediction (distinct vectors) of each size.
    error : list of float
        Validation error (fraction) of each size.
    full_error : float
        Validation error of the machine that was compressed.
    full_budget : int
        Its kernel evaluations per prediction.
    target_error : float
        ``full_error + max_error_increase``.
    chosen : int
        Index (into the lists) of the returned model.
    met : bool
        Whether the returned model meets the tolerance (False only when no size
        walked did: then the full-size exact copy is returned).
    search : str
        ``"prefix"`` (one construction, prefixes evaluated) or ``"refit"``.
    """

    n_vectors: list = field(default_factory=list)
    budget: list = field(default_factory=list)
    error: list = field(default_factory=list)
    full_error: float = float("nan")
    full_budget: int = 0
    target_error: float = float("nan")
    chosen: int = -1
    met: bool = False
    search: str = "prefix"

    def sorted(self):
        """``(budget, error)`` arrays sorted by budget (the curve to plot)."""
        order = np.argsort(self.budget, kind="stable")
        return np.asarray(self.budget)[order], np.asarray(self.error)[order]

    def as_dict(self):
        """Plain-Python dictionary (JSON-serialisable)."""
        return {"n_vectors": [int(v) for v in self.n_vectors],
                "budget": [int(v) for v in self.budget],
                "error": [float(v) for v in self.error],
                "full_error": float(self.full_error), "full_budget": int(self.full_budget),
                "target_error": float(self.target_error), "chosen": int(self.chosen),
                "met": bool(self.met), "search": self.search}


# -- prefixes of one construction ----------------------------------------------------
def _output_parts(psi, shared):
    """Expansions reduced independently: one per output, or ``psi`` itself (shared/binary)."""
    if psi.is_multioutput and psi.n_outputs > 1 and not shared:
        return [psi.output(k).compress() for k in range(psi.n_outputs)]
    return [psi]


def construct_prefixes(psi, n_max, *, shared=False, n_init=5, max_iter=200, random_state=None):
    """One reduced-set construction whose prefixes give every smaller reduced set.

    Runs :func:`~sparsekm.reduced_set.construct` (phase 1) with ``n_max`` vectors per
    output (``shared=False``; each output with its own seed, exactly as
    :func:`~sparsekm.reduced_set.reduce_expansion` draws them) or in total
    (``shared=True``) and returns a function ``prefix(m)`` giving the ``m``-vector
    reduced expansion: the first ``m`` vectors of each output's run with their
    Proposition-8 coefficients ``beta = (K^z)^-1 K^zx alpha`` re-computed. Up to
    rounding this equals ``reduce_expansion(psi, m, method="construct", ...)`` with
    the same ``random_state``. An output with at most ``m`` terms is copied exactly.

    Parameters
    ----------
    psi : KernelExpansion
        Single- or multi-output (one column per one-vs-rest classifier).
    n_max : int >= 1
        Largest size needed.
    shared : bool, default=False
    n_init, max_iter, random_state
        As in :func:`~sparsekm.reduced_set.construct`.

    Returns
    -------
    prefix : callable ``m -> KernelExpansion``
        With ``psi``'s intercept (re-fit thresholds afterwards if wanted).
    """
    n_max = check_scalar(n_max, "n_max", "construct_prefixes", kind="int", lower=1)
    parts = _output_parts(psi, shared)
    if len(parts) > 1:
        seeds = check_random_state(random_state).randint(np.iinfo(np.int32).max,
                                                         size=len(parts))
    else:
        seeds = [random_state]
    runs = []
    for part, seed in zip(parts, seeds, strict=True):
        n_terms = part.n_terms
        # a run with fewer vectors than terms, so that every m < n_terms has a real prefix
        n_run = min(n_max, max(n_terms - 1, 1))
        if n_terms <= 1:
            runs.append(None)
            continue
        res = construct(part, n_run, shared=bool(shared) if part.is_multioutput else None,
                        n_init=n_init, max_iter=max_iter, random_state=seed)
        runs.append(np.asarray(res.expansion.vectors, dtype=np.float64))

    def prefix(m):
        m = check_scalar(m, "m", "prefix", kind="int", lower=1)
        blocks = []
        for part, Z in zip(parts, runs, strict=True):
            if Z is None or m >= part.n_terms:
                blocks.append((np.asarray(part.vectors, dtype=np.float64),
                               np.asarray(part.coef, dtype=np.float64)))
                continue
            Zm = Z[:min(m, Z.shape[0])]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                blocks.append((Zm, np.asarray(optimal_coefficients(part, Zm))))
        if len(parts) == 1:
            Z, B = blocks[0]
            return KernelExpansion(Z, B, psi.kernel, psi.intercept)
        Z = np.vstack([b[0] for b in blocks])
        coef = np.zeros((Z.shape[0], len(parts)))
        start = 0
        for k, (Zk, Bk) in enumerate(blocks):
            coef[start:start + Zk.shape[0], k] = np.ravel(Bk)
            start += Zk.shape[0]
        return KernelExpansion(Z, coef, psi.kernel, psi.intercept)

    return prefix


# -- the report ----------------------------------------------------------------------
#: Default tolerance when neither ``n_vectors`` nor ``max_error_increase`` is given.
DEFAULT_MAX_ERROR_INCREASE = 0.005
#: Default ``time_limit``: this multiple of the first candidate's build seconds (phase 1
#: of the shared construction: 0.2-0.75x the SVC's own fit at 250 vectors on 6-7 * 10^4
#: points, so that there the default call stays within about three SVC fits) ...
TIME_LIMIT_FACTOR = 3.0
#: ... but at least this many seconds (on small sets phase 1 takes seconds; five minutes
#: leave every candidate, SLMC included, its C search).
TIME_LIMIT_FLOOR = 300.0
#: C values tried (on validation) by every direct method (the same grid as the peers of
#: ``benchmarks/bench_pareto.py``).
C_GRID = (0.1, 1.0, 10.0, 100.0)
#: A result whose validation error exceeds the full machine's by more than this
#: (absolute: 0.02 = two percentage points) is warned about.
WARN_MARGIN = 0.02
#: select-l1 with separate sets refuses below this many vectors per binary machine: an
#: L1 path cut at a handful of support vectors per pair keeps no usable machine (84 % test
#: error at 5 per pair on a one-vs-one SVC, 64 % on USPS at 25 per class).
MIN_L1_PER_MACHINE = 10
#: The fixed-Z linear SVMs (uniform-, kmeans-, greedy-svm) search their C on a stratified
#: subsample of this many rows when that saves time; the chosen C is then fitted once on
#: all rows (its validation error is the one reported and compared). A LinearSVC fit costs
#: about linearly in the rows, so with k = len(C_GRID) values the subsample costs
#: k * C_SEARCH_ROWS + n row-fits against k * n on all n rows: it is used when
#: (k - 1) * n > k * C_SEARCH_ROWS (above 13,333 rows with four values). At 59,049 rows the
#: four C values then cost about as much as one fit on all rows, instead of four; at
#: 10,200 rows the subsample would cost five fits instead of four.
C_SEARCH_ROWS = 10_000
#: Stratified folds when no validation data is given.
DEFAULT_CV = 3
#: Without validation data the model returned is built once more, on all the training
#: data, after the folds chose it. A model trained on those points errs on them about as
#: often as the folds' estimate or less; one whose error on them exceeds its CV estimate by
#: more than ``max(WARN_MARGIN, REBUILD_SE * SE)`` (SE: the binomial standard error of the
#: estimate over the training points) is not the model the folds validated (a non-convex
#: build landed elsewhere: on IDA image at 16 vectors, construct + refine had 5.3 % in CV
#: and 11.7 % on the training data once rebuilt). Such a candidate is refused.
REBUILD_SE = 2.0
#: ``method="auto"``: candidates from cheap to costly. Among the fixed-Z linear SVMs the
#: k-means one (scikit-learn's Nystroem k-means + LinearSVC, the peer) comes first, so that
#: a time limit never skips it for the other two: with 325 pairwise machines and 700
#: vectors the uniform-subset SVM's C search took 232 s and the k-means one was skipped.
AUTO_METHODS = ("construct", "construct+refine", "kmeans-svm", "uniform-svm", "greedy-svm",
                "slmc")
_RS_METHODS = ("construct", "construct+refine", "select-kpca", "select-backward", "select-l1")
_LINEAR_METHODS = ("uniform-svm", "kmeans-svm", "greedy-svm")
_DIRECT_METHODS = _LINEAR_METHODS + ("slmc",)
METHOD_LABELS = {
    "construct": "shared RS construction (phase 1)",
    "construct+refine": "RS construction + joint refine (phase 2)",
    "uniform-svm": "fixed-Z SVM on a uniform subset (Nystrom uniform + LinearSVC)",
    "kmeans-svm": "fixed-Z SVM on k-means centres (Nystrom k-means + LinearSVC)",
    "greedy-svm": "greedy basis (shared) + linear SVM",
    "slmc": "shared SLMC started from the RS",
    "select-kpca": "RS selection (kernel PCA)",
    "select-backward": "RS selection (backward)",
    "select-l1": "RS selection (L1)",
    "original": "the original machine, unchanged",
}
_ROW_KEYS = ("method", "variant", "budget", "n_vectors", "val_error", "agreement", "seconds",
             "status", "reason")


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


class CompressReport(dict):
    """What :func:`compress` tried: a plain dictionary with a table and a plot.

    Keys: ``"mode"`` (``"budget"`` or ``"tolerance"``), ``"budget"`` (requested, or
    the one found), ``"full_error"`` and ``"full_n_vectors"`` (the original machine),
    ``"target_error"`` (tolerance mode), ``"selection"`` (what errors were measured on:
    the validation data or k-fold CV inside the training data), ``"time_limit"``,
    ``"chosen"`` (row index), ``"messages"`` (list of str: warnings and notes) and
    ``"rows"``: one dict per candidate with ``method``, ``variant`` (e.g. the C chosen),
    ``budget``, ``n_vectors`` (distinct kernel evaluations per prediction),
    ``val_error``, ``agreement`` (fraction of the validation points on which it predicts
    as the original machine), ``seconds`` (build time), ``status`` (``"chosen"``,
    ``"ok"``, ``"skipped"``, ``"refused"``, ``"failed"``, ``"reference"``) and
    ``reason``. Missing numbers are NaN. Saved with the model by :func:`sparsekm.save`
    (a loaded model holds the plain dict: ``CompressReport(model.compress_report_)``).
    """

    @property
    def rows(self):
        return self.get("rows", [])

    def table(self):
        """The report as text (what ``sparsekm reduce`` prints)."""
        sel = self.get("selection", "validation")
        lines = [f"original machine: {self.get('full_n_vectors', 0)} distinct vectors, "
                 f"error {_pct(self.get('full_error'))} on the {sel}"]
        if self.get("mode") == "tolerance":
            lines.append(f"target: error <= {_pct(self.get('target_error'))}")
        lines.append(f"{'method':<17} {'variant':<22} {'budget':>6} {'vectors':>7} "
                     f"{'error':>8} {'agree':>8} {'seconds':>8}  status")
        for r in self.rows:
            lines.append(f"{r['method']:<17} {r['variant'][:22]:<22} {r['budget']:>6d} "
                         f"{r['n_vectors']:>7d} {_pct(r['val_error']):>8} "
                         f"{_pct(r['agreement']):>8} {_num(r['seconds']):>8}  {r['status']}"
                         + (f": {r['reason']}" if r["reason"] else ""))
        lines += list(self.get("messages", []))
        return "\n".join(lines)

    def __str__(self):
        return self.table()

    def plot(self, path=None, title=None):
        """Validation error against kernel evaluations per prediction, one point per
        candidate (chosen ringed), the original machine as a dashed line. Returns the
        figure, or the path when ``path`` is given."""
        from .plotting import _plt, savefig

        plt = _plt()
        fig, ax = plt.subplots(figsize=(6.0, 4.0))
        markers = {"chosen": "*", "ok": "o", "reference": "s", "refused": "x"}
        seen = set()
        for i, r in enumerate(self.rows):
            if not np.isfinite(r["val_error"]) or r["n_vectors"] <= 0:
                continue
            m = AUTO_METHODS.index(r["method"]) if r["method"] in AUTO_METHODS else 9
            label = r["method"] if r["method"] not in seen else None
            seen.add(r["method"])
            ax.plot(r["n_vectors"], 100 * r["val_error"], markers.get(r["status"], "o"),
                    color=f"C{m % 10}", ms=12 if r["status"] == "chosen" else 6, label=label)
            if i == self.get("chosen", -1):
                ax.plot(r["n_vectors"], 100 * r["val_error"], "o", ms=16, mfc="none",
                        mec="k", label="chosen")
        full = self.get("full_error", float("nan"))
        if np.isfinite(full):
            ax.axhline(100 * full, color="0.3", ls="--", lw=1.0,
                       label=f"original ({self.get('full_n_vectors', 0)} vectors)")
        if self.get("mode") == "tolerance" and np.isfinite(self.get("target_error", np.nan)):
            ax.axhline(100 * self["target_error"], color="C3", ls=":", lw=1.0, label="target")
        ax.set_xlabel("kernel evaluations per prediction")
        ax.set_ylabel(f"error (%) on the {self.get('selection', 'validation')}"[:60])
        ax.set_title(title or "sparsekm.compress: candidates", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
        if path is not None:
            return savefig(fig, path)
        return fig


def _pct(v):
    return "–" if v is None or not np.isfinite(v) else f"{100 * v:.2f} %"


def _num(v):
    return "–" if v is None or not np.isfinite(v) else f"{v:.3g}"


@persistence.register
class CompressedClassifier(ReducedSetClassifier):
    """The classifier :func:`compress` returns: a :class:`ReducedSetClassifier` (same
    prediction, same file format) that also keeps the ``compress_report_``.

    Its expansion holds ``n_vectors_`` distinct vectors; its scheme is the original
    machine's (reduced-set candidates) or one-vs-rest / binary (the direct candidates:
    SLMC and the fixed-Z linear SVMs). Not meant to be fitted: build it with
    :func:`compress`.
    """

    _persist_attrs = {
        **ReducedSetClassifier._persist_attrs,
        "compress_report_": persistence.spec.dict(persistence.spec.one_of(
            persistence.spec.int(min=-1), persistence.spec.float(), persistence.spec.str(),
            persistence.spec.list(persistence.spec.str()),
            persistence.spec.list(persistence.spec.dict(persistence.spec.one_of(
                persistence.spec.int(), persistence.spec.float(), persistence.spec.str()),
                keys=_ROW_KEYS))), optional=True),
    }

    def fit(self, X, y):
        raise TypeError("CompressedClassifier is built by sparsekm.compress(model, ...), not "
                        "fitted; use ReducedSetClassifier to reduce an SVM by fit.")

    def plot_report(self, path=None):
        """:meth:`CompressReport.plot` of ``compress_report_`` (also after loading)."""
        return CompressReport(self.compress_report_).plot(path)

    @property
    def chosen_method_(self):
        """The candidate :func:`compress` chose, from ``compress_report_``: a reduced-set
        method (``"construct"``, ``"construct+refine"``, ``"select-*"``), a direct one
        (``"slmc"``, ``"kmeans-svm"``, ``"uniform-svm"``, ``"greedy-svm"``) or
        ``"original"``. The constructor parameters (``get_params()``) only fill the
        reduced-set fields of the file format: for a direct method ``method`` reads
        ``"construct"``, so read this attribute (or the report) for what was chosen."""
        check_is_fitted(self, "compress_report_")
        report = self.compress_report_
        return str(report["rows"][int(report["chosen"])]["method"])


# -- the model to compress -----------------------------------------------------------
def _exact_classifier(model, y_hint, owner):
    """The original machine as an exact :class:`ExpansionClassifier`."""
    from sklearn.svm import NuSVC

    from .interop import classifier_from_estimator
    from .multiclass import ExpansionClassifier

    if isinstance(model, ExpansionClassifier):
        model._check()
        return model
    if isinstance(model, KernelExpansion):
        if y_hint is None:
            raise ValueError(f"{owner}: a bare KernelExpansion carries no class labels; pass "
                             "labelled data (y_val or y_train).")
        classes = np.unique(y_hint)
        if model.is_multioutput and model.n_outputs > 1:
            if classes.size != model.n_outputs:
                raise ValueError(
                    f"{owner}: a multi-output KernelExpansion is read as one-vs-rest with one "
                    f"output per class; the labels have {classes.size} classes but the "
                    f"expansion {model.n_outputs} outputs.")
            return ExpansionClassifier(model, classes, scheme="ovr")
        if classes.size != 2:
            raise ValueError(f"{owner}: a single-output KernelExpansion is a binary classifier; "
                             f"the labels have {classes.size} classes.")
        return ExpansionClassifier(model, classes, scheme="binary")
    if isinstance(model, (SVC, NuSVC, OneVsRestClassifier, OneVsOneClassifier)):
        if not hasattr(model, "classes_") and not hasattr(model, "estimators_"):
            raise ValueError(f"{owner} needs a fitted model; {type(model).__name__} is not "
                             "fitted (call fit first).")
        return classifier_from_estimator(model)
    if hasattr(model, "_classifier") and isinstance(getattr(model, "expansion_", None),
                                                    KernelExpansion):
        model._restore_defaults()
        return model._classifier()
    expansion = getattr(model, "expansion_", None)
    if isinstance(expansion, KernelExpansion) and hasattr(model, "classes_"):
        classes = np.asarray(model.classes_)
        n_out = expansion.n_outputs if expansion.is_multioutput else 1
        if classes.size == 2 and n_out == 1:
            return ExpansionClassifier(expansion, classes, scheme="binary")
        if classes.size > 2 and n_out == classes.size:
            return ExpansionClassifier(expansion, classes, scheme="ovr")
    if hasattr(model, "predict") and hasattr(model, "fit"):
        raise TypeError(
            f"{owner} cannot compress a fitted {type(model).__name__}: pass a fitted SVC, a "
            "OneVsRestClassifier(SVC), a sparsekm classifier with expansion_ (e.g. SLMC, "
            "ApproxSVC, ReducedSetClassifier) or a KernelExpansion. (An unfitted sparsekm model "
            "has no expansion_: fit it first.)")
    raise TypeError(f"{owner} needs a fitted classifier or a KernelExpansion; got "
                    f"{type(model).__name__}.")


def _like(exact, expansion, scheme=None):
    """An ExpansionClassifier with ``exact``'s classes and rules around ``expansion``."""
    from .multiclass import ExpansionClassifier

    if scheme is None or scheme == exact.scheme:
        return ExpansionClassifier(expansion, exact.classes, scheme=exact.scheme,
                                   decision_function_shape=exact.decision_function_shape,
                                   break_ties=exact.break_ties, vote=exact.vote)
    return ExpansionClassifier(expansion, exact.classes, scheme=scheme)


def _refit_thresholds(exact, expansion, X, y):
    """The papers' training-error optimal thresholds, by the scheme's rule (one-vs-one:
    each pair on its two classes), as :class:`ReducedSetClassifier` does."""
    shell = ReducedSetClassifier(refit_intercept=True)
    shell.classes_ = np.asarray(exact.classes)
    shell.scheme_ = exact.scheme
    return shell._refit_thresholds(expansion, X, y)


def _binomial_se(p, n):
    """Binomial standard error of an error rate ``p`` measured on ``n`` points."""
    return float(np.sqrt(p * (1.0 - p) / n))


def _rebuild_margin(cv_error, n):
    """How far a rebuilt model's error on its own ``n`` training points may exceed its CV
    estimate ``cv_error`` (see ``REBUILD_SE``)."""
    return max(WARN_MARGIN, REBUILD_SE * _binomial_se(cv_error, n))


@dataclass
class _Split:
    """Data one candidate is built on (``X_fit``) and judged on (``X_eval``)."""

    X_fit: object
    y_fit: object
    X_eval: object
    y_eval: object
    exact: object            # the original machine trained on X_fit (None: not available)
    cache: dict = field(default_factory=dict)


def _fixed_z_linear_svm(kernel, Z, M, transform, X, y, C, seed):
    """Linear SVM on the features ``transform(X) = K(x, Z) M``, written back as an
    expansion on ``Z``: ``beta = M w`` (one column per one-vs-rest machine; one output
    when binary)."""
    from sklearn.svm import LinearSVC

    F = transform(X)
    svm = LinearSVC(C=C, max_iter=5000, random_state=seed).fit(F, y)
    W = svm.coef_
    if W.shape[0] == 1:
        return KernelExpansion(Z, M @ W[0], kernel, float(svm.intercept_[0]))
    return KernelExpansion(Z, M @ W.T, kernel, np.asarray(svm.intercept_, dtype=np.float64))


def nystroem_normalization(kernel, Z):
    """``K_zz^{-1/2}`` exactly as scikit-learn's ``Nystroem`` computes it (SVD, singular
    values floored at 1e-12); features ``K(x, Z) @ M`` with ``M`` the transpose."""
    from scipy import linalg

    U, S, V = linalg.svd(np.asarray(kernel(Z, Z)))
    S = np.maximum(S, 1e-12)
    return ((U / np.sqrt(S)) @ V).T


def _sklearn_kernel(kernel):
    """``(name, params)`` of scikit-learn's pairwise kernel equal to ``kernel``, or None."""
    from .kernels import RBF, Linear, Polynomial

    if type(kernel) is RBF:
        return "rbf", {"gamma": float(kernel.gamma)}
    if type(kernel) is Linear:
        return "linear", {}
    if type(kernel) is Polynomial:
        return "poly", {"gamma": float(kernel.gamma), "degree": kernel.degree,
                        "coef0": float(kernel.coef0)}
    return None


def nystroem_features(kernel, Z, seed):
    """The Nystrom feature map on the landmarks ``Z``: ``(Z', M, transform)`` with
    ``transform(X) = K(X, Z') M``, ``M = K_z'z'^{-1/2}`` and ``Z'`` the rows of ``Z``.

    For the kernels scikit-learn has (RBF, linear, polynomial) this *is*
    ``sklearn.kernel_approximation.Nystroem(kernel, n_components=len(Z),
    random_state=seed).fit(Z)`` (landmarks in its order; the same features to the last
    bit), otherwise the same formula with sparsekm's kernel.
    """
    spec = _sklearn_kernel(kernel)
    if spec is None:
        M = nystroem_normalization(kernel, Z)
        return Z, M, lambda X: np.asarray(kernel(X, Z)) @ M
    from sklearn.kernel_approximation import Nystroem

    ny = Nystroem(kernel=spec[0], n_components=Z.shape[0], random_state=seed,
                  **spec[1]).fit(Z)
    return np.asarray(ny.components_, dtype=np.float64), ny.normalization_.T, ny.transform


def _distinct_rows(X):
    return np.unique(np.asarray(X, dtype=np.float64), axis=0)


class _Candidates:
    """Builders of every method at one budget (``build(split, variant)``) and their
    variants (thresholds, C)."""

    def __init__(self, exact0, shared, n_init, max_iter, seed, source_C=None):
        self.exact0, self.shared, self.seed = exact0, shared, seed
        self.n_init, self.max_iter = n_init, max_iter
        self.source_C = source_C
        #: ``time.perf_counter()`` value at which an SLMC fit stops (its L-BFGS callback
        #: raises StopIteration; the best Z so far is kept); None: no deadline
        self.deadline = None
        self.slmc_stopped = 0  # SLMC fits stopped at the deadline
        self.kernel = exact0.expansion.kernel
        self.multi = exact0.expansion.is_multioutput and exact0.expansion.n_outputs > 1

    def variants(self, method, has_fit):
        if method in _RS_METHODS:
            return ["b kept"] + (["b refit on train"] if has_fit else [])
        grid = list(C_GRID)
        if method == "slmc" and self.source_C is not None:
            # the SLMC of Wu et al. keeps the SVM's C: the grid value nearest to it (in
            # log C) is built first, so a spent time limit cuts the least likely ones
            grid.sort(key=lambda C: abs(np.log(C) - np.log(self.source_C)))
        return [f"C={C:g}" for C in grid]

    # -- reduced sets of the original machine ----------------------------------------
    def _prefix(self, split, b):
        key = ("prefix", self.shared)
        n_run, prefix = split.cache.get(key, (0, None))
        if b > n_run:
            psi = split.exact.expansion
            n_run = b
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prefix = construct_prefixes(psi, n_run, shared=self.shared, n_init=self.n_init,
                                            max_iter=self.max_iter, random_state=self.seed)
            split.cache[key] = (n_run, prefix)
        return prefix

    def _per_output(self, b):
        psi = self.exact0.expansion
        return b if (self.shared or not self.multi) else max(1, b // psi.n_outputs)

    def rs(self, split, method, b):
        key = ("rs", method, b)
        if key in split.cache:
            return split.cache[key]
        psi = split.exact.expansion
        m = self._per_output(b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method == "construct":
                red = self._prefix(split, m)(m)
            elif method == "construct+refine":
                from .reduced_set import refine
                red = refine(psi, self.rs(split, "construct", b), max_iter=300).expansion
            else:
                from .reduced_set import reduce_expansion
                red = reduce_expansion(psi, m, method=method, shared=self.shared,
                                       random_state=self.seed).expansion
        split.cache[key] = red
        return red

    def c_search_rows(self, split):
        """Rows of ``split.X_fit`` the linear candidates' C values are fitted on: all of
        them (``None``) unless a stratified subsample of ``C_SEARCH_ROWS`` rows plus the
        final fit on all rows costs fewer row-fits than every C on all rows, then that
        subsample (sorted)."""
        n = split.X_fit.shape[0]
        k = len(C_GRID)
        if (k - 1) * n <= k * C_SEARCH_ROWS:
            return None
        if "c_rows" not in split.cache:
            from sklearn.model_selection import train_test_split
            idx = np.arange(n)
            try:
                keep = train_test_split(idx, train_size=C_SEARCH_ROWS, stratify=split.y_fit,
                                        random_state=self.seed)[0]
            except ValueError:  # a class too small to stratify: a plain uniform draw
                keep = check_random_state(self.seed).choice(n, C_SEARCH_ROWS, replace=False)
            split.cache["c_rows"] = np.sort(keep)
        return split.cache["c_rows"]

    def build(self, split, method, b, variant, all_rows=False):
        """The candidate ``method`` at budget ``b`` with ``variant`` fitted on
        ``split.X_fit`` (a linear candidate's C search on :meth:`c_search_rows` unless
        ``all_rows``)."""
        exact = split.exact
        if method in _RS_METHODS:
            red = self.rs(split, method, b)
            if variant != "b kept":
                red = _refit_thresholds(exact, red, split.X_fit, split.y_fit)
            return _like(exact, red)
        C = float(variant.split("=")[1])
        X, y = split.X_fit, split.y_fit
        classes = np.asarray(self.exact0.classes)
        scheme = "binary" if classes.size == 2 else "ovr"
        if method == "slmc":
            from .models import SLMC

            Z0 = np.asarray(self.rs(split, "construct", b).vectors, dtype=np.float64)
            deadline = self.deadline

            def stop_at_deadline(it, W):
                if deadline is not None and time.perf_counter() > deadline:
                    self.slmc_stopped += 1
                    raise StopIteration

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf = SLMC(n_vectors=Z0.shape[0], C=C, kernel=self.kernel, init=Z0,
                           shared=classes.size > 2, random_state=self.seed).fit(
                    X, y, callback=stop_at_deadline)
            return _like(self.exact0, clf.expansion_, scheme)
        key = (method, b)
        if key not in split.cache:
            if method == "greedy-svm":
                from scipy.linalg import solve_triangular

                from .approx import GreedyBasis
                gb = GreedyBasis(n_basis=b, tol=1e-6, kernel=self.kernel,
                                 random_state=self.seed).fit(X)
                Z = np.asarray(gb.basis_vectors_, dtype=np.float64)
                M = solve_triangular(gb.cholesky_, np.eye(Z.shape[0]), lower=True).T
                transform = gb.transform
            else:
                U = _distinct_rows(X)
                k = min(b, U.shape[0])
                if method == "kmeans-svm":
                    from sklearn.cluster import KMeans
                    Z = KMeans(n_clusters=k, n_init=1, random_state=self.seed).fit(
                        X).cluster_centers_
                else:  # uniform-svm
                    rng = check_random_state(self.seed)
                    Z = U[np.sort(rng.choice(U.shape[0], size=k, replace=False))]
                Z, M, transform = nystroem_features(self.kernel, Z, self.seed)
            split.cache[key] = (Z, M, transform)
        Z, M, transform = split.cache[key]
        rows = None if all_rows else self.c_search_rows(split)
        if rows is not None:
            X, y = X[rows], y[rows]
        return _like(self.exact0, _fixed_z_linear_svm(self.kernel, Z, M, transform, X, y, C,
                                                      self.seed), scheme)


# -- the search ----------------------------------------------------------------------
def _check_labels(X, y, nx, ny, owner):
    X = check_array(X, nx)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"{ny} must be 1-D with one label per row of {nx} ({X.shape[0]}); "
                         f"got shape {y.shape}.")
    if y.dtype.kind in "fc" and not np.isfinite(y).all():
        raise ValueError(f"{ny} contains NaN or infinity; class labels must be finite.")
    return X, y


def _methods(method, owner):
    known = set(AUTO_METHODS) | set(_RS_METHODS)
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


def compress(model, X_val=None, y_val=None, *, n_vectors=None, max_error_increase=None,
             method="auto", X_train=None, y_train=None, time_limit=None, random_state=None,
             shared=True, cv=DEFAULT_CV, n_init=5, max_iter=200, verbose=False):
    """The best small classifier for a budget, or the smallest within a tolerance.

    Tries several ways to make a kernel classifier cheap -- reduced sets of the
    machine itself and machines trained directly with few vectors -- and picks on
    validation data (never on a test set).

    Parameters
    ----------
    model : fitted classifier or KernelExpansion
        ``SVC``/``NuSVC`` (binary or one-vs-one), ``OneVsRestClassifier(SVC)``,
        ``OneVsOneClassifier(SVC)``, an :class:`~sparsekm.multiclass.ExpansionClassifier`,
        a sparsekm classifier with ``expansion_`` (SLMC, ApproxSVC,
        ReducedSetClassifier, ...) or a ``KernelExpansion`` (binary: sign; several
        outputs: one-vs-rest over ``np.unique(y)``).
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
        ``"auto"`` tries ``AUTO_METHODS`` from cheap to costly: ``"construct"`` (RS
        construction, eq. 74-77, one set shared by all binary machines),
        ``"construct+refine"`` (plus phase 2, joint L-BFGS), ``"kmeans-svm"`` and
        ``"uniform-svm"`` (fixed ``Z`` = the k-means centres / a uniform subset of the
        training data, features ``K(x, Z) K_zz^{-1/2}``, ``LinearSVC``, written back as
        ``beta = K_zz^{-1/2} w``: scikit-learn's Nystroem + LinearSVC, exactly),
        ``"greedy-svm"`` (one greedy basis, Franc & Hlavac, of the whole budget shared
        by all classes + ``LinearSVC``) and ``"slmc"`` (shared SLMC, Wu et al., started
        from the shared RS). Every direct method has C chosen on validation among
        ``C_GRID`` (the SLMC tries the value nearest the original's ``C`` first, the
        SVM's C of Wu et al.'s protocol; on more than ``len(C_GRID) / (len(C_GRID) - 1)
        * C_SEARCH_ROWS`` (13,333) fit rows the linear SVMs try their C values on a
        stratified subsample of ``C_SEARCH_ROWS`` (10,000) rows and fit the chosen one
        on all rows); the RS methods their thresholds (kept,
        or re-fitted on the training data). Also ``"select-kpca"``, ``"select-backward"``, ``"select-l1"``.
        The direct methods need ``X_train, y_train``; without them they are refused.
    X_train, y_train : array-like, optional
        The original's training data (for the direct methods and re-fitted thresholds).
    time_limit : float, optional
        Seconds. Candidates not started when it is spent, or when less of it is left
        than the first candidate took, are skipped, a candidate's C values not yet tried
        are cut, and an SLMC fit running at that moment stops after
        its current L-BFGS iteration, keeping the best ``Z`` so far (the report says so).
        Default: ``TIME_LIMIT_FACTOR`` (3) times the first candidate's build seconds, at
        least ``TIME_LIMIT_FLOOR`` (300 s).
    random_state : int, RandomState instance or None
    shared : bool, default=True
        Reduced-set candidates of a multi-class machine: one set shared by all binary
        machines (``False``: ``n_vectors // n_outputs`` per machine).
    cv : int, default=3
        Folds when ``X_val`` is not given (another value together with ``X_val`` is
        refused: it would not be used).
    n_init, max_iter : int
        RS construction settings (see :func:`~sparsekm.reduced_set.construct`).
    verbose : bool, default=False

    Returns
    -------
    CompressedClassifier
        ``predict``, ``decision_function``, ``classes_``, ``n_vectors_`` (at most the
        budget, and never more than the original's distinct vectors) and
        ``compress_report_`` (:class:`CompressReport`: one row per candidate, ``plot()``).

    Notes
    -----
    Choice rule: the lowest validation error; ties go to fewer vectors, then to the
    candidate tried first (the cheaper). A candidate whose validation error is no
    better than always predicting the most frequent class is refused. The result is
    warned about when its error exceeds the original's by more than ``WARN_MARGIN``
    (two points) or exceeds the uniform-subset Nystrom SVM of the same budget; the
    report always gives its agreement with the original. When the budget is at least
    the original's number of distinct vectors, the original expansion is returned
    unchanged. The report's messages name the candidates whose validation error is within
    one binomial standard error of the chosen one's (a near tie that the validation data
    cannot resolve; the choice rule is unchanged). Tolerance mode walks the budgets ``1, 2, 4, ...`` (at each, the
    candidates cheap to costly until one meets the target), then bisects with the
    winning method.

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
    t_start = time.perf_counter()
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
    if shared not in (True, False):
        raise ValueError(f"The 'shared' parameter of {owner} must be a bool. Got {shared!r}.")
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
    # a bare expansion's classes: those of all the labels given (the validation data may
    # miss a class that the training data has)
    y_hint = np.concatenate([y for y in (y_val, y_train) if y is not None])
    exact = _exact_classifier(model, y_hint, owner)
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
    rng = check_random_state(random_state)
    seed = int(rng.randint(np.iinfo(np.int32).max))
    n_full = int(psi.compress().n_terms)
    cands = _Candidates(exact, shared, n_init, max_iter, seed, source_C=_source_C(model))
    messages = []

    # the splits: the validation data, or k folds inside the training data
    if X_val is not None:
        selection = "validation data"
        splits = [_Split(X_train, y_train, X_val, y_val, exact)]
        final = None
    else:
        from sklearn.model_selection import StratifiedKFold
        cv = check_scalar(cv, "cv", owner, kind="int", lower=2)
        selection = f"{cv}-fold CV inside the training data"
        base = _refittable(model)
        splits = []
        for a, v in StratifiedKFold(cv, shuffle=True, random_state=seed).split(X_train, y_train):
            ex = None
            if base is not None:
                from sklearn.base import clone
                ex = _exact_classifier(clone(base).fit(X_train[a], y_train[a]), y_train, owner)
            splits.append(_Split(X_train[a], y_train[a], X_train[v], y_train[v], ex))
        final = _Split(X_train, y_train, None, None, exact)
        messages.append(f"no validation data: choices on {selection} (every candidate built "
                        f"{cv} + 1 times" + (", the original re-trained on each fold)"
                                             if base is not None else ")"))

    def full_errors():
        errs = []
        for s in splits:
            ex = s.exact if s.exact is not None else None
            errs.append(np.nan if ex is None else float(np.mean(ex.predict(s.X_eval) != s.y_eval)))
        return float(np.nanmean(errs)) if not all(np.isnan(errs)) else float("nan")

    full_error = full_errors()
    chance = float(np.mean([1 - np.max(np.unique(s.y_eval, return_counts=True)[1]) /
                            s.y_eval.size for s in splits]))
    report = CompressReport(mode="budget" if tol is None else "tolerance",
                            budget=int(n_vectors or 0), full_error=full_error,
                            full_n_vectors=n_full, selection=selection, rows=[],
                            chosen=-1, messages=messages,
                            target_error=float("nan") if tol is None else full_error + tol,
                            time_limit=float("nan"))
    limit = [time_limit]
    first = [None]  # the first candidate's build seconds (the unit of the time limit)
    built = {}  # (method, b) -> (classifier, variant) on the final data

    X_agree = X_val if X_val is not None else X_train
    exact_pred = []  # the original's predictions on X_agree, formed once

    def agreement(clf, pred=None):
        """Agreement with the original, on the validation data (or the training data);
        ``pred``: ``clf``'s predictions there, when already formed."""
        if not exact_pred:
            exact_pred.append(exact.predict(X_agree))
        return float(np.mean((clf.predict(X_agree) if pred is None else pred) == exact_pred[0]))

    def row(m, b, **kw):
        r = {"method": m, "variant": "", "budget": int(b), "n_vectors": 0,
             "val_error": float("nan"), "agreement": float("nan"), "seconds": 0.0,
             "status": "ok", "reason": ""}
        r.update(kw)
        report["rows"].append(r)
        if verbose:
            print(f"compress: {m} at {b}: {r['status']} {_pct(r['val_error'])} {r['reason']}")
        return r

    def refusal(m, b):
        """Why ``m`` cannot run at budget ``b`` (None: it can)."""
        if m in _DIRECT_METHODS and X_train is None:
            return "needs the training data (X_train, y_train)"
        if m in _RS_METHODS and any(s.exact is None for s in splits):
            return ("no validation data and the original machine cannot be re-trained on "
                    "the folds (pass X_val, y_val)")
        if m in _RS_METHODS and cands.multi and not shared and b < psi.n_outputs:
            return (f"separate sets (shared=False) need at least one vector for each of the "
                    f"{psi.n_outputs} binary machines, more than the budget {b}; use "
                    "shared=True")
        if m == "select-l1":
            per = b if (shared or not cands.multi) else b // psi.n_outputs
            if not (shared and cands.multi) and per < MIN_L1_PER_MACHINE:
                return (f"{per} vectors per binary machine is below {MIN_L1_PER_MACHINE}: the "
                        "L1 path keeps no usable machine there; use construct or "
                        "construct+refine")
        return None

    def run(m, b, reference=False):
        """Build ``m`` at budget ``b`` on every split (variant chosen on mean error) and
        on the final data; append and return its report row."""
        started = any(r["status"] in ("ok", "refused") and r["n_vectors"]
                      for r in report["rows"])
        if limit[0] is not None and started:
            left = limit[0] - (time.perf_counter() - t_start)
            if left < 0:
                return row(m, b, status="skipped", reason=f"time limit {limit[0]:.0f} s spent")
            if first[0] is not None and left < first[0]:
                # every later candidate costs about as much as the first one or more
                # (a linear SVM on all rows, an SLMC fit): one started now would run
                # far past the limit
                return row(m, b, status="skipped",
                           reason=f"time limit {limit[0]:.0f} s: {left:.0f} s left, less "
                                  f"than the first candidate's {first[0]:.0f} s")
        why = refusal(m, b)
        if why:
            return row(m, b, status="refused", reason=why)
        t0 = time.perf_counter()
        cands.deadline = None if limit[0] is None else t_start + limit[0]
        stopped0 = cands.slmc_stopped
        try:
            variants = cands.variants(m, X_train is not None)
            errs, fitted, cut = {}, {}, []
            for v in variants:
                if errs and limit[0] is not None and \
                        time.perf_counter() - t_start > limit[0]:
                    cut.append(v)
                    continue
                per = []
                for i, s in enumerate(splits):
                    clf = cands.build(s, m, b, v)
                    fitted[(i, v)] = clf
                    per.append(float(np.mean(clf.predict(s.X_eval) != s.y_eval)))
                errs[v] = float(np.mean(per))
            v = min(errs, key=lambda k: errs[k])  # ties: the first listed
            searched = m in _LINEAR_METHODS and any(
                cands.c_search_rows(s) is not None for s in splits)
            if final is None:
                clf = fitted[(0, v)]
                if searched:  # C chosen on the subsample: the model is the all-rows fit
                    clf = cands.build(splits[0], m, b, v, all_rows=True)
                    errs[v] = float(np.mean(clf.predict(splits[0].X_eval) !=
                                            splits[0].y_eval))
            else:
                clf = cands.build(final, m, b, v, all_rows=True)
                pred_fit = clf.predict(final.X_fit)  # final.X_fit is X_agree here
                fit_error = float(np.mean(pred_fit != final.y_fit))
        except Exception as exc:  # a candidate failing must not sink the others
            return row(m, b, status="failed", reason=f"{type(exc).__name__}: {exc}"[:300],
                       seconds=time.perf_counter() - t0)
        secs = time.perf_counter() - t0
        n = int(clf.expansion.compress().n_terms)
        notes = []
        if cands.slmc_stopped > stopped0:
            notes.append(f"time limit: {cands.slmc_stopped - stopped0} SLMC fit(s) stopped "
                         "at the deadline before L-BFGS converged")
        if cut:
            notes.append(f"time limit: {', '.join(cut)} not tried")
        if searched:
            n_fit = max(s.X_fit.shape[0] for s in splits)
            notes.append(f"C chosen on {C_SEARCH_ROWS:,} of {n_fit:,} rows, then fitted on all"
                         + (" (validation error of that fit)" if final is None else ""))
        r = row(m, b, variant=v, n_vectors=n, val_error=errs[v],
                agreement=agreement(clf, pred_fit if final is not None else None),
                seconds=secs, status="reference" if reference else "ok",
                reason="; ".join(notes))
        if n > b or n > n_full:  # never more vectors than asked (a bug if it happens)
            r.update(status="failed", reason=f"{n} vectors exceed the budget {b}")
        elif not reference and errs[v] >= chance - 1e-12 and chance > 0:
            r.update(status="refused", reason=f"error {_pct(errs[v])} is no better than "
                     f"always predicting the most frequent class ({_pct(chance)})")
        elif not reference and final is not None and \
                fit_error > errs[v] + _rebuild_margin(errs[v], final.y_fit.size) + 1e-12:
            r.update(status="refused", reason=f"rebuilt on all the training data it errs on "
                     f"{_pct(fit_error)} of them against {_pct(errs[v])} in CV: not the model "
                     "the folds validated")
        built[len(report["rows"]) - 1] = clf
        if first[0] is None:
            first[0] = secs
        if limit[0] is None:
            limit[0] = max(TIME_LIMIT_FACTOR * secs, TIME_LIMIT_FLOOR)
            report["time_limit"] = float(limit[0])
            messages.append(f"time limit {limit[0]:.0f} s (default: {TIME_LIMIT_FACTOR:g}x the "
                            f"first candidate's {secs:.2f} s, at least {TIME_LIMIT_FLOOR:g} s)")
        elif np.isnan(report["time_limit"]):
            report["time_limit"] = float(limit[0])
        return r

    def usable(idx):
        return [i for i in idx if report["rows"][i]["status"] == "ok"]

    def best_of(idx):
        """Lowest error; ties: fewer vectors, then tried first."""
        idx = usable(idx)
        return min(idx, key=lambda i: (report["rows"][i]["val_error"],
                                       report["rows"][i]["n_vectors"], i)) if idx else None

    def original(reason):
        row("original", n_full, n_vectors=n_full, val_error=full_error, agreement=1.0,
                status="ok", reason=reason)
        built[len(report["rows"]) - 1] = exact
        return len(report["rows"]) - 1

    if tol is None:
        if n_vectors >= n_full:
            chosen = original(f"budget {n_vectors} >= the original's {n_full} distinct "
                              "vectors: returned unchanged")
        else:
            idx = []
            for m in methods:
                run(m, n_vectors)
                idx.append(len(report["rows"]) - 1)
            chosen = best_of(idx)
    else:
        target = report["target_error"]
        passing = lambda i: report["rows"][i]["status"] == "ok" and \
            report["rows"][i]["val_error"] <= target + 1e-12  # noqa: E731
        chosen, lo, b = None, 0, 1
        while b < n_full and chosen is None:
            for m in methods:
                run(m, b)
                if passing(len(report["rows"]) - 1):
                    chosen = len(report["rows"]) - 1
                    break
            if chosen is None:
                lo, b = b, min(2 * b, n_full)
        if chosen is not None:  # bisect with the winning method
            m = report["rows"][chosen]["method"]
            hi = b
            while hi - lo > 1:
                mid = (lo + hi) // 2
                run(m, mid)
                if passing(len(report["rows"]) - 1):
                    chosen, hi = len(report["rows"]) - 1, mid
                else:
                    lo = mid
            report["budget"] = int(report["rows"][chosen]["budget"])
        else:
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
    # never useless in silence: against the full machine and the uniform Nystrom SVM
    if best["method"] != "original" and np.isfinite(full_error):
        margin = WARN_MARGIN if tol is None else tol
        if best["val_error"] > full_error + margin + 1e-12:
            msg = (f"compress: the result ({best['method']}, {best['n_vectors']} vectors) has "
                   f"error {_pct(best['val_error'])} on the {selection}, more than "
                   f"{100 * margin:.1f} points above the original's {_pct(full_error)} "
                   f"({n_full} vectors)")
            messages.append("warning: " + msg[10:])
            warnings.warn(msg, UserWarning, stacklevel=2)
    if best["method"] != "original" and X_train is not None:
        uni = [i for i, r in enumerate(report["rows"]) if r["method"] == "uniform-svm"
               and r["budget"] == best["budget"] and np.isfinite(r["val_error"])]
        if not uni and (limit[0] is None or time.perf_counter() - t_start <= limit[0]):
            run("uniform-svm", best["budget"], reference=True)
            uni = [len(report["rows"]) - 1]
        if uni and np.isfinite(report["rows"][uni[0]]["val_error"]) and \
                best["val_error"] > report["rows"][uni[0]]["val_error"] + 1e-12:
            u = report["rows"][uni[0]]
            msg = (f"compress: the result ({best['method']}, error {_pct(best['val_error'])}) "
                   f"is worse than the uniform-subset Nystrom SVM of the same budget "
                   f"({_pct(u['val_error'])}) on the {selection}")
            messages.append("warning: " + msg[10:])
            warnings.warn(msg, UserWarning, stacklevel=2)
    messages.append(f"chosen: {best['method']} ({best['variant'] or 'as is'}), "
                    f"{best['n_vectors']} vectors, error {_pct(best['val_error'])}, agreement "
                    f"with the original {_pct(best['agreement'])} on the "
                    + ("validation data" if X_val is not None else "training data"))
    if tol is None:
        # a choice the validation data cannot make: other candidates within one binomial
        # standard error of the chosen one's error (said, never acted on)
        n_eval = int(y_val.size if X_val is not None else y_train.size)
        p = float(best["val_error"])
        se = _binomial_se(p, n_eval)
        close = [r for i, r in enumerate(report["rows"]) if i != chosen
                 and r["status"] == "ok" and r["budget"] == best["budget"]
                 and r["val_error"] <= p + se + 1e-12]
        if close:
            messages.append(
                "near tie: " + ", ".join(f"{r['method']} {_pct(r['val_error'])}" for r in close)
                + f" within one standard error ({_pct(se)}, {n_eval} points) of the chosen "
                f"{_pct(p)}; the {selection} cannot tell them apart")
    clf = built[chosen]
    out = CompressedClassifier(estimator=None, n_vectors=int(best["budget"]),
                               method=best["method"] if best["method"] in _RS_METHODS else
                               "construct", shared="auto",
                               refit_intercept="refit" in best["variant"],
                               random_state=seed)
    out.expansion_ = clf.expansion
    out.classes_ = classes
    out.scheme_ = clf.scheme
    out.decision_function_shape_ = clf.decision_function_shape
    out.break_ties_ = bool(clf.break_ties)
    out.vote_ = clf.vote
    out.n_features_in_ = int(psi.n_features)
    out.n_vectors_ = int(clf.expansion.compress().n_terms)
    out.n_support_vectors_ = n_full
    out.objective_ = float("nan")
    out.relative_objective_ = float("nan")
    out.n_iter_ = 1
    out.compress_report_ = report
    return out
