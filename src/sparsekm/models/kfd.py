"""Kernel Fisher discriminant, full (eq. 5) and on the approximated training set (eq. 7).

Franc & Hlaváč, *Training set approximation for kernel methods*, section 4.2.

Both problems have the form

    min_a  a^T N a + C a^T a   subject to   a^T d = 2,

where the rows of a projection matrix ``A`` hold the features ``A[i, j] = <Phi(x_i),
Phi(z_j)>`` of each training point: ``A = K`` (all ``n`` training points as
expansion vectors, eq. 5) or ``A = F'^T F_r = Gamma L_r^T`` (the approximated
training set against the ``m`` basis vectors, eq. 7). Then ``N = A^T Z A`` is the
within-class scatter ``sum_k (1/n_k) A_k^T (I - 11^T/n_k) A_k`` and ``d = A^T e``
the difference of the class means of the rows of ``A``. Setting the gradient of the
Lagrangian to zero gives the closed form

    a = 2 (N + C I)^{-1} d / (d^T (N + C I)^{-1} d).

Note on eq. 6: the paper writes ``e = e_+ + e_-``; the constraint that turns the
Rayleigh quotient (4) into (5) fixes the *difference* of the projected class means,
so we use ``e = e_+ - e_-`` (with the sum, the problem would not depend on how the
classes are separated).

The threshold assumes equal priors (as in the paper's experiments): ``b`` puts the
decision boundary half-way between the projected class means.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from .._constraints import KERNEL, NON_NEGATIVE, POSITIVE_INT, RANDOM_STATE
from ..approx.dask_fits import approx_kfd_fit_distributed
from ..approx.fisher import approx_kfd_fit, fisher_scatter, fisher_threshold, kfd_path, kfd_solve
from ..approx.greedy import GreedyBasis, check_basis_not_empty, checked_kernel
from ..expansion import KernelExpansion
from ..parallel import is_dask_array
from ..persistence import register, spec
from ..utils._deprecation import keyword_only_args
from ..utils.validation import check_scalar, validate_X
from ._base import (
    BINARY_PERSIST_ATTRS,
    BinaryExpansionClassifier,
    binary_targets,
    resolve_n_basis,
)

__all__ = ["KernelFisherDiscriminant", "ApproxKFD", "fisher_scatter", "kfd_solve", "kfd_path"]


def _check_C(C, owner):
    return check_scalar(C, "C", owner, lower=0.0)


@register
class KernelFisherDiscriminant(BinaryExpansionClassifier):
    """Kernel Fisher discriminant in the regularised form of eq. 5.

    ``min_a a^T K Z K a + C a^T a`` subject to ``a^T K e = 2``: the Rayleigh
    quotient (4) in feature space with a ridge regulariser. The decision function
    uses every training point (``n_vectors_ = n``).

    Parameters
    ----------
    C : float, default=1e-3
        Regularisation constant (> 0 unless the within-class scatter has full rank).
    kernel : Kernel, str or None, default=None
        A :class:`~sparsekm.kernels.Kernel` object (it carries its own parameters),
        or a name as in scikit-learn: ``"rbf"``, ``"poly"``, ``"sigmoid"``,
        ``"linear"`` (or ``"imq"``); ``None`` is ``"rbf"``.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of the string kernels ``"rbf"``, ``"poly"`` and
        ``"sigmoid"`` (and ``None``), as in scikit-learn: ``"scale"`` is
        ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``.
    degree : int, default=3
        Degree of ``kernel="poly"``.
    coef0 : float, default=0.0
        Constant term of ``kernel="poly"`` and ``kernel="sigmoid"``.

    Attributes
    ----------
    expansion_ : KernelExpansion
        ``f(x) = sum_i alpha_i k(x, x_i) + b`` over all training points.
    coef_ : ndarray of shape (n_samples,)
        ``alpha``.
    intercept_ : float
        ``b``, half-way between the projected class means (equal priors).
    classes_ : ndarray of shape (2,)
    kernel_ : Kernel
    n_kernel_evaluations_ : dict
        ``{"approximation": 0, "training": n^2}`` (the Gram matrix).
    n_features_in_ : int

    Notes
    -----
    Costs O(n^3) time and O(n^2) memory. See :func:`fisher_scatter`,
    :func:`kfd_solve` and the module docstring (we read ``e`` in eq. 6 as
    ``e_+ - e_-``).
    """

    # Fitted state restored by sparsekm.load (see docs/persistence.md).
    _persist_attrs = BINARY_PERSIST_ATTRS

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {**KERNEL, "C": NON_NEGATIVE}

    @keyword_only_args
    def __init__(self, *, C=1e-3, kernel=None,
                 gamma="scale", degree=3, coef0=0.0):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Solve eq. 5 on ``(X, y)``."""
        C = _check_C(self.C, "KernelFisherDiscriminant")
        X = validate_X(self, X)
        self.classes_, ys = binary_targets(y, "KernelFisherDiscriminant", X.shape[0])
        self.kernel_ = checked_kernel(self, X)
        K = self.kernel_(X).astype(np.float64, copy=False)
        N, d, means = fisher_scatter(K, ys)
        coef = kfd_solve(N, d, C)
        self.coef_ = coef
        self.intercept_ = fisher_threshold(coef, means)
        self.expansion_ = KernelExpansion(X, coef.astype(X.dtype), self.kernel_, self.intercept_)
        self.n_kernel_evaluations_ = {"approximation": 0, "training": int(X.shape[0]) ** 2}
        return self


@register
class ApproxKFD(BinaryExpansionClassifier):
    """Kernel Fisher discriminant on the approximated training set (eq. 7).

    A :class:`~sparsekm.approx.GreedyBasis` selects ``m`` basis vectors ``X_r``
    (Algorithm 1); the discriminant ``f(x) = sum_j alpha'_j k(x, r_j) + b`` then
    solves the ``m x m`` problem ``min alpha'^T N' alpha' + C alpha'^T alpha'``
    subject to ``alpha'^T m' = 2`` with ``N' = K_r B Z B^T K_r`` and
    ``m' = K_r B e``, which only needs ``Gamma`` (O(n m^2) time, O(n m) memory).

    Parameters
    ----------
    n_basis : int or float, default=0.25
        Maximum number of basis vectors ``m``; a float in (0, 1] is a fraction of
        the training set (the paper uses ``m = 0.25 n``).
    C : float, default=1e-3
        Regularisation constant of eq. 7.
    tol : float, default=1e-3
        The paper's epsilon for Algorithm 1.
    kernel : Kernel, str or None, default=None
        A :class:`~sparsekm.kernels.Kernel` object (it carries its own parameters),
        or a name as in scikit-learn: ``"rbf"``, ``"poly"``, ``"sigmoid"``,
        ``"linear"`` (or ``"imq"``); ``None`` is ``"rbf"``.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of the string kernels ``"rbf"``, ``"poly"`` and
        ``"sigmoid"`` (and ``None``), as in scikit-learn: ``"scale"`` is
        ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``.
    degree : int, default=3
        Degree of ``kernel="poly"``.
    coef0 : float, default=0.0
        Constant term of ``kernel="poly"`` and ``kernel="sigmoid"``.
    init : {"random", "max-diag"}, default="random"
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    expansion_ : KernelExpansion
        ``m`` terms over the basis vectors.
    basis_ : GreedyBasis
        The fitted training-set approximation.
    coef_ : ndarray of shape (m,)
        ``alpha'``.
    intercept_ : float
    classes_, kernel_, n_features_in_
    n_kernel_evaluations_ : dict
        ``{"approximation": kernel values computed by Algorithm 1, "training": 0}``
        (eq. 7 needs no kernel values beyond ``Gamma``).
    """

    # Fitted state restored by sparsekm.load (see docs/persistence.md).
    _persist_attrs = {**BINARY_PERSIST_ATTRS,
                      "basis_": spec.estimator("sparsekm.approx.greedy.GreedyBasis", n_features="n_features")}

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **KERNEL, "C": NON_NEGATIVE,
        "n_basis": [Interval(Real, 0, 1, closed="right"), *POSITIVE_INT],
        "tol": NON_NEGATIVE, "init": [StrOptions({"random", "max-diag"})],
        "random_state": RANDOM_STATE}

    @keyword_only_args
    def __init__(self, n_basis=0.25, *, C=1e-3, tol=1e-3, kernel=None, init="random",
                 random_state=None,
                 gamma="scale", degree=3, coef0=0.0):
        self.n_basis = n_basis
        self.C = C
        self.tol = tol
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.init = init
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Select the basis on ``X`` and solve eq. 7.

        A ``dask.array`` ``X`` runs on the current ``dask.distributed`` cluster:
        Algorithm 1 over its partitions, then the class means and the ``m x m``
        scatter matrices reduced over the partitions (exact; see
        :mod:`sparsekm.approx.dask_fits`).
        """
        C = _check_C(self.C, "ApproxKFD")
        if is_dask_array(X):
            return self._set_distributed_fit(approx_kfd_fit_distributed(self, X, y, C))
        X = validate_X(self, X)
        self.classes_, ys = binary_targets(y, "ApproxKFD", X.shape[0])
        m = resolve_n_basis(self.n_basis, X.shape[0], "ApproxKFD")
        self.kernel_ = checked_kernel(self, X)
        basis = GreedyBasis(n_basis=m, tol=self.tol, kernel=self.kernel_, init=self.init,
                            random_state=self.random_state)
        Gamma = basis.fit_transform(X)
        check_basis_not_empty(basis, "ApproxKFD")
        coef, b = approx_kfd_fit(Gamma, basis.cholesky_, ys, C)
        self.basis_ = basis
        self.coef_ = coef
        self.intercept_ = b
        self.expansion_ = KernelExpansion(basis.basis_vectors_, coef.astype(X.dtype),
                                          self.kernel_, b)
        self.n_kernel_evaluations_ = {"approximation": basis.n_kernel_evaluations_,
                                      "training": 0}
        return self
