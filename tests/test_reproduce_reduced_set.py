"""The USPS reduced-set reproductions are registered; a quick run works end to end."""

import pytest

from sparsekm.reproduce import Context, discover

from .conftest import requires_usps

NAMES = ["usps-rs-construct", "usps-rs-select-kpca", "usps-rs-select-l1", "usps-rs-shared"]


def test_registered():
    registry = discover()
    for name in NAMES:
        assert name in registry and registry[name].slow


@requires_usps
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_quick_run(tmp_path, name):
    res = discover()[name].func(Context(out_dir=tmp_path, quick=True, progress=False))
    assert res.table.count("\n") >= 3
    assert "SV (baseline)" in res.table
    for fig in res.figures:
        assert (tmp_path / fig.split("/")[-1]).exists()


def _two_classifiers(n_terms=(30, 8), seed=0):
    """A block-diagonal two-output expansion; output 1 has fewer terms than the largest size."""
    import numpy as np

    from sparsekm import RBF, KernelExpansion

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(sum(n_terms), 2))
    coef = np.zeros((X.shape[0], 2))
    coef[:n_terms[0], 0] = rng.normal(size=n_terms[0])
    coef[n_terms[0]:, 1] = rng.normal(size=n_terms[1])
    return KernelExpansion(X, coef, RBF(0.5), np.zeros(2))


def test_phase1_runs_construct_every_size_of_a_small_classifier():
    """Regression (issue 23, digit 1): a classifier with fewer SVs than the largest size gets
    constructed vectors at every size, never its SVs or a prefix of them."""
    import warnings

    import numpy as np

    from sparsekm.reduced_set import construct
    from sparsekm.reproduce.reduced_set import phase1_runs, prefix_blocks

    E = _two_classifiers()
    sizes, n_max = (2, 5, 8, 12), 12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = construct(E, n_max, shared=False, random_state=0).expansion
    svs1 = np.asarray(E.output(1).merge_duplicates().vectors)
    old1 = np.asarray(old.vectors)[np.asarray(old.coef)[:, 1] != 0]
    # What the bug did: construct returns the small classifier unreduced (its own SVs).
    assert old1.shape == svs1.shape and np.allclose(np.sort(old1, 0), np.sort(svs1, 0))
    runs = phase1_runs(E, n_max, seed=0)
    assert runs[1].shape[0] > svs1.shape[0]  # phase 1 goes on past N_SV = 8
    for n in sizes:
        Z1, beta1 = prefix_blocks(E, runs, n)[1]
        assert Z1.shape[0] == n
        d = np.min(np.linalg.norm(Z1[:, None, :] - svs1[None, :, :], axis=2), axis=1)
        # Not a subset of the SVs (a one-term fixed point may land on an SV now and then).
        assert np.sum(d <= 1e-6) <= n // 2, f"RS-{n}: {np.sum(d <= 1e-6)} vectors are SVs"
        assert not np.allclose(Z1[:min(n, 8)], old1[:min(n, 8)])
        # a real reduced set: its error decreases with n and is below ||Psi||^2
        e1 = E.output(1).merge_duplicates()
        from sparsekm import KernelExpansion

        rel = e1.distance2(KernelExpansion(Z1, beta1, e1.kernel)) / e1.norm2()
        assert rel < 1.0
    # The large classifier keeps construct's own prefixes.
    Z0 = prefix_blocks(E, runs, 5)[0][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct5 = construct(E, 5, shared=False, random_state=0).expansion
    direct0 = np.asarray(direct5.vectors)[np.asarray(direct5.coef)[:, 0] != 0]
    assert np.allclose(Z0, direct0)
