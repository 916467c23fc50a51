"""The standard soft-margin SVM (Wu, Schölkopf, Bakır, JMLR 2006, problem 20-22).

The unconstrained machine every direct sparse method of the paper is measured against:
:func:`full_svm_expansion` trains it (libsvm) and returns it as a
:class:`~sparsekm.KernelExpansion`; :func:`svm_dual_objective` is its dual objective
(eq. 37 with ``K``). Kept apart from the fixed-``Z`` solvers (:mod:`.fixed_z`) so that the
reproduction cells that only need the full SVM (the SVM and RVM rows of Wu et al.'s
tables) are keyed by this code alone, not by the SLMC solvers'.
"""

from __future__ import annotations

import numpy as np
from sklearn.svm import SVC

__all__ = ["full_svm_expansion", "svm_dual_objective"]


def full_svm_expansion(X, y, kernel, C, *, tol=1e-5):
    """The standard soft-margin SVM (problem 20-22) as a :class:`KernelExpansion`.

    Trained by libsvm on the precomputed Gram matrix, so any sparsekm kernel works.
    ``coef = alpha_i y_i`` over the support vectors, ``intercept = b``.
    """
    from ..expansion import KernelExpansion
    from ..kernels import RBF

    y = np.asarray(y)
    max_iter = max(10**6, 100 * X.shape[0])  # libsvm may never stop on badly scaled kernels
    if isinstance(kernel, RBF):
        svc = SVC(kernel="rbf", gamma=kernel.gamma, C=C, tol=tol, cache_size=500,
                  max_iter=max_iter).fit(X, y)
    else:
        svc = SVC(kernel="precomputed", C=C, tol=tol, max_iter=max_iter).fit(kernel(X), y)
    # scikit-learn's binary dual_coef_ is alpha_i y_i with y = +1 for classes_[1].
    return KernelExpansion(X[svc.support_], svc.dual_coef_[0], kernel, float(svc.intercept_[0]))


def svm_dual_objective(X, y, expansion, C):
    """Dual SVM objective ``sum(alpha) - ||w||^2 / 2`` of a full SVM expansion (eq. 37 with K).

    ``expansion.coef`` must be ``alpha_i y_i`` over training points (as returned by
    :func:`full_svm_expansion`).
    """
    alpha = np.abs(np.asarray(expansion.coef))
    return float(alpha.sum() - 0.5 * expansion.norm2())
