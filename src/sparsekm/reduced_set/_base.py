"""Shared pieces of the reduced-set methods: Proposition 8, objectives, thresholds.

Notation (*Input space vs. feature space*, section V): the expansion to approximate
is ``Psi = sum_i alpha_i Phi(x_i)`` (vectors ``X``, coefficients ``alpha``); the
reduced set is ``Psi' = sum_j beta_j Phi(z_j)`` (vectors ``Z``, coefficients
``beta``). Multi-output expansions hold one column of ``alpha`` per output
(``A``, shape (n_terms, n_outputs)) and, for a shared reduced set, one column of
``beta`` per output (``B``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg

from ..expansion import KernelExpansion
from ..utils.validation import check_array, check_labels, check_same_features

__all__ = [
    "ReducedSetResult",
    "ReducedSetWarning",
    "optimal_coefficients",
    "approximation_error",
    "refit_intercept",
    "optimal_threshold",
]

#: Reciprocal condition number of ``K^z`` below which Proposition 8 switches from
#: the Cholesky solve to the pseudo-inverse.
RCOND = 1e-10


class ReducedSetWarning(UserWarning):
    """Numerical trouble in a reduced-set computation (e.g. a singular ``K^z``)."""


@dataclass
class ReducedSetResult:
    """Outcome of a reduced-set method.

    Attributes
    ----------
    expansion : KernelExpansion
        The reduced expansion ``Psi' = sum_j beta_j Phi(z_j)`` (with the original
        intercept unless a threshold was re-fitted afterwards).
    objective : float or ndarray of shape (n_outputs,)
        Final ``||Psi - Psi'||^2`` (per output for multi-output expansions).
    objective_path : ndarray of shape (n_steps,) or (n_steps, n_outputs)
        ``||Psi - Psi'||^2`` after each step (construction: after each added
        vector; selection: after each removal; refinement: one row before and one
        after).
    support : ndarray of int or None
        For selection methods, the indices of the kept vectors in the original
        expansion; ``None`` for constructed vectors.
    norm2 : float or ndarray
        ``||Psi||^2`` of the expansion that was approximated.
    n_iter : int
        Iterations of the inner solver (phase 2: L-BFGS iterations).
    """

    expansion: KernelExpansion
    objective: object
    objective_path: np.ndarray
    support: np.ndarray | None = None
    norm2: object = None
    n_iter: int = 0
    info: dict = field(default_factory=dict)

    @property
    def relative_objective(self):
        """``||Psi - Psi'||^2 / ||Psi||^2``."""
        return np.asarray(self.objective) / np.maximum(np.asarray(self.norm2), 1e-300)


def _check_expansion(expansion, owner):
    if not isinstance(expansion, KernelExpansion):
        raise TypeError(
            f"{owner} needs a sparsekm.KernelExpansion (use KernelExpansion.from_estimator on a "
            f"fitted SVC/SVR/OneVsRestClassifier/KernelPCA); got {type(expansion).__name__}."
        )
    return expansion


def _coef2d(expansion):
    c = np.asarray(expansion.coef, dtype=np.float64)
    return c if c.ndim == 2 else c[:, None]


def _near_duplicates(Kz, max_pairs=5):
    """Pairs (i, j) whose feature-space images are (nearly) parallel, worst first."""
    d = np.sqrt(np.maximum(np.diag(Kz), 1e-300))
    C = Kz / d[:, None] / d[None, :]
    iu = np.triu_indices(Kz.shape[0], 1)
    cos = np.abs(C[iu])
    order = np.argsort(-cos)
    pairs = [(int(iu[0][o]), int(iu[1][o])) for o in order[:max_pairs] if cos[o] > 1 - 1e-6]
    return pairs


def _solve_kz(Kz, rhs, *, warn=True):
    """Solve ``K^z beta = rhs`` by Cholesky, or the pseudo-inverse if ill conditioned."""
    n = Kz.shape[0]
    scale = float(np.max(np.abs(np.diag(Kz)))) if n else 1.0
    if scale <= 0:
        scale = 1.0
    try:
        L = linalg.cholesky(Kz, lower=True, check_finite=False)
        dL = np.abs(np.diag(L))
        rcond = float((dL.min() / dL.max()) ** 2) if n else 1.0
        if rcond > RCOND:
            return linalg.cho_solve((L, True), rhs, check_finite=False)
    except linalg.LinAlgError:
        rcond = 0.0
    if warn:
        pairs = _near_duplicates(Kz)
        what = (
            "near-duplicate vectors (index pairs): " + ", ".join(f"({i}, {j})" for i, j in pairs)
            if pairs
            else "linearly dependent vectors (no near-duplicate pair)"
        )
        warnings.warn(
            f"K^z is singular or ill-conditioned (reciprocal condition ~{rcond:.1e}); it has "
            f"{what}. Using the pseudo-inverse (Proposition 8 footnote).",
            ReducedSetWarning,
            stacklevel=3,
        )
    return linalg.pinvh(Kz, atol=RCOND * scale, check_finite=False) @ rhs


def optimal_coefficients(expansion, Z, *, warn=True):
    """Optimal coefficients of a reduced set for fixed vectors (Proposition 8).

    ``beta = (K^z)^{-1} K^{zx} alpha`` minimises ``||Psi - sum_j beta_j Phi(z_j)||^2``
    (eq. 17 of *Fast approximation*; Proposition 8 of *Input space vs. feature
    space*), for every output column at once.

    Parameters
    ----------
    expansion : KernelExpansion
        ``Psi``; single- or multi-output.
    Z : array-like of shape (n_vectors, n_features)
        Reduced-set vectors ``z_j``.
    warn : bool, default=True
        Warn (:class:`ReducedSetWarning`) when ``K^z`` is singular or ill
        conditioned, naming the near-duplicate vectors.

    Returns
    -------
    beta : ndarray of shape (n_vectors,) or (n_vectors, n_outputs)
        Same layout as ``expansion.coef``.

    Notes
    -----
    A Cholesky solve is used when ``K^z`` is well conditioned (reciprocal condition
    estimate above ``1e-10``); otherwise the pseudo-inverse, which returns the
    minimum-norm optimal ``beta`` (the footnote to eq. 17).
    """
    expansion = _check_expansion(expansion, "optimal_coefficients")
    Z = check_array(Z, "Z", dtype=np.float64)
    check_same_features(Z, expansion.n_features, "Z", "the expansion")
    k = expansion.kernel
    Kz = k(Z)
    rhs = k.mmv(Z, np.asarray(expansion.vectors, dtype=np.float64), _coef2d(expansion))
    beta = _solve_kz(Kz, rhs, warn=warn)
    return beta if expansion.is_multioutput else beta[:, 0]


def _objective_from_parts(norm2, Kz, rhs, B):
    """``||Psi||^2 + B^T K^z B - 2 B^T K^{zx} A`` per output (columns)."""
    return norm2 + np.einsum("ij,ij->j", B, Kz @ B) - 2.0 * np.einsum("ij,ij->j", B, rhs)


def approximation_error(expansion, reduced):
    """``||Psi - Psi'||^2`` (per output), computed through the kernel only (eq. 6)."""
    _check_expansion(expansion, "approximation_error")
    _check_expansion(reduced, "approximation_error")
    return expansion.distance2(reduced)


def _binary_threshold(scores, positive, b0):
    """Threshold ``b`` minimising training errors of ``sign(scores + b)``.

    Among the minimisers (a union of intervals between sorted scores) take the
    middle of the interval closest to ``b0``.
    """
    s = np.asarray(scores, dtype=np.float64)
    pos = np.asarray(positive, dtype=bool)
    order = np.argsort(s, kind="stable")
    s_sorted = s[order]
    p_sorted = pos[order]
    n = s.size
    # Threshold position t in 0..n: samples [0, t) predicted negative, [t, n) positive.
    err = np.empty(n + 1)
    err[0] = np.count_nonzero(~pos)
    err[1:] = err[0] + np.cumsum(np.where(p_sorted, 1, -1))
    # Positions between equal scores are not realisable.
    valid = np.ones(n + 1, dtype=bool)
    valid[1:n] = s_sorted[1:] > s_sorted[:-1]
    err[~valid] = np.inf
    emin = err.min()
    spread = max(float(np.ptp(s)), 1e-12)
    # Runs of consecutive realisable positions a..c that all reach the minimum;
    # run a..c means -b in [s_sorted[a-1], s_sorted[c]).
    cands = []
    run = None
    for t in np.flatnonzero(valid):
        if err[t] == emin:
            run = (t, t) if run is None else (run[0], t)
        elif run is not None:
            cands.append(run)
            run = None
    if run is not None:
        cands.append(run)
    mids = []
    for a, c in cands:
        lo = s_sorted[a - 1] if a > 0 else None
        hi = s_sorted[c] if c < n else None
        if lo is None and hi is None:
            mid = 0.0
        elif lo is None:
            mid = hi - 0.5 * spread
        elif hi is None:
            mid = lo + 0.5 * spread
        else:
            mid = 0.5 * (lo + hi)
        mids.append(-mid)
    cands = np.asarray(mids)
    return float(cands[np.argmin(np.abs(cands - b0))])


def optimal_threshold(scores, y, *, b0=0.0):
    """The training-error optimal threshold of a binary decision function.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        ``f(x_i)`` without the intercept.
    y : array-like of shape (n_samples,)
        Boolean (True = positive class) labels.
    b0 : float
        Current threshold; ties between equally good intervals go to the one
        nearest ``b0``.

    Returns
    -------
    b : float
        Minimises the number of training errors of ``sign(scores + b)``; the middle
        of the best interval.
    """
    scores = check_array(scores, "scores", ndim=1)
    return _binary_threshold(scores, y, b0)


def refit_intercept(expansion, X, y, *, method="per-output", classes=None, max_sweeps=5):
    """Re-compute the threshold of a (reduced) expansion on training data.

    The RS papers re-compute the optimal threshold ``b~`` for every reduced system
    (*Fast approximation*, section 7; *Input space vs. feature space*, section
    VI-B).

    Parameters
    ----------
    expansion : KernelExpansion
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Binary labels for a single-output expansion (the larger label is the
        positive class, as for scikit-learn's SVC); class labels for a
        multi-output one-vs-rest expansion (column ``k`` is ``classes[k]``).
    method : {"per-output", "joint"}, default="per-output"
        ``"per-output"``: each output's threshold minimises its own binary
        training error (one-vs-rest). ``"joint"``: thresholds minimise the
        training error of the multi-class argmax, by coordinate descent over
        the outputs starting from the current intercepts.
    classes : array-like of shape (n_outputs,), default=None
        Class label of each output column; default ``np.unique(y)``.
    max_sweeps : int, default=5
        Coordinate-descent sweeps for ``method="joint"``.

    Returns
    -------
    KernelExpansion
        Same vectors and coefficients, new intercept.
    """
    expansion = _check_expansion(expansion, "refit_intercept")
    X = check_array(X, "X")
    check_same_features(X, expansion.n_features, "X", "the expansion")
    y = check_labels(y, X.shape[0])
    if method not in ("per-output", "joint"):
        raise ValueError(f"method must be 'per-output' or 'joint'; got {method!r}.")
    F = expansion.decision_function(X) - np.asarray(expansion.intercept)
    if not expansion.is_multioutput:
        labels = np.unique(y)
        if labels.size != 2:
            raise ValueError(
                f"refit_intercept of a single-output expansion needs binary y; found "
                f"{labels.size} distinct labels."
            )
        b = _binary_threshold(F, y == labels[1], float(expansion.intercept))
        return KernelExpansion(expansion.vectors, expansion.coef, expansion.kernel, b)
    classes = np.unique(y) if classes is None else np.asarray(classes)
    if classes.shape != (expansion.n_outputs,):
        raise ValueError(
            f"classes must name one class per output ({expansion.n_outputs}); got "
            f"{classes.shape[0] if classes.ndim else 0} (pass classes= explicitly)."
        )
    b = np.array(expansion.intercept, dtype=np.float64)
    if method == "per-output":
        for k in range(expansion.n_outputs):
            b[k] = _binary_threshold(F[:, k], y == classes[k], b[k])
    else:
        yi = np.searchsorted(classes, y) if np.all(np.diff(classes) > 0) else None
        if yi is None:
            lookup = {c: i for i, c in enumerate(classes.tolist())}
            yi = np.array([lookup.get(v, -1) for v in y.tolist()])
        yi = np.where(classes[np.clip(yi, 0, len(classes) - 1)] == y, yi, -1)
        n_out = expansion.n_outputs
        for _ in range(max_sweeps):
            changed = False
            for k in range(n_out):
                S = F + b
                others = np.delete(S, k, axis=1)
                idx_o = np.delete(np.arange(n_out), k)
                arg_o = idx_o[np.argmax(others, axis=1)]
                m = others.max(axis=1)
                pos = yi == k
                relevant = pos | (arg_o == yi)
                if not relevant.any():
                    continue
                # Sample i is right iff F_ik - m_i + b_k > 0 (positives) / < 0 (others).
                new = _binary_threshold((F[:, k] - m)[relevant], pos[relevant], b[k])
                if new != b[k]:
                    old_err = np.count_nonzero(np.argmax(S, axis=1) != yi)
                    trial = b.copy()
                    trial[k] = new
                    new_err = np.count_nonzero(np.argmax(F + trial, axis=1) != yi)
                    if new_err <= old_err:
                        changed = changed or new_err < old_err
                        b = trial
            if not changed:
                break
    return KernelExpansion(expansion.vectors, expansion.coef, expansion.kernel, b)
