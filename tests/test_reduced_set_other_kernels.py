"""Reduced-set construction with kernels whose one-term step is not the Gaussian fixed
point (Laplacian, Matern, rational quadratic): the error falls with every vector and the
reported error is ``alpha^T K alpha - 2 alpha^T K^xz beta + beta^T K^z beta`` computed here."""

import numpy as np
import pytest

from sparsekm import KernelExpansion
from sparsekm.kernels import Laplacian, Matern, RationalQuadratic
from sparsekm.reduced_set import construct


@pytest.mark.parametrize("kernel", [Laplacian(0.5), Matern(length_scale=1.0, nu=1.5),
                                    RationalQuadratic(length_scale=1.0, alpha=1.0)],
                         ids=["laplacian", "matern", "rational-quadratic"])
def test_construction_error_falls_and_is_the_gram_quadratic_form(kernel):
    rng = np.random.default_rng(30)
    X, a = rng.normal(size=(14, 3)), rng.normal(size=14)
    result = construct(KernelExpansion(X, a, kernel, 0.0), 4, random_state=0)
    path = np.asarray(result.objective_path)
    assert len(path) == 4 and np.all(np.diff(path) < 0)
    norm2 = a @ kernel(X, X) @ a
    assert path[0] < norm2
    Z, b = np.asarray(result.expansion.vectors), np.ravel(result.expansion.coef)
    direct = norm2 - 2 * a @ kernel(X, Z) @ b + b @ kernel(Z, Z) @ b
    assert result.objective == pytest.approx(direct, rel=1e-8)
