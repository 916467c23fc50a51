"""Kernel PCA on a sampled and/or quantized Gram matrix (Achlioptas et al., sections 2-3)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._constraints import KERNEL, POSITIVE, POSITIVE_INT, RANDOM_STATE
from ..approx.randomized import (
    ThreadedCSROperator,
    estimate_error_norm,
    orthogonal_iteration,
    quantize_gram,
    sparsify_gram,
    sparsify_quantize_gram,
)
from ..approx.randomized.eigensolver import fix_signs
from ..config import single_threaded_blas
from ..expansion import KernelExpansion
from ..kernels import estimator_kernel
from ..parallel import dask_rowwise
from ..persistence import register, spec
from ..utils._random import as_generator
from ..utils.validation import OutputContainerMixin, check_scalar, validate_X

__all__ = ["RandomizedKernelPCA"]

_SAMPLINGS = ("none", "sparsify", "quantize", "both")
_SOLVERS = ("orthogonal-iteration", "lanczos")


@register
class RandomizedKernelPCA(ClassNamePrefixFeaturesOutMixin, OutputContainerMixin, TransformerMixin,
                          BaseEstimator):
    """Kernel PCA whose eigenvectors come from a randomized Gram matrix ``K_hat``.

    The Gram matrix is replaced by an unbiased random matrix (``E[K_hat] = K``,
    section 3 of Achlioptas, McSherry & Schölkopf): sparsified (each entry kept
    with probability ``1/s`` and scaled by ``s``; only kept entries are computed),
    1-bit quantized (``+-b``), or both. The ``l`` leading eigenpairs
    ``(lambda_n, alpha^n)`` of ``K_hat`` are found by orthogonal iteration (section
    2) or Lanczos (``scipy.sparse.linalg.eigsh``), and the features are those of
    section 2,

        f_n(x) = lambda_n^{-1/2} sum_i alpha_i^n k(x_i, x),

    evaluated with the *exact* kernel. As in the paper, ``K`` is not centred.
    Theorems 2-4 bound how far these features are from the exact ones in terms of
    ``||K_hat - K||`` and the eigenvalue gaps (see
    :mod:`sparsekm.approx.randomized`).

    Parameters
    ----------
    n_components : int, default=2
        ``l``, the number of features.
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
    sampling : {"none", "sparsify", "quantize", "both"}, default="none"
        How ``K`` is simplified; ``"none"`` is exact (uncentred) kernel PCA.
    s : float >= 1, default=10.0
        Sampling parameter for "sparsify" and "both" (about ``m^2/s`` entries kept).
    solver : {"orthogonal-iteration", "lanczos"}, default="orthogonal-iteration"
    max_iter : int, default=1000
        Iterations of orthogonal iteration (Lanczos: ``eigsh``'s ``maxiter``).
    tol : float, default=1e-7
        Relative residual tolerance of the eigenpairs.
    n_oversamples : int, default=0
        Extra columns for orthogonal iteration (``0`` is the paper's algorithm).
    noise_tol : float, optional
        Noise-matched stopping rule for orthogonal iteration on a sampled matrix:
        stop as soon as the block residual ``||K_hat F - F diag(theta)||`` is at most
        ``noise_tol * eps_hat``, with ``eps_hat`` the estimate of ``||E_K||`` from
        :func:`~sparsekm.approx.randomized.estimate_error_norm`. The eigenvectors of
        ``K_hat`` are only within ``||E_K|| / gap`` of the exact ones (Theorem 2);
        stopping here keeps that guarantee up to a factor ``1 + noise_tol``
        (:func:`~sparsekm.approx.randomized.theorem2_bound_inexact`). ``None``: solve
        to ``tol``.
    block_size : int, optional
        Rows per block when building ``K_hat``.
    random_state : None, int or RandomState
        Seeds the sampling and the solver's start.

    Notes
    -----
    A sampled ``K_hat`` is indefinite (its noise spectrum reaches about
    ``-||E_K||``), so on sampled matrices orthogonal iteration runs on
    ``K_hat + eps_hat I``: otherwise, once ``||E_K|| > lambda_l``, it would converge
    to the noise's negative eigenvalues, which dominate in magnitude.

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (n_components,)
        Leading eigenvalues of ``K_hat`` (decreasing).
    eigenvectors_ : ndarray of shape (n_samples, n_components)
        Unit eigenvectors ``alpha^n`` (columns).
    expansion_ : KernelExpansion
        The feature extractors as one multi-output expansion: vectors are the
        training points, ``coef[:, n] = alpha^n / sqrt(lambda_n)``.
    kernel_ : Kernel
    n_iter_ : int
        Solver iterations (orthogonal iteration) or matrix products (Lanczos).
    gram_nbytes_ : int
        Bytes held by ``K_hat`` (dense float64, CSR arrays, or packed bits).
    gram_density_ : float
        Fraction of stored non-zero entries of ``K_hat`` (1 unless sparsified).
    error_norm_estimate_ : float
        ``eps_hat``, the estimate of ``||E_K||`` (sampled matrices, orthogonal
        iteration only).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.models import RandomizedKernelPCA
    >>> X = np.random.default_rng(0).normal(size=(300, 4))
    >>> kpca = RandomizedKernelPCA(n_components=3, sampling="sparsify", s=4,
    ...                            random_state=0).fit(X)
    >>> kpca.transform(X[:2]).shape
    (2, 3)
    """

    # Fitted state restored by sparsekm.load (see docs/persistence.md).
    _persist_attrs = {
        "n_features_in_": spec.int(bind="n_features"),
        "gram_nbytes_": spec.int(),
        "gram_density_": spec.float(),
        "kernel_": spec.kernel(),
        "eigenvalues_": spec.array("f", ("n_components",)),
        "eigenvectors_": spec.array("f", ("n_samples", "n_components")),
        "expansion_": spec.expansion(n_terms="n_samples", n_features="n_features",
                                     n_outputs="n_components"),
        "n_iter_": spec.int(),
        "_n_features_out": spec.int(bind="n_components"),
        "error_norm_estimate_": spec.float(optional=True),
    }

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **KERNEL, "n_components": POSITIVE_INT, "sampling": [StrOptions(set(_SAMPLINGS))],
        "s": [Interval(Real, 1, None, closed="left")], "solver": [StrOptions(set(_SOLVERS))],
        "max_iter": POSITIVE_INT, "tol": POSITIVE,
        "n_oversamples": [Interval(Integral, 0, None, closed="left")],
        "noise_tol": [*POSITIVE, None], "block_size": [*POSITIVE_INT, None],
        "random_state": RANDOM_STATE}

    def __init__(self, n_components=2, *, kernel=None, sampling="none", s=10.0,
                 solver="orthogonal-iteration", max_iter=1000, tol=1e-7, n_oversamples=0,
                 noise_tol=None, block_size=None, random_state=None,
                 gamma="scale", degree=3, coef0=0.0):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.sampling = sampling
        self.s = s
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.n_oversamples = n_oversamples
        self.noise_tol = noise_tol
        self.block_size = block_size
        self.random_state = random_state

    def _check_params(self, n_samples):
        owner = type(self).__name__
        if self.sampling not in _SAMPLINGS:
            raise ValueError(f"The 'sampling' parameter of {owner} must be one of "
                             f"{list(_SAMPLINGS)}. Got {self.sampling!r} instead.")
        if self.solver not in _SOLVERS:
            raise ValueError(f"The 'solver' parameter of {owner} must be one of "
                             f"{list(_SOLVERS)}. Got {self.solver!r} instead.")
        ell = check_scalar(self.n_components, "n_components", owner, kind="int", lower=1)
        if ell > n_samples:
            raise ValueError(f"n_components={ell} must be <= the number of training samples "
                             f"(n_samples = {n_samples}).")
        # checked whatever the sampling (as sparsekm.load checks it): an s < 1 accepted
        # here with sampling="none" made a file that load refused
        if isinstance(self.s, (int, float)) and not isinstance(self.s, bool) and self.s < 1:
            raise ValueError(f"The 's' parameter of {owner} must be a float >= 1 (entries "
                             f"are kept with probability 1/s). Got {self.s!r} instead.")
        check_scalar(self.s, "s", owner, lower=1)
        check_scalar(self.max_iter, "max_iter", owner, kind="int", lower=1)
        check_scalar(self.tol, "tol", owner, lower=0, lower_inclusive=False)
        check_scalar(self.n_oversamples, "n_oversamples", owner, kind="int", lower=0)
        if self.noise_tol is not None:
            check_scalar(self.noise_tol, "noise_tol", owner, lower=0, lower_inclusive=False)
        return ell

    def _gram(self, X, kernel, rng):
        if self.sampling == "none":
            return kernel(X, block_size=self.block_size)
        if self.sampling == "sparsify":
            return sparsify_gram(X, kernel, self.s, random_state=rng, block_size=self.block_size)
        if self.sampling == "quantize":
            return quantize_gram(X, kernel, random_state=rng, block_size=self.block_size)
        return sparsify_quantize_gram(X, kernel, self.s, random_state=rng,
                                      block_size=self.block_size)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Build ``K_hat`` from ``X`` and compute its leading eigenpairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        X = validate_X(self, X)
        ell = self._check_params(X.shape[0])
        kernel = estimator_kernel(self, X)
        rng = as_generator(check_random_state(self.random_state))
        A = self._gram(X, kernel, rng)
        lam, alpha, n_iter = self._solve(A, ell, rng)
        positive = lam > np.finfo(np.float64).eps * max(float(np.max(np.abs(lam))), 1e-300) \
            * X.shape[0]
        if not positive.all():
            raise ValueError(
                f"Only {int(positive.sum())} of the {ell} leading eigenvalues of the "
                f"{'sampled ' if self.sampling != 'none' else ''}Gram matrix are positive "
                f"(eigenvalues {lam.tolist()}); f_n(x) = lambda_n^(-1/2) ... needs lambda_n > 0. "
                "Reduce n_components (or s)."
            )
        if scipy.sparse.issparse(A):
            self.gram_nbytes_ = int(A.data.nbytes + A.indices.nbytes + A.indptr.nbytes)
            self.gram_density_ = float(A.nnz) / float(X.shape[0]) ** 2
        elif isinstance(A, np.ndarray):
            self.gram_nbytes_, self.gram_density_ = int(A.nbytes), 1.0
        else:
            self.gram_nbytes_, self.gram_density_ = int(A.nbytes), 1.0
        self.kernel_ = kernel
        self.eigenvalues_ = lam
        self.eigenvectors_ = alpha
        self.expansion_ = KernelExpansion(X, alpha / np.sqrt(lam), kernel)
        self.n_iter_ = int(n_iter)
        self._n_features_out = ell
        return self

    def _solve(self, A, ell, rng):
        if scipy.sparse.issparse(A):
            # scipy's CSR product is single-threaded but releases the GIL: split the rows
            # over the engine's threads, and keep BLAS (only the solver's thin basis
            # operations) on one thread meanwhile (measurement: CHANGELOG, issue 35).
            with single_threaded_blas():
                return self._solve_op(A, ThreadedCSROperator(A), ell, rng)
        return self._solve_op(A, A, ell, rng)

    def _solve_op(self, A, op, ell, rng):
        m = A.shape[0]
        if self.solver == "orthogonal-iteration":
            shift, atol = 0.0, None
            if self.sampling != "none":
                eps_hat = estimate_error_norm(A, self.sampling, s=self.s)
                shift = eps_hat
                if self.noise_tol is not None:
                    atol = self.noise_tol * eps_hat
                self.error_norm_estimate_ = eps_hat
            lam, V, n_iter, _ = orthogonal_iteration(
                op, ell, max_iter=self.max_iter, tol=self.tol, n_oversamples=self.n_oversamples,
                random_state=rng, shift=shift, atol=atol)
            return lam, V, n_iter
        if ell >= m - 1:  # eigsh needs k < m - 1 for symmetric problems; tiny problems
            dense = A if isinstance(A, np.ndarray) else (
                A.toarray() if hasattr(A, "toarray") else A @ np.eye(m))
            w, V = np.linalg.eigh(np.asarray(dense, dtype=np.float64))
            order = np.argsort(w)[::-1][:ell]
            return w[order], fix_signs(V[:, order]), 1
        counter = {"n": 0}
        op = scipy.sparse.linalg.aslinearoperator(op)

        def matvec(v):
            counter["n"] += 1
            return op @ v

        wrapped = scipy.sparse.linalg.LinearOperator(A.shape, matvec=matvec, dtype=np.float64)
        v0 = rng.standard_normal(m)
        w, V = scipy.sparse.linalg.eigsh(wrapped, k=ell, which="LA", tol=self.tol, v0=v0,
                                         maxiter=self.max_iter * m)
        order = np.argsort(w)[::-1]
        return w[order], fix_signs(V[:, order]), counter["n"]

    @dask_rowwise
    def transform(self, X):
        """Features ``f_n(x) = lambda_n^{-1/2} sum_i alpha_i^n k(x_i, x)``.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_samples, n_features)
            A dask array gives a dask array (see :mod:`sparsekm.parallel`).

        Returns
        -------
        ndarray (or dask array) of shape (n_samples, n_components)
        """
        check_is_fitted(self, "expansion_")
        X = validate_X(self, X, reset=False)
        return self.expansion_.decision_function(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
