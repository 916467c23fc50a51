"""Reduced-set construction of a large expansion: memory bounded by row blocks, not by the
square of its number of terms (issue 36: a 60,000-term original needed 27 GiB for the
Gram matrix of its terms), and the blocked path gives the Gram path's result."""

import tracemalloc

import numpy as np
import pytest

from sparsekm import RBF, KernelExpansion
from sparsekm.reduced_set import construct
from sparsekm.reduced_set import construction as cons


def _expansion(n, n_out=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    A = rng.normal(size=(n, n_out)) if n_out > 1 else rng.normal(size=n)
    return KernelExpansion(X, A / n, RBF(0.5))


@pytest.mark.parametrize("n_out, shared", [(1, None), (3, True), (3, False)])
def test_blocked_phase_one_equals_the_gram_path(monkeypatch, n_out, shared):
    psi = _expansion(300, n_out)
    kw = dict(shared=shared, random_state=0, n_init=3, max_iter=50)
    gram = construct(psi, 4, **kw)
    monkeypatch.setattr(cons, "_GRAM_ROWS", 0)  # every expansion past the Gram bound
    blocked = construct(psi, 4, **kw)
    np.testing.assert_allclose(blocked.expansion.vectors, gram.expansion.vectors, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(blocked.expansion.coef, gram.expansion.coef, rtol=1e-8,
                               atol=1e-12)
    np.testing.assert_allclose(blocked.objective, gram.objective, rtol=1e-8, atol=1e-14)


def test_a_large_expansion_never_forms_its_gram_matrix():
    n = 6000  # its Gram matrix: 288 MB
    psi = _expansion(n)
    tracemalloc.start()
    try:
        construct(psi, 2, random_state=0, n_init=2, max_iter=20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n > cons._GRAM_ROWS
    assert peak < 0.25 * 8 * n * n, f"peak {peak / 2**20:.0f} MiB"
