"""Fixed-seed runs of the solvers that were moved onto the engine's kernel sums.

``tests/data/engine_migration_reference.npz`` holds the output of every case as
computed *before* the pre-image, one-term and SLMC solvers were routed through
``Kernel.weighted_sums`` (their own blocked loops, commit a744aca).
``tests/test_engine_sums.py`` checks that the migrated solvers reproduce them.

Re-record (only when a change of results is intended and understood)::

    PYTHONPATH=src python -m tests._migration_cases
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

REFERENCE = Path(__file__).parent / "data" / "engine_migration_reference.npz"


def _data(seed, n=60, d=4):
    rng = np.random.default_rng(seed)
    return rng, rng.normal(size=(n, d))


def _preimage_cases():
    from sparsekm import KernelExpansion
    from sparsekm.kernels import RBF, InverseMultiquadric, Polynomial, Sigmoid
    from sparsekm.preimage import fixed_point, gradient, preimage, preimage_objective

    out = {}
    rng, X = _data(1)
    G = rng.normal(size=(60, 5))
    X_init = rng.normal(size=(30, 4))
    for name, k in [("rbf", RBF(0.4)), ("imq", InverseMultiquadric(-0.5))]:
        psi = KernelExpansion(X, G, k)
        r = fixed_point(psi, n_init=4, X_init=X_init, random_state=0)
        out[f"fixed_point_{name}_z"] = r.z
        out[f"fixed_point_{name}_objective"] = r.objective
        out[f"fixed_point_{name}_n_iter"] = r.n_iter
        r1 = fixed_point(KernelExpansion(X, G[:, 0], k), n_init=3, random_state=1)
        out[f"fixed_point_{name}_single_z"] = r1.z
    for name, k in [("rbf", RBF(0.4)), ("poly", Polynomial(3, 1.0, 0.3)),
                    ("sigmoid", Sigmoid(0.3, 0.1))]:
        psi = KernelExpansion(X, np.abs(G[:, :3]), k)
        r = gradient(psi, n_init=2, max_iter=50, random_state=0)
        out[f"gradient_{name}_z"] = r.z
        out[f"gradient_{name}_objective"] = r.objective
    psi = KernelExpansion(X, G, RBF(0.4))
    Zc = rng.normal(size=(5, 4))
    out["objective_rbf"] = np.array(preimage_objective(psi, Zc))
    out["objective_poly"] = np.array(preimage_objective(
        KernelExpansion(X, G, Polynomial(2, 1.0, 0.5)), Zc))
    out["auto_poly_z"] = preimage(KernelExpansion(X, G[:, :2], Polynomial(3, 0.5, 0.3)),
                                  n_init=2, max_iter=40, random_state=0).z
    return out


def _one_term_cases():
    from sparsekm.kernels import RBF, InverseMultiquadric, Polynomial
    from sparsekm.reduced_set._one_term import one_term_shared, shared_score

    out = {}
    rng, Y = _data(2, n=50, d=3)
    G = rng.normal(size=(50, 4))
    Z0 = rng.normal(size=(6, 3))
    for name, k in [("rbf", RBF(0.5)), ("imq", InverseMultiquadric(-1.0)),
                    ("poly", Polynomial(2, 1.0, 0.5))]:
        z, score, n_iter = one_term_shared(k, Y, G, Z0, max_iter=60, tol=1e-10,
                                           random_state=np.random.default_rng(0))
        out[f"one_term_{name}_z"] = z
        out[f"one_term_{name}_score"] = np.array([score, n_iter])
        out[f"shared_score_{name}"] = shared_score(k, Y, G, Z0)
    return out


def _construct_cases():
    from sparsekm import KernelExpansion
    from sparsekm.kernels import RBF
    from sparsekm.reduced_set import construct

    class PlainRBF(RBF):
        """The Gaussian kernel, but not ``RBF`` itself: ``construct`` keeps its dedicated
        Gaussian one-term solver (issue 14; tested against these in
        tests/test_reduced_set.py) for exactly ``RBF`` and runs the engine-routed one-term
        solvers of every other kernel on this one."""

    out = {}
    rng, X = _data(3, n=80, d=5)
    A = rng.normal(size=(80, 3))
    psi = KernelExpansion(X, A, PlainRBF(0.2))
    for shared in (True, False):
        r = construct(psi, 4, shared=shared, n_init=3, random_state=0)
        out[f"construct_shared{int(shared)}_vectors"] = np.asarray(r.expansion.vectors)
        out[f"construct_shared{int(shared)}_objective"] = np.asarray(r.objective_path)
    return out


def _direct_cases():
    from sparsekm.kernels import RBF, Polynomial
    from sparsekm.sparse_learning import skfd_optimize, slmc_gradient, slmc_optimize

    out = {}
    rng, X = _data(4, n=70, d=3)
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=70) > 0, 1.0, -1.0)
    Z0 = X[:5].copy()
    r = slmc_optimize(X, y, Z0, RBF(0.5), 1.0, max_iter=15)
    out["slmc_rbf_Z"] = r.Z
    alpha, beta = np.abs(rng.normal(size=70)), rng.normal(size=5)
    out["slmc_gradient_poly"] = slmc_gradient(X, y, Z0, Polynomial(2, 1.0, 0.5), alpha, beta)
    r = skfd_optimize(X, y, Z0, RBF(0.5), 1e-3, max_iter=15)
    out["skfd_rbf_Z"] = r.Z
    return out


def compute_all():
    """Every case, as a dict of arrays."""
    return {**_preimage_cases(), **_one_term_cases(), **_construct_cases(), **_direct_cases()}


if __name__ == "__main__":
    REFERENCE.parent.mkdir(exist_ok=True)
    np.savez_compressed(REFERENCE, **compute_all())
    print(f"wrote {REFERENCE}")
