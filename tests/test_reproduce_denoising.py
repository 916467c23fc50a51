"""The kernel PCA denoising reproductions run and give the paper's qualitative results."""

import types

import numpy as np
import pytest

from sparsekm.reproduce import Context, discover
from sparsekm.reproduce.denoising import (
    add_gaussian_noise,
    add_speckle_noise,
    linear_pca_denoise,
    table_denoise_ratios,
)

from .conftest import requires_usps


@pytest.fixture
def ctx(tmp_path):
    return Context(out_dir=tmp_path, seed=0, quick=True, progress=False)


def test_registered():
    registry = discover()
    for name in ("toy-clusters", "table-denoise-gaussians", "usps-denoise",
                 "half-circle-square"):
        assert name in registry


def test_toy_clusters(ctx):
    res = discover()["toy-clusters"].func(ctx)
    assert len(res.figures) == 3
    for f in res.figures:
        assert (ctx.out_dir / f.split("/")[-1]).exists()
    # n = 1: clusters shrink to points, far closer to the sources than the noisy points.
    row1 = res.table.splitlines()[2].split("|")
    kpca, lin, noisy = float(row1[2]), float(row1[3]), float(row1[4])
    assert kpca < 0.1 * noisy and kpca < lin


def test_half_circle_square(ctx):
    res = discover()["half-circle-square"].func(ctx)
    for line in res.table.splitlines()[2:]:
        cells = line.split("|")
        lin, kpca = float(cells[3]), float(cells[4])
        assert kpca < lin  # linear PCA fails on both shapes


def test_table_ratios_small():
    ratios, err_k, err_l = table_denoise_ratios([0.1], [1, 2], seed=0, n_train=20, n_test=5)
    np.testing.assert_allclose(ratios, err_l / err_k)
    assert np.all(ratios > 1)


def test_noise_models():
    rng = np.random.default_rng(0)
    X = np.zeros((200, 256))
    S = add_speckle_noise(X, 0.2, rng)
    assert set(np.unique(S)) <= {-1.0, 0.0, 1.0}
    np.testing.assert_allclose(np.mean(S != 0), 0.2, atol=0.01)
    G = add_gaussian_noise(X, 0.5, rng)
    np.testing.assert_allclose(G.std(), 0.5, rtol=0.01)


@requires_usps
@pytest.mark.slow
def test_usps_denoise_paper_scale(tmp_path):
    ctx = Context(out_dir=tmp_path, seed=0, quick=False, progress=False)
    res = discover()["usps-denoise"].func(ctx)
    rows = [line.split("|") for line in res.table.splitlines()[2:]]
    ratio = {(r[1].strip()[:5], r[2].strip()[:12]): float(r[6]) for r in rows}
    # Kernel PCA beats linear PCA at the optimal n (the paper's protocol) for both noise
    # types; the paper's 1.2 for speckle is reached. (The paper's 1.6 for Gaussian noise is
    # not: see docs/results.md.)
    assert ratio["Gauss", "centred (pap"] > 1.3
    assert ratio["speck", "centred (pap"] >= 1.2
    assert set(res.data["validation_chosen_n"]) == {"Gaussian (sigma = 0.5)", "speckle (p = 0.2)"}


def _fake_usps(seed, per_train=26, per_test=10):  # 260 training digits: n up to 256
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-1, 1, size=(10, 256))
    X = np.repeat(centres, per_train, axis=0) + 0.3 * rng.normal(size=(10 * per_train, 256))
    T = np.repeat(centres, per_test, axis=0) + 0.3 * rng.normal(size=(10 * per_test, 256))
    return centres, X, T, rng


@pytest.mark.slow  # about 35 s CPU (2 x usps_denoise on 260 fake digits)
def test_usps_denoise_validation_n_never_reads_the_test_set(tmp_path, monkeypatch):
    """The validation-chosen n is the same whatever the test digits are (spy on the data)."""
    from sparsekm.reproduce import denoising

    centres, X, T, _ = _fake_usps(0)
    V = np.repeat(centres, 10, axis=0) + 0.3 * np.random.default_rng(5).normal(size=(100, 256))
    seen = []

    def validation(ctx, Xtrain, per_digit):
        seen.append(Xtrain)
        return V, np.random.default_rng(7)

    monkeypatch.setattr(denoising, "_usps_validation", validation)

    class FastKPCA:  # stand-in for kernel PCA (speed): linear projections, same interface
        def __init__(self, n_components, **kw):
            self.n_components_ = n_components

        def fit(self, Xf):
            self.X_ = Xf
            return self

        def denoise(self, N, n_components, tol):
            return types.SimpleNamespace(z=linear_pca_denoise(self.X_, N, n_components))

        def component_preimages(self, comps, **kw):
            return types.SimpleNamespace(z=np.zeros((len(comps), 256)))

        def transform(self, E):
            return np.zeros((E.shape[0], self.n_components_))

    monkeypatch.setattr(denoising, "KernelPCA", FastKPCA)
    import sparsekm.plotting

    for fig in ("image_grid", "plot_error_curves"):  # figures are not under test (speed)
        monkeypatch.setattr(sparsekm.plotting, fig, lambda *a, **k: tmp_path / "x.png")
    ctx = Context(out_dir=tmp_path, seed=0, quick=True, progress=False)
    results = []
    for test_digits in (T, -T[::-1]):  # the same training and validation data, other tests
        monkeypatch.setattr(denoising, "_usps_subsets", lambda ctx, a, b, t=test_digits: (
            X, t, None, np.random.default_rng(1)))
        results.append(denoising.usps_denoise(ctx))
    a, b = (r.data for r in results)
    assert a["validation_chosen_n"] == b["validation_chosen_n"]
    assert all(x is X for x in seen)  # validation drawn beside the training digits only
    # the test MSE (and so the paper-protocol rows) did change
    assert results[0].table != results[1].table
    assert any("validation" in line for line in results[0].table.splitlines())
    # issue 23: the uncentred ablation has no row with n chosen on the test digits
    rows = results[0].table.splitlines()[2:]
    assert [r for r in rows if "uncentred" in r] and \
        not [r for r in rows if "uncentred" in r and "test set" in r]
    assert set(a["validation_chosen_n"]) == {f"{n} / {v}" for n in ("Gaussian (sigma = 0.5)",
                                                                        "speckle (p = 0.2)")
                                              for v in ("centred", "uncentred")}


def test_half_circle_square_rule_rows_do_not_look_at_the_curve(ctx, monkeypatch):
    """The extra rows choose c from the noisy points only: another reference curve, same c."""
    from sparsekm.reproduce import denoising

    def rule_rows(res):
        return [line.split("|")[5] for line in res.table.splitlines()[2:] if "USPS rule" in line]

    first = rule_rows(denoising.half_circle_square(ctx))
    real = denoising._curve_samples
    monkeypatch.setattr(denoising, "_curve_samples", lambda name, m=2000: 3.0 + real(name, m))
    second = rule_rows(denoising.half_circle_square(ctx))
    assert len(first) == 2 and first == second
