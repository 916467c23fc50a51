"""Kernels of Gaussian-process and kernel-ridge users: Matérn (nu = 1/2, 3/2, 5/2),
rational quadratic and Laplacian, with the conventions of scikit-learn's
``sklearn.gaussian_process.kernels`` and ``sklearn.metrics.pairwise``, so that
:func:`sparsekm.interop.kernel_from_sklearn_gp` converts fitted models exactly.
"""

from __future__ import annotations

import math

import numpy as np

from ..utils.validation import check_scalar
from .core import Kernel, RadialKernel, _namespace_of, register_kernel

__all__ = ["Matern", "RationalQuadratic", "Laplacian"]


@register_kernel
class Matern(RadialKernel):
    """Matérn kernel with ``nu`` in {1/2, 3/2, 5/2} (Rasmussen & Williams, eq. 4.14-4.17).

    With ``r = ||x - y||`` and ``l`` the length scale:

    ==========  ==========================================================
    ``nu=0.5``  ``exp(-r / l)``
    ``nu=1.5``  ``(1 + s) exp(-s)``, ``s = sqrt(3) r / l``
    ``nu=2.5``  ``(1 + s + s^2 / 3) exp(-s)``, ``s = sqrt(5) r / l``
    ==========  ==========================================================

    as scikit-learn's ``Matern(length_scale, nu)`` (isotropic). The profile derivative
    ``k'(r2) = dk/d(r2)`` is ``-(3 / (2 l^2)) exp(-s)`` for 3/2 and
    ``-(5 / (6 l^2)) (1 + s) exp(-s)`` for 5/2, finite at ``r = 0``; for 1/2 it is
    ``-exp(-r/l) / (2 l r)``, unbounded as ``r -> 0`` (the kernel has a cusp): at
    ``r = 0`` the gradient takes the subgradient 0, and the fixed-point
    iteration (eq. 10), which divides by sums of ``k'``, is refused
    (``supports_fixed_point = False``); the pre-image and reduced-set solvers then use
    gradient steps.

    Parameters
    ----------
    length_scale : float > 0
    nu : {0.5, 1.5, 2.5}
    """

    _param_names = ("length_scale", "nu")
    _NUS = (0.5, 1.5, 2.5)

    def __init__(self, length_scale=1.0, nu=1.5):
        self.length_scale = check_scalar(length_scale, "length_scale", "Matern", lower=0,
                                         lower_inclusive=False)
        nu = check_scalar(nu, "nu", "Matern")
        if nu not in self._NUS:
            raise ValueError(
                f"The 'nu' parameter of Matern must be 0.5, 1.5 or 2.5 (the half-integer "
                f"Matérn kernels with closed forms and gradients); got {nu!r}. nu = inf is "
                "the RBF kernel, RBF(gamma=1 / (2 length_scale^2)).")
        self.nu = nu
        # eq. 10 divides by sums of k', which diverge at the cusp of nu = 1/2
        self.supports_fixed_point = nu != 0.5

    def profile(self, r2):
        xp, r2 = _namespace_of(r2)
        r = r2 ** 0.5
        if self.nu == 0.5:
            return xp.exp(-r / self.length_scale)
        if self.nu == 1.5:
            s = r * (math.sqrt(3.0) / self.length_scale)
            return (1.0 + s) * xp.exp(-s)
        s = r * (math.sqrt(5.0) / self.length_scale)
        return (1.0 + s + s * s / 3.0) * xp.exp(-s)

    def profile_derivative(self, r2):
        xp, r2 = _namespace_of(r2)
        r = r2 ** 0.5
        l2 = self.length_scale ** 2
        if self.nu == 0.5:
            positive = r > 0
            safe = r + (~positive)  # 1 where r = 0: the subgradient 0 is taken there
            return -xp.exp(-r / self.length_scale) / (2.0 * self.length_scale * safe) * positive
        if self.nu == 1.5:
            s = r * (math.sqrt(3.0) / self.length_scale)
            return (-1.5 / l2) * xp.exp(-s)
        s = r * (math.sqrt(5.0) / self.length_scale)
        return (-5.0 / (6.0 * l2)) * (1.0 + s) * xp.exp(-s)


@register_kernel
class RationalQuadratic(RadialKernel):
    """Rational quadratic kernel ``k(x, y) = (1 + ||x - y||^2 / (2 alpha l^2))^(-alpha)``.

    Rasmussen & Williams, eq. 4.19; scikit-learn's ``RationalQuadratic(length_scale,
    alpha)``. A scale mixture of RBF kernels (``alpha -> inf`` gives the RBF with
    ``gamma = 1 / (2 l^2)``); ``k'(r2) = -(1 / (2 l^2)) (1 + r2 / (2 alpha l^2))^(-alpha-1)``.

    Parameters
    ----------
    length_scale : float > 0
    alpha : float > 0
    """

    _param_names = ("length_scale", "alpha")

    def __init__(self, length_scale=1.0, alpha=1.0):
        self.length_scale = check_scalar(length_scale, "length_scale", "RationalQuadratic",
                                         lower=0, lower_inclusive=False)
        self.alpha = check_scalar(alpha, "alpha", "RationalQuadratic", lower=0,
                                  lower_inclusive=False)

    def _base(self, r2):
        return 1.0 + r2 / (2.0 * self.alpha * self.length_scale ** 2)

    def profile(self, r2):
        _, r2 = _namespace_of(r2)
        return self._base(r2) ** (-self.alpha)

    def profile_derivative(self, r2):
        _, r2 = _namespace_of(r2)
        return (-0.5 / self.length_scale ** 2) * self._base(r2) ** (-self.alpha - 1.0)


@register_kernel
class Laplacian(Kernel):
    """Laplacian kernel ``k(x, y) = exp(-gamma ||x - y||_1)`` (scikit-learn's ``laplacian``).

    Neither radial in the Euclidean norm nor a dot-product kernel, so the
    fixed-point iteration and profile sums do not apply (they are refused); the
    gradient ``d k(x, y) / d y = -gamma sign(y - x) k(x, y)`` (the subgradient 0 in a
    coordinate where ``y = x``) serves the gradient-based pre-image and refine steps.
    numpy engine only.

    Parameters
    ----------
    gamma : float > 0
    """

    _param_names = ("gamma",)
    #: the gradient-based pre-image accepts it (gradient hooks implemented)
    input_gradient = True

    def __init__(self, gamma=1.0):
        self.gamma = check_scalar(gamma, "gamma", "Laplacian", lower=0, lower_inclusive=False)

    def diag(self, X, *, backend=None):
        xp, to_numpy, X = self._prepare_one(X, backend)
        return np.ones(X.shape[0], dtype=X.dtype)

    def _block(self, X, Y, x_sq, y_sq):
        from scipy.spatial.distance import cdist

        D = cdist(X, Y, "cityblock").astype(X.dtype, copy=False)
        D *= -self.gamma
        return np.exp(D, out=D)

    def _gradient_rows(self, X, y):
        k = np.exp(-self.gamma * np.abs(y[None, :] - X).sum(axis=1))
        return (-self.gamma * k)[:, None] * np.sign(y[None, :] - X)

    def _gradient_sum_block(self, X, Z, W, x_sq, z_sq):
        M = W * self._block(X, Z, None, None)
        G = np.empty(Z.shape, dtype=M.dtype)
        for j in range(Z.shape[1]):
            G[:, j] = (M * np.sign(Z[None, :, j] - X[:, j, None])).sum(axis=0)
        G *= -self.gamma
        return G
