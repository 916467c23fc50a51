"""Feature-space geometry: kernel maps, the induced metric and its curvature.

From section II of Schölkopf, Mika, Burges, Knirsch, Müller, Rätsch, Smola, *Input
space vs. feature space in kernel-based methods* (IEEE TNN 1999):

* :func:`empirical_kernel_map` — ``Phi_m(x) = (k(z_1, x), ..., k(z_m, x))`` (eq. 13);
* :func:`whitened_kernel_map` — ``Phi^w(x) = K^{-1/2} Phi_m(x)`` (eq. 17, the
  pseudo-inverse of ``K^{1/2}`` when ``K`` is singular, footnote 5), for which the
  canonical dot product reproduces the kernel on the span of the ``Phi(z_i)``
  (eq. 14/15);
* :func:`metric_tensor` — the Riemannian metric ``g_{mu nu}`` that the map ``x ->
  Phi(x)`` induces on the surface ``S = Phi(R^N)``, computed from kernel values
  alone (eq. 22/23); :func:`metric_tensor_dot_product` and
  :func:`inverse_metric_tensor_dot_product` give the closed forms (eq. 24/25);
* :func:`riemann_tensor` / :func:`scalar_curvature` — the intrinsic curvature of
  ``S`` for dot-product and radial kernels (eq. 27/28), and
  :func:`polynomial_riemann_tensor`, the closed form for ``k = (x.y + c)^p``
  (eq. 29 for ``c = 0``; for ``c > 0`` a corrected version of the formula printed
  after eq. 28, see its Notes).

Index convention: ``R[mu, nu, alpha, beta]`` stores the paper's
``R_{nu alpha beta}^mu`` (upper index first), eq. 27.
"""

from __future__ import annotations

import math

import numpy as np

from .kernels import Kernel, Polynomial
from .utils.validation import check_array, check_scalar

__all__ = [
    "empirical_kernel_map",
    "whitened_kernel_map",
    "metric_tensor",
    "metric_tensor_dot_product",
    "inverse_metric_tensor_dot_product",
    "christoffel_symbols",
    "riemann_tensor",
    "ricci_tensor",
    "scalar_curvature",
    "polynomial_riemann_tensor",
]


def _check_kernel(kernel, owner):
    if not isinstance(kernel, Kernel):
        raise TypeError(f"{owner} needs a sparsekm.kernels.Kernel; got {type(kernel).__name__}.")
    return kernel


def _check_point(x, owner):
    x = check_array(x, "x", ndim=1, dtype=np.float64)
    return x


# -- kernel maps ---------------------------------------------------------------------------


def empirical_kernel_map(kernel, Z, X):
    """Empirical kernel map w.r.t. ``Z`` (eq. 13): row ``i`` is ``(k(z_1, x_i), ..., k(z_m, x_i))``.

    Parameters
    ----------
    kernel : Kernel
    Z : array-like of shape (m, n_features)
        The evaluation points ``z_1..z_m``.
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples, m)
    """
    _check_kernel(kernel, "empirical_kernel_map")
    Z = check_array(Z, "Z")
    X = check_array(X, "X")
    if X.shape[1] != Z.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features, but Z has {Z.shape[1]} features.")
    return kernel(X, Z)


def whitened_kernel_map(kernel, Z, X=None, *, rtol=None):
    """Whitened (kernel-PCA) empirical kernel map (eq. 17): ``K^{-1/2} Phi_m(x)``.

    With ``K = K(Z, Z) = U diag(lambda) U^T``, the map is ``x -> diag(lambda)^{-1/2}
    U^T Phi_m(x)``, dropping eigenvalues below ``rtol * max(lambda)`` (the
    pseudo-inverse of footnote 5). The canonical dot product of the mapped
    points then equals ``k`` on the span of the ``Phi(z_i)`` (eq. 14/15): for
    ``x, y`` in ``Z`` exactly, ``<Phi^w(x), Phi^w(y)> = k(x, y)``.

    The rows are expressed in the eigenbasis of ``K`` (``U^T`` applied); this is
    an orthogonal change of coordinates of the symmetric ``K^{-1/2}`` of eq. 17
    that drops the null space (footnote 4) and leaves all dot products unchanged.

    Parameters
    ----------
    kernel : Kernel
        A positive semi-definite kernel.
    Z : array-like of shape (m, n_features)
    X : array-like of shape (n_samples, n_features), default=None
        Points to map; ``None`` maps ``Z`` itself.
    rtol : float, default=None
        Relative eigenvalue cut-off; default ``m * eps``.

    Returns
    -------
    ndarray of shape (n_samples, rank)
    """
    _check_kernel(kernel, "whitened_kernel_map")
    if not kernel.is_psd:
        raise ValueError(f"whitened_kernel_map needs a positive semi-definite kernel; got {kernel!r}.")
    Z = check_array(Z, "Z", dtype=np.float64)
    X = Z if X is None else check_array(X, "X", dtype=np.float64)
    if X.shape[1] != Z.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features, but Z has {Z.shape[1]} features.")
    if rtol is None:
        rtol = Z.shape[0] * np.finfo(float).eps
    rtol = check_scalar(rtol, "rtol", "whitened_kernel_map", lower=0)
    w, U = np.linalg.eigh(kernel(Z))
    keep = w > rtol * max(float(w.max()), 0.0)
    if not keep.any():
        raise ValueError("The Gram matrix K(Z, Z) is zero; the whitened map is empty.")
    return kernel.mmv(X, Z, U[:, keep]) / np.sqrt(w[keep])


# -- metric ------------------------------------------------------------------------------


def metric_tensor(kernel, x, *, h=None):
    """Induced metric ``g_{mu nu}(x)`` from kernel values alone (eq. 22/23).

    ``ds^2 = ||Phi(x + dx) - Phi(x)||^2 = k(x+dx, x+dx) - 2 k(x, x+dx) + k(x, x)``
    is a quadratic form ``g_{mu nu} dx^mu dx^nu`` to second order; ``g`` is read off
    by symmetric finite differences of ``ds^2`` along ``e_mu +- e_nu`` (polarisation),
    using only evaluations of ``k``. Works for any (PSD) kernel.

    Parameters
    ----------
    kernel : Kernel
    x : array-like of shape (N,)
    h : float, default=None
        Step; default ``1e-4 * max(1, ||x||)``.

    Returns
    -------
    ndarray of shape (N, N)
    """
    _check_kernel(kernel, "metric_tensor")
    x = _check_point(x, "metric_tensor")
    if h is None:
        h = 1e-4 * max(1.0, float(np.linalg.norm(x)))
    h = check_scalar(h, "h", "metric_tensor", lower=0, lower_inclusive=False)
    N = x.size
    # Directions e_mu + e_nu and e_mu - e_nu for mu <= nu (and e_mu itself).
    dirs = []
    for mu in range(N):
        for nu in range(mu, N):
            v = np.zeros(N)
            v[mu] += 1.0
            v[nu] += 1.0
            w = np.zeros(N)
            w[mu] += 1.0
            w[nu] -= 1.0
            dirs += [v, w]
    D = np.array(dirs)

    def quad(V):
        # q(v) = [ds^2(h v) + ds^2(-h v)] / (2 h^2) = v^T g v + O(h^2)
        out = np.zeros(V.shape[0])
        kxx = kernel(x[None])[0, 0]
        for sgn in (1.0, -1.0):
            P = x[None, :] + sgn * h * V
            kpp = kernel.diag(P)
            kxp = kernel(x[None], P)[0]
            out += kpp - 2.0 * kxp + kxx
        return out / (2.0 * h * h)

    q = quad(D)
    g = np.zeros((N, N))
    i = 0
    for mu in range(N):
        for nu in range(mu, N):
            val = (q[i] - q[i + 1]) / 4.0  # polarisation: (q(e+f) - q(e-f)) / 4
            g[mu, nu] = g[nu, mu] = val
            i += 2
    return g


def _profile_derivatives(kernel, t):
    """``k'(t)``, ``k''(t)``, ``k'''(t)`` of a dot-product kernel's profile at scalar ``t``."""
    if isinstance(kernel, Polynomial):
        p, c, g = kernel.degree, kernel.coef0, kernel.gamma
        u = g * t + c

        def der(j):
            if j > p:
                return 0.0
            return math.perm(p, j) * g**j * u ** (p - j)

        return der(1), der(2), der(3)
    # Generic dot-product kernel: differentiate the analytic k' numerically.
    h = 1e-4 * max(1.0, abs(t))
    f1 = lambda s: float(np.asarray(kernel.profile_derivative(np.array([s])))[0])  # noqa: E731
    d1 = f1(t)
    d2 = (f1(t + h) - f1(t - h)) / (2 * h)
    d3 = (f1(t + h) - 2 * d1 + f1(t - h)) / (h * h)
    return d1, d2, d3


def metric_tensor_dot_product(kernel, x):
    """Closed-form metric of a dot-product kernel (eq. 24).

    ``g_{mu nu} = delta_{mu nu} k'(||x||^2) + x_mu x_nu k''(||x||^2)``, the prime
    denoting the derivative with respect to the argument.

    Parameters
    ----------
    kernel : DotProductKernel
    x : array-like of shape (N,)

    Returns
    -------
    ndarray of shape (N, N)
    """
    _check_kernel(kernel, "metric_tensor_dot_product")
    if not kernel.is_dot_product:
        raise ValueError(
            f"metric_tensor_dot_product needs a dot-product kernel k(x.y); got {kernel!r}. Use "
            "metric_tensor for other kernels."
        )
    x = _check_point(x, "metric_tensor_dot_product")
    d1, d2, _ = _profile_derivatives(kernel, float(x @ x))
    return d1 * np.eye(x.size) + d2 * np.outer(x, x)


def inverse_metric_tensor_dot_product(kernel, x):
    """Closed-form contravariant metric ``g^{mu nu}`` of a dot-product kernel (eq. 25).

    ``g^{mu nu} = delta_{mu nu} / k' - x_mu x_nu (k''/k') / (k' + ||x||^2 k'')``.
    """
    _check_kernel(kernel, "inverse_metric_tensor_dot_product")
    if not kernel.is_dot_product:
        raise ValueError(
            f"inverse_metric_tensor_dot_product needs a dot-product kernel; got {kernel!r}."
        )
    x = _check_point(x, "inverse_metric_tensor_dot_product")
    r2 = float(x @ x)
    d1, d2, _ = _profile_derivatives(kernel, r2)
    if d1 == 0 or d1 + r2 * d2 == 0:
        raise ValueError(f"The metric of {kernel!r} is singular at x (k' = {d1}).")
    return np.eye(x.size) / d1 - np.outer(x, x) * (d2 / d1) / (d1 + r2 * d2)


def _metric_and_derivative(kernel, x):
    """``g(x)`` and ``dg[lam, mu, nu] = d g_{mu nu} / d x_lam`` in closed form."""
    N = x.size
    if kernel.is_radial:
        # ||Phi(x+dx) - Phi(x)||^2 = 2 (k(0) - k(||dx||^2)) ~ -2 k'(0) ||dx||^2: flat.
        d1 = float(np.asarray(kernel.profile_derivative(np.zeros(1)))[0])
        return -2.0 * d1 * np.eye(N), np.zeros((N, N, N))
    if kernel.is_dot_product:
        r2 = float(x @ x)
        d1, d2, d3 = _profile_derivatives(kernel, r2)
        eye = np.eye(N)
        g = d1 * eye + d2 * np.outer(x, x)
        # d_lam [delta k'(r2) + x_mu x_nu k''(r2)]
        dg = 2.0 * x[:, None, None] * (d2 * eye[None] + d3 * np.outer(x, x)[None])
        dg += d2 * (eye[:, :, None] * x[None, None, :] + eye[:, None, :] * x[None, :, None])
        return g, dg
    raise ValueError(
        f"Curvature is available for radial and dot-product kernels; got {kernel!r}."
    )


def christoffel_symbols(kernel, x):
    """Christoffel symbols of the second kind ``Gamma[alpha, beta, gamma]`` (eq. 28).

    ``Gamma^alpha_{beta gamma} = 1/2 g^{alpha mu} (d_beta g_{gamma mu} - d_mu g_{beta gamma}
    + d_gamma g_{mu beta})``, from the closed-form metric and its derivative.
    """
    _check_kernel(kernel, "christoffel_symbols")
    x = _check_point(x, "christoffel_symbols")
    g, dg = _metric_and_derivative(kernel, x)
    first = 0.5 * (dg - np.einsum("mbg->bgm", dg)
                   + np.einsum("gmb->bgm", dg))
    # first[b, g, m] = Gamma_{b g m}; raise the last index.
    return np.einsum("am,bgm->abg", np.linalg.inv(g), first)


def riemann_tensor(kernel, x, *, h=None):
    """Riemann curvature tensor of the surface ``Phi(R^N)`` (eq. 27).

    ``R[mu, nu, alpha, beta] = R_{nu alpha beta}^mu = d_alpha Gamma^mu_{beta nu} -
    d_beta Gamma^mu_{alpha nu} + Gamma^rho_{beta nu} Gamma^mu_{alpha rho} -
    Gamma^rho_{alpha nu} Gamma^mu_{beta rho}``, written here with the standard
    index placement of eq. 27 (the products pair the summed index ``rho`` as in
    the usual definition). The derivatives of the closed-form Christoffel symbols
    are central finite differences with step ``h``.

    Parameters
    ----------
    kernel : Kernel
        Radial (flat: all zeros) or dot-product kernel.
    x : array-like of shape (N,)
    h : float, default=None
        Step; default ``1e-4 * max(1, ||x||)``.

    Returns
    -------
    ndarray of shape (N, N, N, N)
    """
    _check_kernel(kernel, "riemann_tensor")
    x = _check_point(x, "riemann_tensor")
    N = x.size
    if h is None:
        h = 1e-4 * max(1.0, float(np.linalg.norm(x)))
    G = christoffel_symbols(kernel, x)  # G[a, b, c] = Gamma^a_{bc}
    dG = np.zeros((N, N, N, N))  # dG[l, a, b, c] = d_l Gamma^a_{bc}
    for lam in range(N):
        e = np.zeros(N)
        e[lam] = h
        dG[lam] = (christoffel_symbols(kernel, x + e) - christoffel_symbols(kernel, x - e)) / (2 * h)
    # R^m_{n a b} = d_a G^m_{b n} - d_b G^m_{a n} + G^m_{a r} G^r_{b n} - G^m_{b r} G^r_{a n}
    R = np.einsum("ambn->mnab", dG)
    R = R - np.einsum("bman->mnab", dG)
    R += np.einsum("mar,rbn->mnab", G, G)
    R -= np.einsum("mbr,ran->mnab", G, G)
    return R


def ricci_tensor(kernel, x, *, h=None):
    """Ricci tensor ``R_{nu beta} = R^mu_{nu mu beta}`` (contraction of eq. 27)."""
    R = riemann_tensor(kernel, x, h=h)
    return np.einsum("mnmb->nb", R)


def scalar_curvature(kernel, x, *, h=None):
    """Scalar curvature ``g^{nu beta} R_{nu beta}`` of the surface ``Phi(R^N)`` at ``x``.

    Zero for radial kernels (the induced metric is constant) and for ``p = 1``
    polynomial kernels; for ``N = 2`` it is twice the Gaussian curvature of the
    surface.
    """
    x = _check_point(x, "scalar_curvature")
    g, _ = _metric_and_derivative(_check_kernel(kernel, "scalar_curvature"), x)
    return float(np.einsum("nb,nb->", np.linalg.inv(g), ricci_tensor(kernel, x, h=h)))


def polynomial_riemann_tensor(x, degree, coef0):
    """Closed-form Riemann tensor of the surface of ``k(x, y) = (x.y + c)^p`` (eq. 26).

    Returns ``R[mu, nu, alpha, beta] = R_{nu alpha beta}^mu`` (eq. 27 convention)::

        R = (p-1)/u   (delta_{nu alpha} delta_{mu beta} - delta_{nu beta} delta_{mu alpha})
          - (p-1)/u^2 (x_alpha x_nu delta_{mu beta} - x_beta x_nu delta_{mu alpha})
          - (p-1)/(u v) (x_beta x_mu delta_{nu alpha} - x_alpha x_mu delta_{nu beta}),

    with ``u = ||x||^2 + c`` and ``v = ||x||^2 + c/p``.

    Notes
    -----
    For ``c = 0`` (``u = v = ||x||^2``) this is the paper's eq. 29 (up to the
    order in which the paper writes the lower indices). For ``c > 0`` the
    formula printed after eq. 28 has the same first term but is dimensionally
    inconsistent in the others (it mixes ``||x||^{-4}`` and ``||x||^{-6}`` terms),
    so it cannot be right as printed; the form above was derived from eq. 24 and
    eq. 27/28 and is verified against :func:`riemann_tensor` (finite differences)
    in the tests. It confirms the paper's conclusions: ``R = 0`` for ``p = 1``; for
    ``c > 0`` it is finite at ``x = 0`` (no singularity) and, for ``N = 2``, does not
    vanish when ``p > 1``, whereas the homogeneous ``N = 2`` surface is flat.

    Parameters
    ----------
    x : array-like of shape (N,)
    degree : int
        ``p >= 1``.
    coef0 : float
        ``c >= 0``; with ``c = 0`` the surface is singular at ``x = 0``.

    Returns
    -------
    ndarray of shape (N, N, N, N)
    """
    x = _check_point(x, "polynomial_riemann_tensor")
    p = check_scalar(degree, "degree", "polynomial_riemann_tensor", kind="int", lower=1)
    c = check_scalar(coef0, "coef0", "polynomial_riemann_tensor", lower=0)
    N = x.size
    d = np.eye(N)
    r2 = float(x @ x)
    if c == 0 and r2 == 0:
        raise ValueError("The homogeneous polynomial surface is singular at x = 0.")
    u = r2 + c
    v = r2 + c / p
    # Index letters: m = mu (upper), n = nu, a = alpha, b = beta.
    t1 = np.einsum("na,mb->mnab", d, d) - np.einsum("nb,ma->mnab", d, d)
    t2 = np.einsum("a,n,mb->mnab", x, x, d) - np.einsum("b,n,ma->mnab", x, x, d)
    t3 = np.einsum("b,m,na->mnab", x, x, d) - np.einsum("a,m,nb->mnab", x, x, d)
    return (p - 1) / u * t1 - (p - 1) / u**2 * t2 - (p - 1) / (u * v) * t3
