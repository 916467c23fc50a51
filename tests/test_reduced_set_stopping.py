"""When construction stops adding vectors: at ``tol`` (on ``||Psi - Psi'||``, not its
square) with the same vectors as the full run up to there, and on its own once a
finite-dimensional feature space is reproduced exactly."""

import numpy as np

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF, Polynomial
from sparsekm.reduced_set import construct


def test_tol_stops_at_the_first_size_whose_error_norm_reaches_it():
    rng = np.random.default_rng(13)
    psi = KernelExpansion(rng.normal(size=(20, 3)), rng.normal(size=20), RBF(0.4), 0.0)
    full = construct(psi, 8, random_state=0)
    path = np.asarray(full.objective_path)
    assert np.all(np.diff(path) < 0)
    tol = np.sqrt(path[3]) * 1.001  # between the 3rd and the 4th vector's error norms
    assert np.sqrt(path[2]) > tol
    early = construct(psi, 8, tol=tol, random_state=0)
    assert early.expansion.n_terms == 4
    np.testing.assert_array_equal(early.objective_path, path[:4])
    np.testing.assert_array_equal(early.expansion.vectors, full.expansion.vectors[:4])


def test_an_exactly_reproduced_quadratic_stops_by_itself():
    # (x.y)^2 in 3 dimensions: Psi is a symmetric 3 x 3 matrix, three rank-one terms
    # (its eigenvectors) reproduce it, so no fourth vector is added
    rng = np.random.default_rng(14)
    psi = KernelExpansion(rng.normal(size=(10, 3)), rng.normal(size=10),
                          Polynomial(degree=2, coef0=0.0), 0.0)
    result = construct(psi, 8, refine=True, random_state=0)
    assert result.expansion.n_terms == 3
    assert result.objective <= 1e-10 * result.norm2
