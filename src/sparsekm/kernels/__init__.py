"""Kernel functions as small value objects.

Every kernel offers

* ``kernel(X, Y=None)``: the Gram matrix ``K[i, j] = k(X[i], Y[j])``, computed in
  row blocks (``block_size``) so the temporaries stay bounded;
* ``kernel.diag(X)``: ``k(x_i, x_i)`` without the full matrix;
* ``kernel.mmv(X, Y, C)``: the product ``K(X, Y) @ C`` without storing ``K``
  beyond one row block (the operation every kernel expansion is made of);
* ``kernel.gradient_y(X, y)``: ``d k(x_i, y) / d y`` for each row ``x_i``;
* ``kernel.weighted_sums(X, Z, W)``: ``sum_i W[i, u] k(x_i, z_u)`` (or, with
  ``derivative=True``, of the profile derivative ``k'``), optionally with the first
  moment ``sum_i (...) x_i``, for every ``z_u`` at once: the kernel sums inside the
  pre-image and reduced-set solvers (objective, fixed-point iteration);
* ``kernel.gradient_sum(X, Z, W)``: ``sum_i W[i, u] * d k(x_i, z_u) / d z_u`` for
  every ``z_u`` at once, the vectorised gradient used by pre-image, reduced-set and
  SLMC optimisation (for radial and dot-product kernels, built on ``weighted_sums``);
* ``kernel.diag_gradient(Z)``: ``d k(z, z) / d z`` for each row.

Radial kernels ``k(x, y) = k(||x - y||^2)`` additionally expose the profile
``k(r2)`` and its derivative ``k'(r2)`` with respect to ``r2`` (eq. 10 of
Schölkopf et al., *Fast approximation of support vector kernel expansions*).
Dot-product kernels ``k(x, y) = f(x . y)`` expose ``f`` and ``f'``.

Conventions (see ``docs/kernels.md``):

========================  ==============================================  =====================
class                     k(x, y)                                         papers' notation
========================  ==============================================  =====================
``RBF(gamma)``            ``exp(-gamma ||x - y||^2)``                     ``gamma = 1/(2 sigma^2)``
``Polynomial(d, c, g)``   ``(g x.y + c)^d``                               eq. 26/38 (``g = 1``)
``Sigmoid(kappa, theta)`` ``tanh(kappa x.y + theta)``                     eq. 39
``InverseMultiquadric(c)`` ``(||x - y||^2 + 1)^c``, ``c < 0``             eq. 10 remark
``Linear()``              ``x.y``
========================  ==============================================  =====================

Rooms: :mod:`~sparsekm.kernels.core` (the engine and the classic kernels),
:mod:`~sparsekm.kernels.projected` (random projections), :mod:`~sparsekm.kernels.gp`
(Matérn, rational quadratic, Laplacian).
"""

from .core import *  # noqa: F401,F403
from .core import __all__ as _core_all
from .core import estimator_kernel, kernel_from_dict, register_kernel, resolve_kernel  # noqa: F401
from .gp import *  # noqa: F401,F403
from .gp import __all__ as _gp_all
from .projected import *  # noqa: F401,F403
from .projected import __all__ as _projected_all

__all__ = [*_core_all, *_projected_all, *_gp_all]
