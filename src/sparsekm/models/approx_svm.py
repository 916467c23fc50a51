"""SVM on the approximated training set (Franc & Hlaváč, section 4.1).

The training set is replaced by its coordinates ``Gamma`` in the span of ``m``
greedily selected basis vectors (Algorithm 1, eq. 3), and a *linear* SVM is
trained on ``Gamma``: this is the SVM with the approximated kernel
``k'(x_i, x_j) = gamma_i^T gamma_j``. Its normal vector ``w = sum_i alpha_i y_i
gamma_i`` lives in ``span Phi(X_r)``, so the decision function needs only the
basis vectors (section 4.1):

    f(x) = w^T gamma(x) + b = sum_j alpha'_j k(x, r_j) + b,
    alpha' = L_r^{-T} w = sum_i alpha_i y_i beta_i      (alpha'_j = sum_i alpha_i beta_ij).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.base import _fit_context
from sklearn.svm import SVC, LinearSVC
from sklearn.utils._param_validation import Interval, StrOptions

from .._constraints import KERNEL, NON_NEGATIVE, POSITIVE, POSITIVE_INT, RANDOM_STATE
from ..approx.dask_fits import approx_svc_fit_distributed
from ..approx.greedy import GreedyBasis, check_basis_not_empty, checked_kernel
from ..expansion import KernelExpansion
from ..parallel import is_dask_array
from ..persistence import register, spec
from ..utils._deprecation import keyword_only_args
from ..utils.validation import validate_X
from ._base import (
    BINARY_PERSIST_ATTRS,
    BinaryExpansionClassifier,
    binary_targets,
    resolve_n_basis,
)

__all__ = ["ApproxSVC", "linear_svm_on_coordinates", "svc_precomputed"]

_BASES = ("greedy", "support")
_SOLVERS = ("smo", "liblinear", "lbfgs")
#: ``solver="lbfgs"`` with ``max_iter=-1``, in memory and on a dask array alike: L-BFGS
#: until three consecutive iterations each change the squared-hinge objective by at most
#: this much relative (at most 1000 iterations), then finite Newton steps to the optimum
#: (:func:`sparsekm.approx.squared_hinge.solve_squared_hinge`): the end point depends on
#: the data, not on the order of the sums, so a dask fit equals the in-memory fit (issue
#: 38). A fixed iteration count converges less the more rows there are: on ringnorm, 15
#: iterations give 4.3 % test error at 1e5 rows and 3.3 % at 1e6, against 2.0 % and 1.9 %
#: converged (``benchmarks/results/lbfgs_stopping.json``).
_LBFGS_TOL = 1e-6
_DASK_LBFGS_TOL = _LBFGS_TOL


def svc_precomputed(K, y, C, *, tol=1e-3, max_iter=-1, info=None):
    """Binary SVM (libsvm's SMO) on a precomputed Gram matrix.

    Returns
    -------
    support : ndarray of int
        Indices of the support vectors.
    dual_coef : ndarray of shape (n_SV,)
        ``alpha_i y_i``.
    intercept : float

    ``info``, a dict if given, receives ``n_iter`` (libsvm's iterations).
    """
    if max_iter == -1:  # libsvm may never stop on badly scaled kernels (values ~1e24)
        max_iter = max(10**6, 100 * K.shape[0])
    svc = SVC(C=C, kernel="precomputed", tol=tol, max_iter=max_iter).fit(K, y)
    if info is not None:
        info["n_iter"] = int(np.max(svc.n_iter_))
    return svc.support_, svc.dual_coef_[0].copy(), float(svc.intercept_[0])


def linear_svm_on_coordinates(Gamma, y, C, *, solver="smo", tol=1e-3, max_iter=-1,
                              random_state=None, info=None):
    """Linear SVM on the coordinates ``Gamma`` (the SVM with kernel ``gamma_i^T gamma_j``).

    Parameters
    ----------
    Gamma : ndarray of shape (n_samples, m)
    y : ndarray of shape (n_samples,) with values ±1
    C : float
    solver : {"smo", "liblinear", "lbfgs"}
        ``"smo"``: libsvm on the ``n x n`` Gram matrix ``Gamma Gamma^T`` (exact
        unregularised bias, the paper's choice; ``n^2`` dot products of length
        ``m``). ``"liblinear"``: dual coordinate descent with the hinge loss on
        ``Gamma`` itself, O(n m) memory for large ``n`` (its bias is regularised
        through ``intercept_scaling``). ``"lbfgs"``: the squared-hinge primal
        ``1/2 ||w||^2 + C sum_i max(0, 1 - y_i (w^T gamma_i + b))^2`` (LinearSVC's
        default loss) with a free, unregularised bias ``b`` (the paper's), by scipy's
        L-BFGS-B from ``w = 0, b = 0`` -- the solver of the distributed fit on a dask
        array (:mod:`sparsekm.approx.dask_fits`), O(n m) memory.
    tol : float, default=1e-3
        Stopping tolerance of libsvm/liblinear. ``"lbfgs"`` with ``max_iter=-1`` goes
        to the exact optimum (L-BFGS to a relative change of 1e-6, then finite Newton
        steps until the active set is unchanged:
        :func:`~sparsekm.approx.squared_hinge.solve_squared_hinge`).
    max_iter : int, default=-1
        Iteration limit (``-1``: the solver's default; 1000 for ``"lbfgs"``; liblinear
        runs at least 20000).
    random_state : int, RandomState instance or None, default=None
        liblinear's random order of the coordinates.
    info : dict, optional
        Receives ``n_iter``, the solver's iterations.

    Returns
    -------
    w : ndarray of shape (m,)
    b : float
    support : ndarray of int or None
        Training points with ``alpha_i > 0`` (``None`` for liblinear).
    n_dot_products : int or None
        ``gamma_i^T gamma_j`` computed by the solver (``None`` for liblinear).
    """
    info = {} if info is None else info
    Gamma = np.asarray(Gamma, dtype=np.float64)
    if solver == "smo":
        G = Gamma @ Gamma.T
        support, dual, b = svc_precomputed(G, y, C, tol=tol, max_iter=max_iter, info=info)
        w = Gamma[support].T @ dual
        return w, b, support, int(Gamma.shape[0]) ** 2
    if solver == "liblinear":
        svm = LinearSVC(C=C, loss="hinge", dual=True, intercept_scaling=1.0, tol=tol,
                        max_iter=max(20000, max_iter), random_state=random_state).fit(Gamma, y)
        info["n_iter"] = int(svm.n_iter_)
        return svm.coef_[0].copy(), float(svm.intercept_[0]), None, None
    if solver == "lbfgs":
        from ..approx.squared_hinge import solve_squared_hinge

        y = np.asarray(y, dtype=np.float64)
        w, b, out = solve_squared_hinge(
            lambda block_fn, *args: block_fn(Gamma, y, *args), Gamma.shape[1], C,
            max_iter=1000 if max_iter == -1 else max_iter,
            tol=_LBFGS_TOL if max_iter == -1 else None)
        info["n_iter"] = out["n_iter"] + out["n_newton"]
        return w, b, None, None
    raise ValueError(f"solver must be one of {_SOLVERS}; got {solver!r}.")


@register
class ApproxSVC(BinaryExpansionClassifier):
    """SVM trained on the greedy approximation of the training set (section 4.1).

    Parameters
    ----------
    C : float, default=1.0
        SVM regularisation constant.
    n_basis : int or float, default=0.1
        Maximum number of basis vectors ``m``; a float in (0, 1] is a fraction of
        the training set (the paper uses ``m = 0.1 n``).
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
    basis : {"greedy", "support"}, default="greedy"
        ``"greedy"``: Algorithm 1 on all training points. ``"support"``: the
        paper's suggestion (i)-(iii): train a full SVM, select the basis among its
        support vectors (greedily, at most ``n_basis`` of them), retrain on the
        approximation.
    solver : {"smo", "liblinear", "lbfgs"}, default="smo"
        See :func:`linear_svm_on_coordinates`. ``"smo"`` (libsvm, hinge loss, free
        bias) stays the in-memory default. A dask ``X`` needs ``"lbfgs"`` (squared
        hinge, free bias), the one solver that runs as a map-reduce over partitions;
        the same ``"lbfgs"`` in memory gives the same decision function.
    max_iter : int, default=-1
        Iteration limit of the linear SVM solver (``-1``: its default; for ``"lbfgs"``,
        in memory and on a dask ``X`` alike, L-BFGS until three consecutive iterations
        each change the objective by at most 1e-6 relative (at most 1000), then finite
        Newton steps to the exact optimum, so that the fit does not depend on the order
        of the sums; a given ``max_iter`` runs plain L-BFGS to that many iterations or
        scipy's tolerances). ``n_iter_`` counts L-BFGS iterations and Newton steps.
    init : {"random", "max-diag"}, default="random"
    random_state : int, RandomState instance or None, default=None

    Notes
    -----
    ``fit`` on a ``dask.array`` (and ``y`` a dask or numpy array) runs on the
    workers of the current ``dask.distributed`` client: Algorithm 1 over the
    partitions, then L-BFGS with one map-reduce of the loss and gradient per step
    (``solver="lbfgs"`` required); see :mod:`sparsekm.approx.dask_fits`.

    Attributes
    ----------
    expansion_ : KernelExpansion
        Decision function over the ``m`` basis vectors, coefficients ``alpha'``.
    basis_ : GreedyBasis
    coef_ : ndarray of shape (m,)
        ``alpha'``.
    intercept_ : float
    support_ : ndarray of int or None
        Training points that are support vectors of the SVM on ``Gamma``.
    n_kernel_evaluations_ : dict
        ``"approximation"``: kernel values computed to build the approximation
        (Algorithm 1; plus the full SVM's ``n^2`` Gram matrix for
        ``basis="support"``); ``"training"``: approximated kernel values
        ``gamma_i^T gamma_j`` computed by the solver (``n^2`` for ``"smo"``,
        ``None`` for liblinear) -- the paper's ker_eval column with its brackets.
    classes_, kernel_, n_features_in_

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.models import ApproxSVC
    >>> from sparsekm.kernels import RBF
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4).astype(int)
    >>> clf = ApproxSVC(C=10, n_basis=20, kernel=RBF(1.0), random_state=0).fit(X, y)
    >>> clf.n_vectors_, bool(clf.score(X, y) > 0.9)
    (20, True)
    """

    # Fitted state restored by sparsekm.load (see docs/persistence.md).
    _persist_attrs = {**BINARY_PERSIST_ATTRS,
                      "basis_": spec.estimator("sparsekm.approx.greedy.GreedyBasis", n_features="n_features"),
                      "support_": spec.array("iu", (None,), nullable=True),
                      "n_iter_": spec.int(optional=True),
                      # timings and state mode of a fit on a dask array (informational)
                      "dask_info_": spec.dict(spec.one_of(
                          spec.bool(), spec.int(), spec.float(), spec.str(),
                          spec.list(spec.one_of(spec.int(), spec.float()))), optional=True)}

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **KERNEL, "C": POSITIVE, "n_basis": [Interval(Real, 0, 1, closed="right"), *POSITIVE_INT],
        "tol": NON_NEGATIVE, "basis": [StrOptions(set(_BASES))],
        "solver": [StrOptions(set(_SOLVERS))], "init": [StrOptions({"random", "max-diag"})],
        "random_state": RANDOM_STATE, "max_iter": [Interval(Integral, -1, None, closed="left")]}

    @keyword_only_args
    def __init__(self, *, C=1.0, n_basis=0.1, tol=1e-3, kernel=None, basis="greedy", solver="smo",
                 init="random", random_state=None, max_iter=-1,
                 gamma="scale", degree=3, coef0=0.0):
        self.C = C
        self.n_basis = n_basis
        self.tol = tol
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.basis = basis
        self.solver = solver
        self.init = init
        self.random_state = random_state
        self.max_iter = max_iter

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Approximate the training set, train the linear SVM on ``Gamma``, map back."""
        # C, basis, solver, max_iter, ...: checked by _parameter_constraints (_fit_context)
        C, max_iter = float(self.C), int(self.max_iter)
        if is_dask_array(X):
            fit = approx_svc_fit_distributed(
                self, X, y, C, max_iter=1000 if max_iter == -1 else max_iter,
                tol=_DASK_LBFGS_TOL if max_iter == -1 else None)
            self.support_ = None
            return self._set_distributed_fit(fit)
        X = validate_X(self, X)
        self.classes_, ys = binary_targets(y, "ApproxSVC", X.shape[0])
        n = X.shape[0]
        m = resolve_n_basis(self.n_basis, n, "ApproxSVC")
        self.kernel_ = checked_kernel(self, X)
        basis = GreedyBasis(n_basis=m, tol=self.tol, kernel=self.kernel_, init=self.init,
                            random_state=self.random_state)
        extra = 0
        if self.basis == "greedy":
            Gamma = basis.fit_transform(X)
        else:
            sv, _, _ = svc_precomputed(self.kernel_(X), ys, C)
            extra = n * n
            basis.fit(X[sv])
            basis.basis_indices_ = sv[basis.basis_indices_]
            Gamma = basis.transform(X)
            extra += n * basis.n_basis_
        check_basis_not_empty(basis, "ApproxSVC")
        info = {}
        w, b, support, n_dot = linear_svm_on_coordinates(Gamma, ys, C, solver=self.solver,
                                                         max_iter=max_iter,
                                                         random_state=self.random_state,
                                                         info=info)
        self.n_iter_ = max(int(info["n_iter"]), 1)
        coef = solve_triangular(basis.cholesky_.T, w, lower=False, check_finite=False)
        self.basis_ = basis
        self.coef_ = coef
        self.intercept_ = b
        self.support_ = support
        self.expansion_ = KernelExpansion(basis.basis_vectors_, coef.astype(X.dtype),
                                          self.kernel_, b)
        self.n_kernel_evaluations_ = {"approximation": basis.n_kernel_evaluations_ + extra,
                                      "training": n_dot}
        return self
