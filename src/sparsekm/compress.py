"""Automatic budgets: the smallest reduced machine that keeps the validation error.

:func:`compress` searches the reduced-set size (the *budget*: kernel evaluations per
prediction, all classes together) of a fitted kernel classifier on validation data
and returns the smallest :class:`~sparsekm.models.ReducedSetClassifier` whose
validation error is at most the full machine's plus ``max_error_increase``.

The search walks a geometric grid of sizes ``1, 2, 4, ...`` until the tolerance is
met, then bisects between the last failing and the first passing size. With
``method="construct"`` it is cheap: reduced-set construction adds one vector at a
time and re-fits all coefficients by Proposition 8 (*Input space vs. feature space*,
eq. 74-77), and the first ``m`` vectors of an ``N``-vector run are exactly the
``m``-vector run (one random stream per output), so one run gives every smaller
size: its first ``m`` vectors with coefficients ``beta = (K^z)^-1 K^zx alpha``
(Proposition 8) re-computed for the prefix. Other methods (and machines whose
structure is unknown here, e.g. a one-vs-one SVC) are re-fitted through
:class:`~sparsekm.models.ReducedSetClassifier` at every size walked.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC
from sklearn.utils import check_random_state

from .expansion import KernelExpansion
from .models.reduced_set import ReducedSetClassifier
from .reduced_set import construct, optimal_coefficients, refit_intercept
from .reduced_set.reduction import METHODS
from .utils.validation import check_array, check_scalar

__all__ = ["compress", "CompressCurve", "construct_prefixes"]


@dataclass
class CompressCurve:
    """The error-budget curve walked by :func:`compress`.

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


# -- the model to compress -----------------------------------------------------------
def _full_machine(model, y_val, owner):
    """``(psi or None, classes, predict_full)`` for the supported kinds of model."""
    if isinstance(model, KernelExpansion):
        classes = np.unique(y_val)
        if model.is_multioutput and model.n_outputs > 1:
            if classes.size != model.n_outputs:
                raise ValueError(
                    f"{owner}: a multi-output KernelExpansion is read as one-vs-rest with one "
                    f"output per class; y_val has {classes.size} classes but the expansion "
                    f"{model.n_outputs} outputs.")
        elif classes.size != 2:
            raise ValueError(f"{owner}: a single-output KernelExpansion is a binary classifier; "
                             f"y_val has {classes.size} classes.")
        return model, classes, None
    if isinstance(model, SVC) or isinstance(model, OneVsRestClassifier):
        if not hasattr(model, "classes_"):
            raise ValueError(f"{owner} needs a fitted model; {type(model).__name__} is not "
                             "fitted (call fit first).")
        if isinstance(model, SVC) and len(model.classes_) > 2:
            # one-vs-one: handed to ReducedSetClassifier at every size, if this version of
            # sparsekm can represent it as an expansion at all
            try:
                KernelExpansion.from_estimator(model)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"{owner}: this version of sparsekm cannot reduce a multi-class "
                    f"(one-vs-one) SVC ({exc}). Train OneVsRestClassifier(SVC(...)) instead."
                ) from None
            return None, np.asarray(model.classes_), model.predict
        return KernelExpansion.from_estimator(model), np.asarray(model.classes_), model.predict
    expansion = getattr(model, "expansion_", None)
    if isinstance(expansion, KernelExpansion) and hasattr(model, "classes_"):
        classes = np.asarray(model.classes_)
        n_out = expansion.n_outputs if expansion.is_multioutput else 1
        if (classes.size == 2 and n_out == 1) or (classes.size > 2 and n_out == classes.size):
            return expansion, classes, model.predict
        return None, classes, model.predict
    if hasattr(model, "predict") and hasattr(model, "fit"):
        raise TypeError(
            f"{owner} cannot compress a fitted {type(model).__name__}: pass a fitted SVC, a "
            "OneVsRestClassifier(SVC), a sparsekm classifier with expansion_ (e.g. SLMC, "
            "ApproxSVC, ReducedSetClassifier) or a KernelExpansion. (An unfitted sparsekm model "
            "has no expansion_: fit it first.)")
    raise TypeError(f"{owner} needs a fitted classifier or a KernelExpansion; got "
                    f"{type(model).__name__}.")


def _predict_expansion(expansion, classes, X):
    f = expansion.decision_function(X)
    if np.ndim(f) == 1:
        return classes[(f > 0).astype(int)]
    return classes[np.argmax(f, axis=1)]


def _shell(expansion, classes, n_vectors, n_features, params, n_support):
    """A fitted ReducedSetClassifier holding ``expansion`` (no wrapped estimator)."""
    rsc = ReducedSetClassifier(**{**params, "n_vectors": int(n_vectors), "estimator": None})
    rsc.expansion_ = expansion
    rsc.classes_ = np.asarray(classes)
    rsc.n_features_in_ = int(n_features)
    rsc.n_vectors_ = int(expansion.compress().n_terms)
    rsc.n_support_vectors_ = int(n_support)
    rsc.objective_ = np.nan
    rsc.relative_objective_ = np.nan
    rsc.n_iter_ = 1
    return rsc


def compress(model, X_val, y_val, *, max_error_increase=0.005, method="construct",
             shared=False, X_train=None, y_train=None, refit_intercept_on_train=None,
             max_n_vectors=None, n_init=5, max_iter=200, random_state=None, verbose=False):
    """The smallest reduced machine whose validation error stays within a tolerance.

    Parameters
    ----------
    model : fitted classifier or KernelExpansion
        A binary ``SVC``, a ``OneVsRestClassifier(SVC)``, a fitted sparsekm classifier
        with ``expansion_`` (``ReducedSetClassifier``, ``SLMC``, ``ApproxSVC``,
        ``ApproxKFD``, ...), or a ``KernelExpansion`` (binary: sign; multi-output:
        argmax over one output per class of ``np.unique(y_val)``). A multi-class
        (one-vs-one) ``SVC`` is handed to :class:`~sparsekm.models.ReducedSetClassifier`
        at every size (re-fit search), whatever that supports.
    X_val : array-like of shape (n_samples, n_features)
    y_val : array-like of shape (n_samples,)
        Validation data: not used for fitting anything, only to measure errors.
    max_error_increase : float >= 0, default=0.005
        Allowed increase of the validation error (a fraction: 0.005 is half a
        percentage point) over the full machine's.
    method : str, default="construct"
        A :class:`~sparsekm.models.ReducedSetClassifier` method. ``"construct"``
        searches on the prefixes of one construction (cheap); the others re-fit at
        every size walked.
    shared : bool, default=False
        Multi-class: one set of vectors shared by all classes (the budget is then
        ``n_vectors``; otherwise about ``n_classes * n_vectors``).
    X_train, y_train : array-like, optional
        Training data for re-fitting the thresholds of each reduced machine (the
        papers' optimal ``b~``). Without them the machine's own thresholds are kept
        (validation data never sets a parameter).
    refit_intercept_on_train : bool, default=None
        ``None``: re-fit when training data are given.
    max_n_vectors : int, default=None
        Largest ``n_vectors`` searched (default: the full machine's size, where the
        reduced machine is an exact copy).
    n_init, max_iter : int
        Construction settings (see :func:`~sparsekm.reduced_set.construct`).
    random_state : int, RandomState instance or None, default=None
    verbose : bool, default=False
        Print each size walked.

    Returns
    -------
    ReducedSetClassifier
        Fitted; ``n_vectors_`` is its budget and ``compress_curve_`` the curve
        walked, a plain dictionary (saved with the model by :func:`sparsekm.save`;
        ``CompressCurve(**model.compress_curve_)`` gives the :class:`CompressCurve`;
        plot it with :func:`sparsekm.plotting.compress_curve`).

    Notes
    -----
    The returned model is the smallest of the sizes walked whose validation error is
    at most ``full_error + max_error_increase``; every smaller size walked failed.
    The error need not be monotone in the size, so a smaller size that was not
    walked might also pass: the search walks ``1, 2, 4, ...`` up to the first
    passing size ``2^j`` and bisects between ``2^(j-1)`` and ``2^j``.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklearn.svm import SVC
    >>> import sparsekm
    >>> X, y = make_moons(400, noise=0.2, random_state=0)
    >>> svc = SVC(C=10).fit(X[:200], y[:200])
    >>> small = sparsekm.compress(svc, X[200:], y[200:], max_error_increase=0.01,
    ...                           n_init=2, max_iter=50, random_state=0)
    >>> bool(small.n_vectors_ < svc.support_.size)
    True
    >>> c = small.compress_curve_
    >>> bool(c["error"][c["chosen"]] <= c["target_error"])
    True
    """
    owner = "compress"
    tol = check_scalar(max_error_increase, "max_error_increase", owner, lower=0.0)
    if method not in METHODS:
        raise ValueError(f"The 'method' parameter of {owner} must be one of {list(METHODS)}. "
                         f"Got {method!r} instead.")
    if shared not in (True, False):
        raise ValueError(f"The 'shared' parameter of {owner} must be a bool. Got {shared!r}.")
    X_val = check_array(X_val, "X_val")
    y_val = np.asarray(y_val)
    if y_val.ndim != 1 or y_val.shape[0] != X_val.shape[0]:
        raise ValueError(f"y_val must be 1-D with one label per row of X_val ({X_val.shape[0]}); "
                         f"got shape {y_val.shape}.")
    if y_val.dtype.kind in "fc" and not np.isfinite(y_val).all():
        raise ValueError("y_val contains NaN or infinity; class labels must be finite.")
    if (X_train is None) != (y_train is None):
        raise ValueError("Pass both X_train and y_train, or neither.")
    if X_train is not None:
        X_train = check_array(X_train, "X_train")
        y_train = np.asarray(y_train)
        if y_train.shape != (X_train.shape[0],):
            raise ValueError(f"y_train must be 1-D with one label per row of X_train "
                             f"({X_train.shape[0]}); got shape {y_train.shape}.")
    refit = (X_train is not None) if refit_intercept_on_train is None else \
        bool(refit_intercept_on_train)
    if refit and X_train is None:
        raise ValueError("refit_intercept_on_train=True needs X_train and y_train.")
    psi, classes, predict_full = _full_machine(model, y_val, owner)
    n_features = X_val.shape[1]
    if psi is not None and psi.n_features != n_features:
        raise ValueError(f"X_val has {n_features} features, but the model is expecting "
                         f"{psi.n_features} features as input.")
    unknown = np.setdiff1d(np.unique(y_val), classes)
    if unknown.size:
        raise ValueError(f"y_val holds labels the model does not know: {unknown[:5].tolist()}.")
    if max_n_vectors is not None:
        max_n_vectors = check_scalar(max_n_vectors, "max_n_vectors", owner, kind="int", lower=1)
    rng = check_random_state(random_state)
    seed = int(rng.randint(np.iinfo(np.int32).max))
    params = dict(method=method, shared=shared, refit_intercept=refit, n_init=n_init,
                  max_iter=max_iter, random_state=seed)

    if predict_full is None:
        full_pred = _predict_expansion(psi, classes, X_val)
    else:
        full_pred = predict_full(X_val)
    full_error = float(np.mean(full_pred != y_val))
    curve = CompressCurve(full_error=full_error, target_error=full_error + tol)

    multi = psi is not None and psi.is_multioutput and psi.n_outputs > 1
    if psi is not None:
        parts = _output_parts(psi, shared)
        n_full = max(p.compress().n_terms for p in parts)
        curve.full_budget = int(psi.compress().n_terms)
    else:
        n_full = int(np.unique(model.support_vectors_, axis=0).shape[0])
        curve.full_budget = n_full
    n_cap = n_full if max_n_vectors is None else min(max_n_vectors, n_full)

    def finish_threshold(expansion):
        if not refit:
            return expansion
        if multi:
            return refit_intercept(expansion, X_train, y_train, classes=classes)
        return refit_intercept(expansion, X_train, y_train == classes[1])

    fits = {}
    prefix_state = {"n_run": 0, "prefix": None}
    use_prefix = method == "construct" and psi is not None
    curve.search = "prefix" if use_prefix else "refit"

    def evaluate(n):
        if n in fits:
            return fits[n]
        if use_prefix:
            if n > prefix_state["n_run"] and n < n_full:
                n_run = min(max(4 * n, 16), n_cap, n_full - 1)
                prefix_state["prefix"] = construct_prefixes(
                    psi, n_run, shared=shared, n_init=n_init, max_iter=max_iter,
                    random_state=seed)
                prefix_state["n_run"] = n_run
            expansion = psi.copy() if n >= n_full else prefix_state["prefix"](n)
            n_support = curve.full_budget
            rsc = _shell(finish_threshold(expansion), classes, n, n_features, params, n_support)
        elif psi is not None:
            from .reduced_set import reduce_expansion

            res = reduce_expansion(psi, n, method=method, shared=shared, n_init=n_init,
                                   max_iter=max_iter, random_state=seed)
            rsc = _shell(finish_threshold(res.expansion), classes, n, n_features, params,
                         curve.full_budget)
        else:
            Xf, yf = (X_train, y_train) if X_train is not None else (X_val, y_val)
            rsc = ReducedSetClassifier(estimator=model, n_vectors=n, **params).fit(Xf, yf)
        err = float(np.mean(rsc.predict(X_val) != y_val))
        fits[n] = (rsc, err)
        curve.n_vectors.append(int(n))
        curve.budget.append(int(rsc.n_vectors_))
        curve.error.append(err)
        if verbose:
            print(f"compress: n_vectors={n:5d}  budget={rsc.n_vectors_:6d}  "
                  f"validation error={100 * err:.2f} % (target <= "
                  f"{100 * curve.target_error:.2f} %)")
        return fits[n]

    def passes(n):
        return evaluate(n)[1] <= curve.target_error + 1e-12

    # geometric grid, then bisection
    lo, hi, n = 0, None, 1
    while True:
        n = min(n, n_cap)
        if passes(n):
            hi = n
            break
        lo = n
        if n >= n_cap:
            break
        n *= 2
    if hi is None:
        curve.met = False
        best = n_cap
        warnings.warn(
            f"compress: no size up to n_vectors={n_cap} reached the validation error "
            f"{100 * curve.target_error:.2f} %; returning the largest size walked.",
            UserWarning, stacklevel=2)
    else:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if passes(mid):
                hi = mid
            else:
                lo = mid
        best = hi
        curve.met = True
    rsc = fits[best][0]
    # the smallest passing size walked (the curve need not be monotone)
    passing = [m for m, (_, e) in fits.items() if e <= curve.target_error + 1e-12]
    if passing:
        best = min(passing, key=lambda m: (fits[m][0].n_vectors_, m))
        rsc = fits[best][0]
    curve.chosen = curve.n_vectors.index(best)
    rsc.compress_curve_ = curve.as_dict()
    return rsc

