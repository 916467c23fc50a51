"""Randomized rounding of kernel expansions (section 4, Theorem 5).

:func:`randomized_rounding` replaces an expansion's coefficients by unbiased
random ones, most of them zero; :func:`theorem5_s` and :func:`theorem5_bounds` give
Theorem 5's sampling parameter and guarantees (Achlioptas, McSherry & Schölkopf 2001).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...expansion import KernelExpansion
from ...utils.validation import check_scalar
from ._common import _as_generator

__all__ = [
    "randomized_rounding",
    "theorem5_s",
    "theorem5_bounds",
]


# -- randomized rounding (section 4) ----------------------------------------------------
def randomized_rounding(expansion, s, random_state=None):
    """Randomized rounding of a kernel expansion's coefficients (section 4).

    For each coefficient: if ``|alpha_i| >= 1/s`` keep ``alpha_hat_i = s alpha_i``;
    otherwise ``alpha_hat_i = sgn(alpha_i)`` with probability ``s |alpha_i|`` and
    ``0`` otherwise. The returned expansion has coefficients ``alpha_hat_i / s``
    (``f_hat(x) = s^{-1} sum_i alpha_hat_i k(x, x_i)``) and only the non-zero terms,
    so ``E[f_hat(x)] = f(x)`` for every ``x`` and any ``s > 0``. When
    ``s >= 1 / min_i |alpha_i|`` nothing is random and ``f_hat = f`` exactly.

    Parameters
    ----------
    expansion : KernelExpansion
        Single- or multi-output; each output column is rounded independently and a
        term is kept when any of its coefficients is non-zero. The intercept is
        kept as is.
    s : float > 0
        Larger ``s`` keeps more terms (about ``s * sum_i |alpha_i|`` of the small
        ones). Theorem 5's choice for a unit vector ``alpha`` is :func:`theorem5_s`.
    random_state : None, int, numpy Generator or RandomState

    Returns
    -------
    KernelExpansion
        If every coefficient rounds to zero, one term with coefficient ``0`` is
        kept so that ``f_hat(x) = intercept``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm import KernelExpansion
    >>> from sparsekm.kernels import RBF
    >>> from sparsekm.approx.randomized import randomized_rounding
    >>> rng = np.random.default_rng(0)
    >>> psi = KernelExpansion(rng.normal(size=(1000, 2)), rng.normal(size=1000) / 30, RBF())
    >>> randomized_rounding(psi, s=5, random_state=0).n_terms < 400
    True
    """
    if not isinstance(expansion, KernelExpansion):
        raise TypeError(f"randomized_rounding needs a KernelExpansion; got "
                        f"{type(expansion).__name__}.")
    s = check_scalar(s, "s", "randomized_rounding", lower=0, lower_inclusive=False)
    rng = _as_generator(random_state)
    if expansion.n_terms == 0:  # f = intercept: nothing to round
        return expansion.copy()
    alpha = np.asarray(expansion.coef, dtype=np.float64)
    mag = np.abs(alpha)
    keep_exact = (mag >= 1.0 / s) | (s * mag >= 1.0)
    u = rng.random(alpha.shape)
    rounded = np.sign(alpha) * (u < s * mag)  # alpha_hat_i for the small coefficients
    coef = np.where(keep_exact, alpha, rounded / s)
    nonzero = (coef != 0).reshape(coef.shape[0], -1).any(axis=1)
    if not nonzero.any():
        nonzero[int(np.argmax(mag.reshape(mag.shape[0], -1).max(axis=1)))] = True
    return KernelExpansion(expansion.vectors[nonzero], coef[nonzero], expansion.kernel,
                           expansion.intercept)


def theorem5_s(eps, T, c, m):
    """Theorem 5's sampling parameter ``s = 2 c sqrt(m) / (eps T)``.

    Parameters
    ----------
    eps : float in (0, 2/3)
        Relative error.
    T : float > 0, at most ``(c / eps) sqrt(m / log m)``
        Triviality threshold: ``f(x)`` is trivial if ``f(x) < T sqrt(log m)``.
    c : float > 0
        Width of the interval holding the values ``k(x, .)`` (1 for an RBF kernel).
    m : int >= 2
        Number of expansion terms.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``eps`` is outside ``(0, 2/3)``, ``T`` exceeds ``(c/eps) sqrt(m / log m)``,
        or any argument is out of range.
    """
    return theorem5_bounds(eps, T, c, m)["s"]


def theorem5_bounds(eps, T, c, m):
    """Everything Theorem 5 states for ``(eps, T, c, m)``.

    Returns
    -------
    dict
        ``s`` (``2 c sqrt(m) / (eps T)``), ``max_nonzero`` (``4 c m / (eps T)``, the
        bound on non-zero ``alpha_hat_i``), ``trivial_threshold`` (``T sqrt(log m)``),
        ``error_threshold`` (``(2 eps / 3) T sqrt(log m)``, the absolute error below
        which the relative guarantee follows) and ``probability`` (``1 - m^-3``).
    """
    owner = "theorem5_s"
    if isinstance(eps, numbers.Real) and not isinstance(eps, bool) and not 0 < eps < 2 / 3:
        raise ValueError(f"The 'eps' parameter of {owner} must be a float in the range "
                         f"(0, 2/3). Got {eps!r} instead.")
    eps = check_scalar(eps, "eps", owner, lower=0, upper=2 / 3, lower_inclusive=False,
                       upper_inclusive=False)
    T = check_scalar(T, "T", owner, lower=0, lower_inclusive=False)
    c = check_scalar(c, "c", owner, lower=0, lower_inclusive=False)
    m = check_scalar(m, "m", owner, kind="int", lower=2)
    log_m = math.log(m)
    t_max = (c / eps) * math.sqrt(m / log_m)
    if T > t_max:
        raise ValueError(f"{owner}: T = {T!r} exceeds (c/eps) sqrt(m / log m) = {t_max:.6g}, "
                         "the largest threshold Theorem 5 allows.")
    return {
        "s": 2.0 * c * math.sqrt(m) / (eps * T),
        "max_nonzero": 4.0 * c * m / (eps * T),
        "trivial_threshold": T * math.sqrt(log_m),
        "error_threshold": (2.0 * eps / 3.0) * T * math.sqrt(log_m),
        "probability": 1.0 - float(m) ** -3,
        "T_max": t_max,
    }
