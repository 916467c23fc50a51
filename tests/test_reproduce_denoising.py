"""The kernel PCA denoising reproductions run and give the paper's qualitative results."""

import numpy as np
import pytest

from sparsekm.reproduce import Context, discover
from sparsekm.reproduce.denoising import (
    add_gaussian_noise,
    add_speckle_noise,
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
    ratio = {(r[1].strip()[:5], r[2].strip()[:5]): float(r[6]) for r in rows}
    # Kernel PCA beats linear PCA at the optimal n for both noise types; the paper's 1.2
    # for speckle is reached. (The paper's 1.6 for Gaussian noise is not: see docs/results.md.)
    assert ratio["Gauss", "centr"] > 1.3
    assert ratio["speck", "centr"] >= 1.2
