"""Compress a fitted regressor, one-class SVM or kernel PCA (issue 36).

:func:`compress_any` is what :func:`sparsekm.compress` runs for the models that are not
classifiers:
``KernelRidge``, ``GaussianProcessRegressor`` (its predictive mean, and its variance in
the projected-process form), ``SVR``/``NuSVR``, ``OneClassSVM`` and scikit-learn's
``KernelPCA`` (its ``transform``). At a budget of ``n_vectors`` kernel evaluations per
prediction it builds these candidates and keeps the best on validation data:

``construct``, ``construct+refine``
    Reduced-set construction of the model's expansion (eq. 74-77 of *Input space vs.
    feature space*; one shared set for the components of a kernel PCA, section 5 of
    *Fast approximation*) and the joint refine of vectors and coefficients (phase 2),
    started from the ``construct`` candidate's set when both are tried (the set
    ``construct(refine=True)`` would start from: it is built once).
``refit``
    The vectors of the better reduced set, their outer weights re-fitted on the
    training data: ridge on the features ``K(X, Z)`` with the RKHS penalty (the subset
    of regressors / projected-process mean, :func:`sparsekm.approx.ridge_on_landmarks`),
    ``lam`` chosen on validation; for a Gaussian process the projected-process mean
    with the GP's own noise. Targets: ``y_train`` (a regressor), else the Gaussian
    process's own training targets, else the original model's outputs on the training
    rows (a one-class SVM or a kernel PCA: the original is distilled).
``nystroem-uniform``, ``nystroem-kmeans``
    The peer its users would pick: Nyström landmarks (a uniform subset of the training
    rows, or k-means centres) and ridge regression on their features, ``lam`` chosen
    on validation (scikit-learn's ``Nystroem`` + ``Ridge``, written as an expansion).

Metrics: RMSE and R² against ``y_val`` and the agreement (R² of the candidate's
predictions against the original's) for a regressor; the fraction of inlier/outlier
calls equal to the original's and the AUC of the candidate's scores against those calls
for a one-class SVM; the relative projection error
``||T - T_orig||_F^2 / ||T_orig - mean||_F^2`` for a kernel PCA. ``y_val`` is ``None``
for the unsupervised models: the validation rows alone judge them. Test data never
reach a fit or a choice: everything chosen here is chosen on ``X_val``.

**The work bound** (``method="auto"``; a method named explicitly runs unbounded). The
reduced-set chain (``construct``, then its ``refine``) is bounded by counts, never by a
clock, with the classifier search's constants (``_candidates.WORK_RATIO``,
``WORK_FLOOR``): the whole call may do about ``L = max(WORK_RATIO * P, WORK_FLOOR)``
estimated kernel evaluations, ``P`` the two Nyström peers' estimate (:func:`peer_work`).
The fixed part ``F`` (the peers, the refit's features, the original's and the
candidates' validation outputs) is done in any case; the chain gets ``R = max(L - F,
WORK_FLOOR)`` (:func:`work_plan`). The construction (estimate ``n_init * max_iter * m *
(N + m)``) and the refine (``m * (N + m)`` per L-BFGS iteration, ``REFINE_MAX_ITER`` of
them) are made cheaper until both fit ``R``: fewer restarts first, down to one, so as to
leave the refine its full iterations (the refit, which the large cells choose, is as good
from one start; at small budgets the refine moves its vectors where the refit needs
them); then fewer fixed-point iterations per vector for the one start (refused below
:data:`CONSTRUCT_MIN_ITER`); the refine gets what is left, its iterations cut in
proportion, refused when that leaves less than ``SCREEN_ITER_FRACTION`` of its
``REFINE_MAX_ITER`` (it could not run past a screening). Every cut and refusal is in its
report row's ``reason``; the report's ``work`` lists each budget's numbers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..approx.ridge import nystroem_landmarks, ridge_on_landmarks
from ..interop import expansion_from_estimator
from ..models.expansion_models import (
    ExpansionOutlierDetector,
    ExpansionRegressor,
    ExpansionTransformer,
)
from ..reduced_set.construction import refine as refine_phase2
from ..reduced_set.reduction import reduce_expansion
from ..utils.validation import check_array, check_scalar
from ._candidates import (
    KMEANS_PASSES,
    REFINE_MAX_ITER,
    SCREEN_ITER_FRACTION,
    WORK_FLOOR,
    WORK_RATIO,
)
from ._report import CompressReport

__all__ = ["compress_any", "model_kind", "is_any_model", "ANY_METHODS", "LAM_GRID",
           "DEFAULT_TOLERANCE", "CONSTRUCT_MIN_ITER", "KMEANS_PASSES", "WorkPlan",
           "peer_work", "work_plan"]

#: Candidates tried by ``method="auto"``, in order.
ANY_METHODS = ("construct", "construct+refine", "refit", "nystroem-uniform", "nystroem-kmeans")
#: ``max_error_increase`` when neither it nor ``n_vectors`` is given: 1 % more RMSE (a
#: regressor), one point more disagreement or projection error (the others).
DEFAULT_TOLERANCE = 0.01
#: Ridge parameters tried on validation (plus the original's own, where it has one).
LAM_GRID = tuple(float(v) for v in 10.0 ** np.arange(-6, 3))
#: The bounded construction is refused when its share leaves fewer fixed-point iterations
#: per vector than this (one start). Measured on the large cells (issue 36): 15 to 99
#: iterations gave refit vectors as good as the default 5 starts x 200.
CONSTRUCT_MIN_ITER = 10


def peer_work(n_fit, n_val, m):
    """Estimated kernel evaluations of the two Nyström peers at ``m`` landmarks.

    ``n_fit * m * (1 + KMEANS_PASSES)`` (k-means landmarks, then the features
    ``K(X_fit, Z)``) plus ``n_fit * m`` (the uniform subset's features) plus both peers'
    validation features ``2 * n_val * m``; 0 without training rows (no peer runs).
    """
    if not n_fit:
        return 0.0
    return float(m) * ((2.0 + KMEANS_PASSES) * n_fit + 2.0 * n_val)


@dataclass(frozen=True)
class WorkPlan:
    """The work bound of one budget (see the module doc): counts only.

    Attributes
    ----------
    peer, limit, fixed, chain : float
        ``P``, ``L = max(WORK_RATIO * P, WORK_FLOOR)``, the fixed part ``F`` and the
        reduced-set chain's share ``R = max(L - F, WORK_FLOOR)``.
    n_init, max_iter : int
        The construction's settings (0: refused).
    construct_work : float
        Its estimate ``n_init * max_iter * m * (N + m)``.
    refine_iter : int
        The refine's L-BFGS iterations (0: refused); ``refine_work`` its estimate.
    construct_note, refine_note : str
        The cut or refusal (``""``: within the bound as asked).
    """

    peer: float
    limit: float
    fixed: float
    chain: float
    n_init: int
    max_iter: int
    construct_work: float
    refine_iter: int
    refine_work: float
    construct_note: str
    refine_note: str

    def as_dict(self, m):
        return {"budget": int(m), **{k: getattr(self, k) for k in (
            "peer", "limit", "fixed", "chain", "n_init", "max_iter", "construct_work",
            "refine_iter", "refine_work")}}


def work_plan(n_terms, n_fit, n_val, m, n_init, max_iter):
    """:class:`WorkPlan` of the reduced-set chain at budget ``m`` (see the module doc).

    ``n_terms``: the original's terms ``N``; ``n_fit``, ``n_val``: training rows of the
    refit and the peers (0: none) and validation rows.
    """
    P = peer_work(n_fit, n_val, m)
    L = max(WORK_RATIO * P, WORK_FLOOR)
    refit = (n_fit + n_val) * m if n_fit else 0.0
    F = P + n_val * n_terms + refit + 2.0 * n_val * m
    R = max(L - F, WORK_FLOOR)
    per_pass = float(m) * (n_terms + m)  # one sweep over [X; Z] for one start / iteration
    where = (f"the chain's share R = max(L - F, {WORK_FLOOR:.3g}) = {R:.3g} kernel "
             f"evaluations (L = max({WORK_RATIO:g} x the peers' {P:.3g}, {WORK_FLOOR:.3g}), "
             f"fixed work F = {F:.3g})")
    ni, mi, c_note = n_init, max_iter, ""
    if (ni * mi + REFINE_MAX_ITER) * per_pass > R:
        # restarts first (down to one), to leave the refine its full iterations; then the
        # fixed-point iterations of the one start
        ni = max(1, min(n_init, int((R / per_pass - REFINE_MAX_ITER) // max_iter)))
        mi = min(max_iter, int(R // (ni * per_pass)))
        if mi < CONSTRUCT_MIN_ITER:
            c_note = (f"work bound: one start of {CONSTRUCT_MIN_ITER} fixed-point iterations "
                      f"per vector ({CONSTRUCT_MIN_ITER * per_pass:.3g}) exceeds {where} "
                      "(name it in 'method' to run it unbounded)")
            ni = mi = 0
        elif (ni, mi) != (n_init, max_iter):
            c_note = (f"work bound: n_init {n_init} -> {ni}, max_iter {max_iter} -> {mi} "
                      f"(estimate {ni * mi * per_pass:.3g} <= {where})")
    c_work = ni * mi * per_pass
    it = min(REFINE_MAX_ITER, int((R - c_work) // per_pass)) if ni else 0
    r_note = ""
    if ni == 0:
        r_note = "work bound: its construction is refused"
    elif it < SCREEN_ITER_FRACTION * REFINE_MAX_ITER:
        r_note = (f"work bound: after the construction's {c_work:.3g}, {where} leaves "
                  f"{max(it, 0)} of its {REFINE_MAX_ITER} iterations, less than "
                  f"{100 * SCREEN_ITER_FRACTION:.0f} % (name it in 'method' to run it "
                  "unbounded)")
        it = 0
    elif it < REFINE_MAX_ITER:
        r_note = (f"work bound: {it} of its {REFINE_MAX_ITER} iterations (estimate "
                  f"{it * per_pass:.3g}; with the construction's {c_work:.3g} <= {where})")
    return WorkPlan(P, L, F, R, ni, mi, c_work, it, it * per_pass, c_note, r_note)


def model_kind(model):
    """``"regressor"``, ``"one-class"`` or ``"kpca"`` for a model :func:`compress_any` takes."""
    from sklearn.decomposition import KernelPCA
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.svm import SVR, NuSVR, OneClassSVM

    from ..models import KernelPCA as OwnKernelPCA
    from ..models import ReducedSetRegressor

    if isinstance(model, (KernelRidge, GaussianProcessRegressor, SVR, NuSVR,
                          ExpansionRegressor, ReducedSetRegressor)):
        return "regressor"
    if isinstance(model, (OneClassSVM, ExpansionOutlierDetector)):
        return "one-class"
    if isinstance(model, (KernelPCA, OwnKernelPCA, ExpansionTransformer)):
        return "kpca"
    raise TypeError(
        f"compress takes KernelRidge, GaussianProcessRegressor, SVR, NuSVR, OneClassSVM and "
        f"sklearn.decomposition.KernelPCA (and classifiers); got {type(model).__name__}.")


def is_any_model(model):
    """Whether :func:`compress_any` (not the classifier search) takes ``model``."""
    try:
        model_kind(model)
    except TypeError:
        return False
    return True


def _outputs(model, kind, X):
    if kind == "regressor":
        return np.asarray(model.predict(X), dtype=np.float64)
    if kind == "one-class":
        return np.asarray(model.decision_function(X), dtype=np.float64)
    return np.asarray(model.transform(X), dtype=np.float64)


def _auc(scores, labels):
    """Area under the ROC curve of ``scores`` for the boolean ``labels`` (NaN if one class)."""
    pos, neg = int(labels.sum()), int((~labels).sum())
    if pos == 0 or neg == 0:
        return float("nan")
    from scipy.stats import rankdata

    ranks = rankdata(scores)
    return float((ranks[labels].sum() - pos * (pos + 1) / 2) / (pos * neg))


def _r2(pred, ref):
    ss = float(((ref - ref.mean(axis=0)) ** 2).sum())
    return float("nan") if ss == 0 else 1.0 - float(((pred - ref) ** 2).sum()) / ss


def _metrics(kind, out, orig, y_val):
    """``(val_error, agreement, extra)`` of a candidate's validation outputs ``out``."""
    if kind == "regressor":
        agree = _r2(out, orig)
        extra = {"agreement_rmse": float(np.sqrt(np.mean((out - orig) ** 2)))}
        if y_val is None:  # judged against the original's predictions
            return extra["agreement_rmse"], agree, extra
        rmse = float(np.sqrt(np.mean((out - y_val) ** 2)))
        extra.update(rmse=rmse, r2=_r2(out, y_val))
        return rmse, agree, extra
    if kind == "one-class":
        calls, ref = out > 0, orig > 0
        agree = float(np.mean(calls == ref))
        return 1.0 - agree, agree, {"auc": _auc(out, ref)}
    ss = float(((orig - orig.mean(axis=0)) ** 2).sum())
    err = float(((out - orig) ** 2).sum()) / ss if ss > 0 else float("nan")
    return err, 1.0 - err, {"projection_error": err}


def _shell(kind, expansion, gpr=None):
    if kind == "regressor":
        if gpr is not None:
            return ExpansionRegressor.from_gaussian_process(gpr, expansion=expansion)
        return ExpansionRegressor.from_expansion(expansion)
    if kind == "one-class":
        return ExpansionOutlierDetector.from_expansion(expansion)
    return ExpansionTransformer.from_expansion(expansion)


def _training(model, kind, X_train, y_train):
    """``(X, targets, note)`` for the refit and the peers, or ``(None, None, reason)``."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.kernel_ridge import KernelRidge

    if X_train is None:
        if isinstance(model, GaussianProcessRegressor):
            X = np.asarray(model.X_train_, dtype=np.float64)
            y = (np.asarray(model.y_train_, dtype=np.float64).reshape(X.shape[0])
                 * float(np.ravel(model._y_train_std)[0]) + float(np.ravel(model._y_train_mean)[0]))
            return X, y, "training data: the Gaussian process's own (X_train_, y_train_)"
        if isinstance(model, KernelRidge) and isinstance(getattr(model, "X_fit_", None),
                                                         np.ndarray):
            X = np.asarray(model.X_fit_, dtype=np.float64)
            return X, _outputs(model, kind, X), ("training rows: the KernelRidge's own X_fit_, "
                                                 "targets its predictions there (no y_train)")
        return None, None, "needs the training data (X_train)"
    X = check_array(X_train, "X_train")
    if kind == "regressor" and y_train is not None:
        y = np.asarray(y_train, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0] or not np.isfinite(y).all():
            raise ValueError(f"y_train must be finite with one value per row of X_train; got "
                             f"shape {np.shape(y_train)} for {X.shape[0]} rows.")
        return X, y, None
    return X, _outputs(model, kind, X), "targets: the original model's outputs on X_train"


def compress_any(model, X_val, y_val=None, *, n_vectors=None, method="auto", X_train=None,
                 y_train=None, random_state=None, n_init=5, max_iter=200, lam_grid=LAM_GRID,
                 timing=False, **options):
    """The best small model of a regressor, one-class SVM or kernel PCA at a budget.

    Parameters
    ----------
    model : fitted KernelRidge, GaussianProcessRegressor, SVR, NuSVR, OneClassSVM or
        sklearn.decomposition.KernelPCA
    X_val : array-like of shape (n_val, n_features)
        Validation rows: every choice (candidate, ``lam``) is made on them.
    y_val : array-like of shape (n_val,), optional
        Regressors: the targets (without them the candidates are judged by their
        agreement with the original's predictions). ``None`` for the unsupervised models.
    n_vectors : int, optional
        Budget: kernel evaluations per prediction.
    max_error_increase : float >= 0, optional
        Tolerance (instead of ``n_vectors``): the smallest budget of 2, 4, 8, ... whose
        best candidate's validation score is at most the original's times ``1 + tol``
        (RMSE of a regressor) or the original's plus ``tol`` (disagreement, projection
        error). Default :data:`DEFAULT_TOLERANCE` when neither is given.
    method : "auto", str or list of str
        ``"auto"``: :data:`ANY_METHODS`.
    X_train, y_train : array-like, optional
        Training data of the refit and the peers (a Gaussian process and a
        ``KernelRidge`` carry their own training rows).
    random_state : int or None
    n_init, max_iter : int
        Reduced-set construction settings (with ``method="auto"`` cut by the work bound
        where they exceed it: see Notes).
    lam_grid : sequence of float
        Ridge parameters tried on validation.
    timing : bool, default=False
        Record each candidate's build seconds in the report (else NaN: no clock is read).
    **options
        The classifier search's other options: ``time_limit``,
        ``cv`` (no validation data), ``screen``, ``n_jobs`` are refused here with the
        reason when given a non-default value; ``shared`` and ``verbose`` are ignored.

    Returns
    -------
    ExpansionRegressor, ExpansionOutlierDetector or ExpansionTransformer
        With ``compress_report_``: ``rows`` (one per candidate: ``method``, ``variant``,
        ``budget``, ``n_vectors``, ``val_error`` (the selection criterion: RMSE,
        1 - agreement, projection error), ``agreement``, ``seconds``, ``status``,
        ``reason`` and the metrics ``rmse``, ``r2``, ``auc``, ``projection_error`` that
        apply), ``chosen``, ``full_error``, ``full_n_vectors``, ``metric``, ``messages``
        and, with ``method="auto"``, ``work`` (each budget's :class:`WorkPlan` numbers).

    Notes
    -----
    With ``method="auto"`` the reduced-set chain is bounded by counts (no clock is read):
    the whole call may do about ``L = max(WORK_RATIO * P, WORK_FLOOR)`` estimated kernel
    evaluations (``P``: the Nyström peers' estimate, :func:`peer_work`); what is left
    after the fixed work ``F`` (peers, refit, validation outputs), ``R = max(L - F,
    WORK_FLOOR)``, goes to the construction and its refine: fewer restarts first (down
    to one, leaving the refine its full iterations), then fewer fixed-point iterations
    per vector (refused below :data:`CONSTRUCT_MIN_ITER`), the rest to the refine
    (iterations cut in proportion, refused below ``SCREEN_ITER_FRACTION`` of
    ``REFINE_MAX_ITER``): :func:`work_plan`. Each cut or
    refusal is in its row's ``reason``. A method named explicitly runs unbounded.
    """
    owner = "compress"
    kind = model_kind(model)
    tol = options.pop("max_error_increase", None)
    _refuse_options(kind, options)
    if n_vectors is not None and tol is not None:
        raise ValueError(f"{owner}: give a budget (n_vectors) or a tolerance "
                         "(max_error_increase), not both.")
    if n_vectors is None:
        tol = DEFAULT_TOLERANCE if tol is None else check_scalar(
            tol, "max_error_increase", owner, lower=0.0)
    if X_val is None:
        raise ValueError(f"compress of a {kind} needs validation rows X_val (choices by "
                         "cross-validation inside X_train are implemented for classifiers only).")
    m = None if n_vectors is None else check_scalar(n_vectors, "n_vectors", owner, kind="int",
                                                    lower=1)
    methods = list(ANY_METHODS) if method == "auto" else (
        [method] if isinstance(method, str) else list(method))
    unknown = [mm for mm in methods if mm not in ANY_METHODS]
    if unknown:
        raise ValueError(f"Unknown method(s) {unknown} for a {kind}; known: {list(ANY_METHODS)}.")
    if kind != "regressor" and y_val is not None:
        raise ValueError(f"y_val must be None for a {kind}: the validation rows alone judge "
                         "the candidates (against the original's outputs).")
    X_val = check_array(X_val, "X_val")
    if y_val is not None:
        y_val = np.asarray(y_val, dtype=np.float64).reshape(-1)
        if y_val.shape[0] != X_val.shape[0] or not np.isfinite(y_val).all():
            raise ValueError("y_val must be finite with one value per row of X_val.")
    from sklearn.gaussian_process import GaussianProcessRegressor

    gpr = model if isinstance(model, GaussianProcessRegressor) else None
    own = getattr(model, "expansions_", None)  # sparsekm's KernelPCA: eq. 36 with centring
    psi = own if own is not None else expansion_from_estimator(model)
    # a regressor's original through its expansion: the engine's row blocks bound the
    # memory (scikit-learn's predict holds K(X_val, X_train) whole)
    orig_val = (np.asarray(psi.decision_function(X_val), dtype=np.float64)
                if kind == "regressor" else _outputs(model, kind, X_val))
    full_error, _, full_extra = _metrics(kind, orig_val, orig_val, y_val)
    seed = 0 if random_state is None else int(np.random.default_rng(random_state).integers(2**31))
    X_fit, t_fit, note = _training(model, kind, X_train, y_train)
    messages = [note] if note and X_fit is not None else []
    # validation targets of the ridge grids: y_val, else the original's outputs
    t_val = y_val if y_val is not None else orig_val
    grid = sorted(set(float(v) for v in lam_grid) | _own_lams(model))
    shared = psi.is_multioutput

    def ridge(Z):
        res = ridge_on_landmarks(psi.kernel, Z, X_fit, t_fit, lam=grid, X_val=X_val,
                                 y_val=t_val, fit_intercept=True)
        return res.expansion, f"lam={res.lam:g}"

    def construct(m, name="construct", plan=None):
        ni, mi = (n_init, max_iter) if plan is None else (plan.n_init, plan.max_iter)
        return reduce_expansion(psi, m, method=name, shared=shared, n_init=ni,
                                max_iter=mi, random_state=seed).expansion

    bounded = method == "auto"  # a method named explicitly runs unbounded
    n_fit = 0 if X_fit is None else X_fit.shape[0]
    work = []  # each bounded budget's WorkPlan numbers (the report's "work")

    def run_budget(m):
        """Every candidate at budget ``m``: ``(rows, models)``."""
        rows, models, reduced = [], [], {}
        plan = None
        if bounded and m < psi.n_terms:
            plan = work_plan(psi.n_terms, n_fit, X_val.shape[0], m, n_init, max_iter)
            work.append(plan.as_dict(m))
        notes = {"construct": plan.construct_note if plan else "",
                 "construct+refine": plan.refine_note if plan else ""}

        def add(name, build):
            row = {"method": name, "variant": "", "budget": m, "n_vectors": 0,
                   "val_error": float("nan"), "agreement": float("nan"),
                   "seconds": float("nan"), "status": "ok", "reason": notes.get(name, "")}
            t0 = time.perf_counter() if timing else None
            try:
                out = build()
            except (ValueError, TypeError, np.linalg.LinAlgError) as exc:
                row.update(status="failed", reason=str(exc)[:200])
                out = None
            if timing:
                row["seconds"] = time.perf_counter() - t0
            if out is not None:
                est, row["variant"] = out
                row["n_vectors"] = int(est.expansion_.n_terms)
                err, agree, extra = _metrics(kind, _outputs(est, kind, X_val), orig_val, y_val)
                row.update(val_error=err, agreement=agree, **extra)
            rows.append(row)
            models.append(None if out is None else out[0])

        if m >= psi.n_terms:
            add("original", lambda: (_shell(kind, psi, gpr),
                                     f"{psi.n_terms} terms within the budget"))
        for name in ("construct", "construct+refine"):
            if name in methods and m < psi.n_terms:
                if plan is not None and (plan.n_init == 0 if name == "construct"
                                         else plan.refine_iter == 0):
                    rows.append(_refused(name, m, notes[name]))
                    models.append(None)
                    continue

                def build(name=name):
                    if name == "construct+refine" and "construct" in reduced:
                        # phase 2 from the construct row's set: construct(refine=True)
                        # starts from that same set (same seed), so it is not built twice
                        it = REFINE_MAX_ITER if plan is None else plan.refine_iter
                        reduced[name] = refine_phase2(psi, reduced["construct"],
                                                      max_iter=it).expansion
                        return _shell(kind, reduced[name], gpr), "refine of the construct set"
                    reduced[name] = construct(m, name, plan)
                    return _shell(kind, reduced[name], gpr), ""
                add(name, build)

        def build_refit():
            done = [r for r in rows if r["method"] in reduced and r["status"] == "ok"]
            if done:
                src = min(done, key=lambda r: r["val_error"])["method"]
                Z = reduced[src].vectors
            elif m >= psi.n_terms:
                src, Z = "all", psi.vectors
            elif plan is not None:  # the bounded construction failed
                raise ValueError("no reduced set to take the vectors from (construct failed)")
            else:  # refit asked for alone: its vectors from a construction
                src, Z = "construct", construct(m).vectors
            if gpr is not None and _has_variance_form(gpr):
                est = ExpansionRegressor.from_gaussian_process(gpr, Z)
                return est, f"{src} vectors, projected-process mean (lam={est.alpha_:g})"
            expansion, text = ridge(Z)
            return _shell(kind, expansion, gpr), f"{src} vectors, {text}"

        def build_peer(how):
            Z = nystroem_landmarks(X_fit, min(m, X_fit.shape[0]), method=how, random_state=seed)
            expansion, text = ridge(Z)
            return _shell(kind, expansion, gpr), text

        for name, build in (("refit", build_refit),
                            ("nystroem-uniform", lambda: build_peer("uniform")),
                            ("nystroem-kmeans", lambda: build_peer("kmeans"))):
            if name not in methods:
                continue
            if X_fit is None or (name == "refit" and plan is not None and not plan.n_init):
                rows.append(_refused(name, m, note if X_fit is None else
                                     "work bound: the construction of its vectors is refused"))
                models.append(None)
            else:
                add(name, build)
        return rows, models

    def best_of(rows):
        ok = [i for i, r in enumerate(rows) if r["status"] == "ok"
              and np.isfinite(r["val_error"])]
        if not ok:
            return None
        if kind == "one-class":  # agreement first, then the AUC
            return min(ok, key=lambda i: (rows[i]["val_error"], -_nan_low(rows[i].get("auc"))))
        return min(ok, key=lambda i: rows[i]["val_error"])

    report = {"kind": kind, "selection": "validation", "full_error": float(full_error),
              "full_n_vectors": int(psi.n_terms), "messages": messages,
              **{f"full_{k}": v for k, v in full_extra.items()}}
    if m is not None:
        rows, models = run_budget(m)
        chosen = best_of(rows)
        report.update(mode="budget", budget=m)
    else:
        # tolerance: the smallest budget of 2, 4, 8, ... whose best candidate meets the target
        target = full_error * (1.0 + tol) if kind == "regressor" else full_error + tol
        report.update(mode="tolerance", target_error=float(target))
        rows, models, chosen = [], [], None
        b = 2
        while chosen is None:
            b = min(b, psi.n_terms)
            rows_b, models_b = run_budget(b)
            i = best_of(rows_b)
            if i is not None and (rows_b[i]["val_error"] <= target or b >= psi.n_terms):
                chosen = len(rows) + i
                met = rows_b[i]["val_error"] <= target
            rows += rows_b
            models += models_b
            b *= 2
        report.update(budget=int(rows[chosen]["budget"]), met=bool(met))
        if not met:
            messages.append(f"no budget met the target {target:.4g}: the best at the full "
                            "size is returned")
    if chosen is None:
        raise ValueError("compress: no candidate could be built: " + "; ".join(
            f"{r['method']}: {r['reason']}" for r in rows))
    rows[chosen]["status"] = "chosen"
    best = models[chosen]
    metric = {"regressor": "RMSE" if y_val is not None else "RMSE against the original",
              "one-class": "1 - agreement of inlier calls", "kpca": "relative projection error"}
    if work:
        report["work"] = work
    best.compress_report_ = CompressReport({**report, "metric": metric[kind],
                                            "chosen": int(chosen), "rows": rows})
    return best


_DEFAULTS = {"max_error_increase": None, "time_limit": None, "cv": 3, "screen": True,
             "n_jobs": None}
_IGNORED = ("shared", "verbose")


def _refuse_options(kind, options):
    for name, value in options.items():
        if name in _IGNORED:
            continue
        if name not in _DEFAULTS:
            raise TypeError(f"compress() got an unexpected keyword argument {name!r}.")
        if value is not None and value != _DEFAULTS[name]:
            raise ValueError(f"compress: {name}={value!r} is implemented for classifiers "
                             f"only; a {kind} is compressed at a budget, chosen on X_val.")


def _has_variance_form(gpr):
    """Whether the GP's projected-process form applies (one noise level, no constant term)."""
    from ..interop import kernel_from_sklearn_gp

    return np.size(gpr.alpha) == 1 and kernel_from_sklearn_gp(gpr.kernel_).constant == 0.0


def _nan_low(v):
    return -np.inf if v is None or not np.isfinite(v) else float(v)


def _refused(name, m, reason):
    return {"method": name, "variant": "", "budget": m, "n_vectors": 0,
            "val_error": float("nan"), "agreement": float("nan"), "seconds": float("nan"),
            "status": "refused", "reason": reason}


def _own_lams(model):
    """The original's own ridge parameter, where it has one (KernelRidge's alpha)."""
    from sklearn.kernel_ridge import KernelRidge

    if isinstance(model, KernelRidge) and np.ndim(model.alpha) == 0 and model.alpha > 0:
        return {float(model.alpha)}
    return set()

