"""Kernel PCA with pre-images: compression, denoising and interpretation.

Kernel PCA (Schölkopf, Mika, Burges, Knirsch, Müller, Rätsch, Smola, *Input space vs.
feature space in kernel-based methods*, IEEE TNN 1999, section III-C, eq. 32–36) is
linear PCA of the mapped data ``Phi(x_i)`` in feature space. Every principal axis
``V^k = sum_i alpha_i^k Phi~(x_i)`` is a kernel expansion, and so is the projection
``P_n Phi(x)`` of a point onto the first ``n`` axes (eq. 42); a pre-image solver
(:mod:`sparsekm.preimage`) maps such expansions back to input space, which gives

* **denoising**: map ``x``, project onto ``n`` components, compute a pre-image;
* **compression**: reconstruct ``x`` from its ``n`` features ``beta_k`` alone;
* **interpretation**: pre-images of the axes ``V^k`` themselves (fig. 8).

Centring (the paper's footnote 9): the covariance is that of the centred images
``Phi~(x) = Phi(x) - (1/l) sum_j Phi(x_j)``, whose Gram matrix is
``K~ = K - 1_l K - K 1_l + 1_l K 1_l`` (``1_l`` the matrix with entries ``1/l``).
Its eigenvectors with non-zero eigenvalue are orthogonal to the all-ones vector,
so ``V^k = sum_i alpha_i^k Phi(x_i)`` and the mean plus projection is
``sum_i gamma_i Phi(x_i)`` with ``gamma_i = sum_k beta_k alpha_i^k + 1/l`` (see
``DESIGN-NOTES``; the implementation uses the exact form that does not rely on the
orthogonality).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import eigsh
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .. import persistence
from .._constraints import BOOLEAN, KERNEL, NON_NEGATIVE, POSITIVE_INT, RANDOM_STATE
from ..expansion import KernelExpansion
from ..kernels import estimator_kernel
from ..parallel import dask_rowwise, is_dask_array
from ..preimage import normalise_method, preimage
from ..utils._deprecation import keyword_only_args
from ..utils.validation import OutputContainerMixin, check_scalar, validate_X

__all__ = ["KernelPCA", "linear_pca_denoise"]

_EIGEN_SOLVERS = ("auto", "dense", "arpack", "randomized")


def _randomized_eigh(K, n_components, n_oversamples=10, n_iter=7, random_state=None):
    """Top eigenpairs of a symmetric matrix by a randomized range finder (Halko et al.)."""
    rng = check_random_state(random_state)
    n = K.shape[0]
    k = min(n, n_components + n_oversamples)
    Q = rng.normal(size=(n, k))
    Q, _ = np.linalg.qr(K @ Q)
    for _ in range(n_iter):
        Q, _ = np.linalg.qr(K @ Q)
    B = Q.T @ K @ Q
    w, U = np.linalg.eigh((B + B.T) / 2)
    order = np.argsort(w)[::-1][:n_components]
    return w[order], Q @ U[:, order]


def _top_eigh(K, k):
    """The ``k`` largest eigenpairs of the symmetric ``K`` (LAPACK).

    The subset solver (``syevr``) may return fewer pairs than asked for when the
    top eigenvalue is highly repeated (e.g. the centred RBF Gram matrix of far-apart
    points, ``K~ = I - 11^T/n``: eigenvalue 1 with multiplicity ``n - 1``); the
    full divide-and-conquer solve then gives all of them, and any orthonormal basis
    of the repeated eigenspace is a valid set of components.
    """
    n = K.shape[0]
    try:
        w, V = scipy.linalg.eigh(K, subset_by_index=(n - k, n - 1))
    except np.linalg.LinAlgError:
        w = np.empty(0)
    if w.size == k:
        return w, V
    w, V = scipy.linalg.eigh(K, driver="evd")
    if w.size < k:  # pragma: no cover - evd returns all n pairs or raises
        raise ValueError(f"The eigensolver returned {w.size} eigenpairs, fewer than the "
                         f"{k} components asked for.")
    return w[n - k:], V[:, n - k:]


@persistence.register
class KernelPCA(ClassNamePrefixFeaturesOutMixin, OutputContainerMixin, TransformerMixin,
                BaseEstimator):
    """Kernel principal component analysis with pre-images (eq. 32–36, 42).

    Parameters
    ----------
    n_components : int, default=None
        Number of components ``n``. ``None`` keeps every component with a
        non-zero eigenvalue.
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
    eigen_solver : {"auto", "dense", "arpack", "randomized"}, default="auto"
        ``"dense"``: LAPACK on the full centred Gram matrix; ``"arpack"``: Lanczos
        (``scipy.sparse.linalg.eigsh``), good for few components; ``"randomized"``:
        a randomized range finder; ``"auto"``: as scikit-learn (arpack for fewer
        than 10 components of more than 200 points, randomized for fewer than 80 %
        of them, dense otherwise).
    tol : float, default=0
        Convergence tolerance of arpack (0: machine precision).
    max_iter : int, default=None
        Maximum arpack iterations.
    random_state : int, RandomState instance or None, default=None
        Seeds the arpack start vector, the randomized solver and the random
        starts of the pre-image solvers.
    center : bool, default=True
        Centre the data in feature space (footnote 9; the paper's kernel PCA).
        ``False`` diagonalises the uncentred Gram matrix (PCA of the second-moment
        operator, "uncentred kernel PCA"); projections then contain no mean term.

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (n_components,)
        Eigenvalues ``l lambda_k`` of the centred Gram matrix (eq. 35), in
        decreasing order; the feature-space variances are ``eigenvalues_ / l``.
    eigenvectors_ : ndarray of shape (n_samples, n_components)
        Coefficients ``alpha^k`` normalised so that ``||V^k||^2 = eigenvalues_[k]
        (alpha^k . alpha^k) = 1`` (eq. 35). Components with zero eigenvalue have
        ``alpha^k = 0``.
    expansions_ : KernelExpansion
        All components as one multi-output expansion over ``X_fit_``:
        ``expansions_.decision_function(X)`` equals ``transform(X)`` (the intercept
        holds the centring terms) and ``expansions_.output(k)`` is ``V^k``.
    X_fit_ : ndarray of shape (n_samples, n_features)
    kernel_ : Kernel
    K_fit_rows_ : ndarray of shape (n_samples,)
        Row means of the uncentred training Gram matrix.
    K_fit_all_ : float
        Mean of the training Gram matrix.
    n_components_ : int
    n_features_in_ : int

    Notes
    -----
    ``transform`` computes ``beta_k = (V^k . Phi~(x)) = sum_i alpha_i^k k~(x_i, x)``
    (eq. 36) with the centred kernel ``k~``; it equals scikit-learn's
    ``KernelPCA.transform`` up to the sign of each component. Eigenvector signs
    are fixed so that the largest ``|alpha_i^k|`` is positive.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.models import KernelPCA
    >>> from sparsekm.kernels import RBF
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> kpca = KernelPCA(n_components=4, kernel=RBF(0.5)).fit(X)
    >>> kpca.transform(X[:2]).shape
    (2, 4)
    >>> Z = kpca.denoise(X[:2], n_components=4).z  # pre-images of P_4 Phi(x)
    >>> Z.shape
    (2, 3)
    """

    # Fitted state restored by sparsekm.load (see docs/persistence.md).
    _persist_attrs = {
        "n_features_in_": persistence.spec.int(bind="n_features"),
        "eigenvalues_": persistence.spec.array("f", ("n_components",), finite=True),
        "eigenvectors_": persistence.spec.array("f", ("n_samples", "n_components"), finite=True),
        "X_fit_": persistence.spec.array("f", ("n_samples", "n_features"), finite=True),
        "kernel_": persistence.spec.kernel(),
        "K_fit_rows_": persistence.spec.array("f", ("n_samples",), finite=True),
        "K_fit_all_": persistence.spec.float(finite=True),
        "n_components_": persistence.spec.int(bind="n_components"),
        "expansions_": persistence.spec.expansion(n_terms="n_samples", n_features="n_features",
                                                  n_outputs="n_components"),
    }

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **KERNEL, "n_components": [*POSITIVE_INT, None],
        "eigen_solver": [StrOptions(set(_EIGEN_SOLVERS))], "tol": NON_NEGATIVE,
        "max_iter": [*POSITIVE_INT, None], "random_state": RANDOM_STATE, "center": BOOLEAN}

    @keyword_only_args
    def __init__(self, n_components=None, *, kernel=None, eigen_solver="auto", tol=0.0,
                 max_iter=None, random_state=None, center=True,
                 gamma="scale", degree=3, coef0=0.0):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.eigen_solver = eigen_solver
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.center = center

    # -- fitting -----------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit kernel PCA on ``X`` (eq. 35 on the centred Gram matrix).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        X = validate_X(self, X)
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"KernelPCA needs at least 2 samples; got {n} sample.")
        n_components = check_scalar(self.n_components, "n_components", "KernelPCA", kind="int",
                                    lower=1, allow_none=True)
        if self.eigen_solver not in _EIGEN_SOLVERS:
            raise ValueError(
                f"The 'eigen_solver' parameter of KernelPCA must be one of "
                f"{list(_EIGEN_SOLVERS)}. Got {self.eigen_solver!r} instead."
            )
        tol = check_scalar(self.tol, "tol", "KernelPCA", lower=0)
        max_iter = check_scalar(self.max_iter, "max_iter", "KernelPCA", kind="int", lower=1,
                                allow_none=True)
        if not isinstance(self.center, (bool, np.bool_)):
            raise ValueError(
                f"The 'center' parameter of KernelPCA must be a bool. Got {self.center!r} instead."
            )
        rng = check_random_state(self.random_state)
        kernel = estimator_kernel(self, X)
        if not kernel.is_psd:
            raise ValueError(
                f"KernelPCA needs a positive semi-definite kernel; {kernel!r} is not (its Gram "
                "matrix can have negative eigenvalues)."
            )
        X64 = np.asarray(X, dtype=np.float64)
        K = kernel(X64)
        if self.center:
            rows = K.mean(axis=0)
            total = float(rows.mean())
            # Centring in feature space (footnote 9), in place.
            K -= rows[:, None]
            K -= rows[None, :]
            K += total
        else:
            rows, total = np.zeros(n), 0.0

        k = n if n_components is None else min(n_components, n)
        solver = self.eigen_solver
        if solver == "auto":
            if n > 200 and k < 10:
                solver = "arpack"
            elif n > 200 and k < 0.8 * n:
                solver = "randomized"
            else:
                solver = "dense"
        if solver == "arpack" and k >= n - 1:
            solver = "dense"
        if solver == "dense":
            w, V = _top_eigh(K, k)
        elif solver == "arpack":
            v0 = rng.uniform(-1, 1, size=n)
            w, V = eigsh(K, k=k, which="LA", tol=tol, maxiter=max_iter, v0=v0)
        else:
            w, V = _randomized_eigh(K, k, random_state=rng)
        order = np.argsort(w)[::-1]
        w, V = w[order], V[:, order]
        # Deterministic signs: the largest |entry| of each eigenvector is positive.
        signs = np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(V.shape[1])])
        signs[signs == 0] = 1.0
        V = V * signs
        positive = w > max(float(w[0]) if w.size else 0.0, 0.0) * n * np.finfo(float).eps
        if n_components is None:
            w, V, positive = w[positive], V[:, positive], positive[positive]
            if w.size == 0:
                raise ValueError(
                    "KernelPCA found no component with a positive eigenvalue: the centred Gram "
                    "matrix is zero (are all samples identical?)."
                )
        # Maintenance note: ||V^k||^2 = alpha^T K~ alpha = w_k ||alpha||^2, so dividing the
        # unit eigenvector by sqrt(w_k) gives unit-norm axes in feature space (eq. 35).
        alphas = np.zeros_like(V)
        alphas[:, positive] = V[:, positive] / np.sqrt(w[positive])
        self.eigenvalues_ = np.where(positive, w, 0.0)
        self.eigenvectors_ = np.ascontiguousarray(alphas)  # as loaded from a file: same bits
        self.X_fit_ = X64
        self.kernel_ = kernel
        self.K_fit_rows_ = rows
        self.K_fit_all_ = total
        self.n_components_ = int(w.size)
        self.expansions_ = self._build_expansions()
        return self

    def _build_expansions(self):
        # sum_i a_i k~(x_i, x) = sum_i (a_i - sum(a)/l) k(x_i, x) - a.m + sum(a) m_all
        A = self.eigenvectors_
        if not self.center:
            return KernelExpansion(self.X_fit_, A, self.kernel_)
        n = A.shape[0]
        colsum = A.sum(axis=0)
        coef = A - colsum / n
        intercept = -(A.T @ self.K_fit_rows_) + colsum * self.K_fit_all_
        return KernelExpansion(self.X_fit_, coef, self.kernel_, intercept)

    # -- features ------------------------------------------------------------------
    @property
    def _n_features_out(self):
        """Number of output features, for ``get_feature_names_out`` (``kernelpca0``, ...)."""
        return self.n_components_

    def _check_X(self, X):
        check_is_fitted(self)
        X = validate_X(self, X, reset=False)
        return np.asarray(X, dtype=np.float64)

    @dask_rowwise
    def transform(self, X):
        """Kernel PCA features ``beta_k = sum_i alpha_i^k k~(x_i, x)`` (eq. 36).

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_samples, n_features)
            A dask array gives a dask array (see :mod:`sparsekm.parallel`).

        Returns
        -------
        ndarray of shape (n_samples, n_components_)
        """
        X = self._check_X(X)
        A = self.eigenvectors_
        if not self.center:
            return self.kernel_.mmv(X, self.X_fit_, A)
        # (K_x - m_x 1^T - 1 r^T + c) A with K_x A and the row means m_x = K_x 1/l from one
        # engine product, so K(X, X_fit) never exists beyond one block.
        n = A.shape[0]
        KA = self.kernel_.mmv(X, self.X_fit_, np.column_stack([A, np.full(n, 1.0 / n)]))
        s = A.sum(axis=0)
        return KA[:, :-1] - KA[:, -1:] * s + (self.K_fit_all_ * s - self.K_fit_rows_ @ A)

    # -- expansions -------------------------------------------------------------------
    def _check_n(self, n_components):
        if n_components is None:
            return self.n_components_
        return check_scalar(n_components, "n_components", "KernelPCA projection", kind="int",
                            lower=1, upper=self.n_components_)

    def _expansion_from_scores(self, B):
        """``mean + sum_{k<=n} B[:, k] V^k`` as a multi-output expansion (one column per row)."""
        A = self.eigenvectors_[:, :B.shape[1]]
        if not self.center:
            return KernelExpansion(self.X_fit_, A @ B.T, self.kernel_)
        n = A.shape[0]
        # gamma_i = sum_k beta_k alpha_i^k + (1 - sum_k beta_k sum_j alpha_j^k) / l
        coef = A @ B.T + (1.0 - B @ A.sum(axis=0))[None, :] / n
        return KernelExpansion(self.X_fit_, coef, self.kernel_)

    def projection_expansion(self, X, n_components=None):
        """``mean + P_n Phi~(x)`` (eq. 42) for each row of ``X`` as one expansion.

        With ``center=False`` it is the plain projection ``P_n Phi(x)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        n_components : int, default=None
            Number of components ``n`` (default all).

        Returns
        -------
        KernelExpansion
            Over the training points ``X_fit_``, with one output column per row of
            ``X``: ``sum_i gamma_i Phi(x_i)``, ``gamma_i = sum_k beta_k alpha_i^k + 1/l``
            (including the centring terms), ready for any pre-image solver.
        """
        n = self._check_n(n_components)
        B = self.transform(X)[:, :n]
        return self._expansion_from_scores(B)

    # -- pre-images -------------------------------------------------------------------------
    def _preimage_kwargs(self, kwargs):
        kw = dict(kwargs)
        kw.setdefault("random_state", self.random_state)
        return kw

    def inverse_transform(self, X, method="auto", **kwargs):
        """Compression: reconstruct inputs from their first ``n`` features (pre-images).

        Parameters
        ----------
        X : array-like of shape (n_samples, n)
            Kernel PCA features ``beta_1..beta_n`` (``n <= n_components_``; the first
            ``n`` components are used).
        method : {"auto", "fixed-point", "gradient", "exact"}, default="auto"
            Pre-image solver (:func:`sparsekm.preimage.preimage`).
        **kwargs
            Passed to the solver (``n_init``, ``max_iter``, ``tol``, ``z0``,
            ``random_state``). By default the training inputs serve as extra
            random starts (``X_init``) and ``n_init=3``.

        Returns
        -------
        ndarray of shape (n_samples, n_features)

        Notes
        -----
        Not evaluated chunk by chunk: the random starts of the pre-image solvers
        are drawn for all rows at once, so splitting the rows would change the
        result. A dask array is refused (``TypeError``), never computed on the client.
        """
        check_is_fitted(self)
        normalise_method(method, "KernelPCA.inverse_transform")
        from ..utils.validation import check_array

        B = check_array(X, "X", dtype=np.float64)
        if B.shape[1] > self.n_components_:
            raise ValueError(
                f"X has {B.shape[1]} features, but KernelPCA is expecting at most "
                f"{self.n_components_} features (components) as input."
            )
        kw = self._preimage_kwargs(kwargs)
        kw.setdefault("X_init", self.X_fit_)
        kw.setdefault("n_init", 3)
        res = preimage(self._expansion_from_scores(B), method=method, **kw)
        return res.z

    def denoise(self, X, n_components=None, method="auto", **kwargs):
        """Denoise ``X``: map, project onto ``n`` components, compute pre-images.

        The pre-image of ``mean + P_n Phi~(x)`` (eq. 42) is computed for all rows at
        once, starting from the noisy point itself (``z0 = x``) as in the paper.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        n_components : int, default=None
            Number of components ``n`` (default all).
        method : {"auto", "fixed-point", "gradient", "exact"}, default="auto"
        **kwargs
            Passed to the solver; default ``n_init=1`` (the noisy point; restarts
            only after a vanishing denominator) and ``max_iter=200``.

        Returns
        -------
        PreimageResult
            ``z`` of shape (n_samples, n_features) holds the denoised points;
            ``rho`` the achieved ``||P_n Phi(x) - Phi(z)||^2`` (eq. 41).
        """
        normalise_method(method, "KernelPCA.denoise")
        if is_dask_array(X):
            # The pre-image solver's restarts draw from one random stream for all rows,
            # so a chunk-wise result would depend on the chunking: refuse rather than
            # silently compute on the client and return numpy.
            raise TypeError(
                "KernelPCA.denoise does not take a dask array (it returns a PreimageResult "
                "computed in memory); denoise in-memory blocks of rows, e.g. "
                "kpca.denoise(X[i:j].compute()); transform maps over dask chunks.")
        X = self._check_X(X)
        psi = self.projection_expansion(X, n_components)
        kw = self._preimage_kwargs(kwargs)
        kw.setdefault("z0", X)
        kw.setdefault("n_init", 1)
        kw.setdefault("X_init", self.X_fit_)
        return preimage(psi, method=method, **kw)

    def component_expansion(self, components=None):
        """The principal axes ``V^k = sum_i alpha_i^k Phi~(x_i)`` as one expansion.

        Parameters
        ----------
        components : array-like of int, default=None
            Component indices (default all).

        Returns
        -------
        KernelExpansion
            Over ``X_fit_``, one output column per component, no intercept.
        """
        check_is_fitted(self)
        idx = np.arange(self.n_components_) if components is None else np.asarray(components)
        if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer) or (
                idx.min() < 0 or idx.max() >= self.n_components_):
            raise ValueError(
                f"components must be a non-empty list of indices in [0, {self.n_components_}); "
                f"got {components!r}."
            )
        A = self.eigenvectors_[:, idx]
        if not self.center:
            return KernelExpansion(self.X_fit_, A, self.kernel_)
        return KernelExpansion(self.X_fit_, A - A.sum(axis=0) / A.shape[0], self.kernel_)

    def component_preimages(self, components=None, method="auto", **kwargs):
        """Pre-images of the principal axes ``V^k`` (interpretation, fig. 8).

        Parameters
        ----------
        components : array-like of int, default=None
            Component indices (default all).
        method : {"auto", "fixed-point", "gradient", "exact"}, default="auto"
        **kwargs
            Passed to the solver (default ``n_init=5`` with the training inputs as
            extra starts).

        Returns
        -------
        PreimageResult
            ``z`` of shape (n_selected, n_features); ``beta`` the scale of the best
            one-term approximation ``beta Phi(z)`` of ``V^k``.
        """
        psi = self.component_expansion(components)
        kw = self._preimage_kwargs(kwargs)
        kw.setdefault("X_init", self.X_fit_)
        return preimage(psi, method=method, **kw)


def linear_pca_denoise(X_train, X, n_components):
    """Linear PCA baseline: project ``X`` onto the first ``n`` principal axes of ``X_train``.

    Parameters
    ----------
    X_train : array-like of shape (n_train, n_features)
    X : array-like of shape (n_samples, n_features)
    n_components : int or array-like of int
        One value or several (a reconstruction for each).

    Returns
    -------
    ndarray of shape (n_samples, n_features), or a list of them (one per ``n``).
    """
    from ..utils.validation import check_array

    X_train = check_array(X_train, "X_train", dtype=np.float64)
    X = check_array(X, "X", dtype=np.float64)
    if X.shape[1] != X_train.shape[1]:
        raise ValueError(
            f"X has {X.shape[1]} features, but X_train has {X_train.shape[1]} features."
        )
    many = np.ndim(n_components) > 0
    ns = [check_scalar(int(v) if isinstance(v, np.integer) else v, "n_components",
                       "linear_pca_denoise", kind="int", lower=1,
                       upper=min(X_train.shape)) for v in np.atleast_1d(n_components)]
    mean = X_train.mean(axis=0)
    _, _, Vt = np.linalg.svd(X_train - mean, full_matrices=False)
    C = X - mean
    out = [mean + (C @ Vt[:n].T) @ Vt[:n] for n in ns]
    return out if many else out[0]
