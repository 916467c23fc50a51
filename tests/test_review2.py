"""Defects found by the review of the compress / speed sessions (branch review2), each
with a test that failed before its fix."""

import numpy as np
import pytest
from sklearn.datasets import make_moons

import sparsekm
from sparsekm.models import RandomizedKernelPCA, ReducedSetClassifier


@pytest.fixture(scope="module")
def moons():
    return make_moons(80, noise=0.25, random_state=0)


def test_reduced_set_lam_zero_saves_and_loads(moons, tmp_path):
    """select-l1 accepts lam=0 (the unpenalised fit); load refused the file it made,
    because its constraint said lam > 0."""
    X, y = moons
    clf = ReducedSetClassifier(n_vectors=3, method="select-l1", lam=0.0,
                               random_state=0).fit(X, y)
    sparsekm.save(clf, tmp_path / "m.skm")
    back = sparsekm.load(tmp_path / "m.skm")
    assert back.lam == 0.0
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))


@pytest.mark.parametrize("sampling", ["none", "quantize", "sparsify"])
def test_randomized_kpca_s_below_one_refused_by_fit(moons, sampling):
    """s < 1 was accepted by fit when the sampling does not use it, and the saved model
    could not be loaded (load checks s >= 1 always)."""
    X, _ = moons
    with pytest.raises(ValueError, match="'s' parameter of RandomizedKernelPCA"):
        RandomizedKernelPCA(n_components=2, sampling=sampling, s=0.5, random_state=0).fit(X)


def test_plotting_compress_curve_takes_what_compress_returns(tmp_path):
    """sparsekm.plotting.compress_curve said it takes 'a model returned by
    sparsekm.compress' but raised TypeError on one (compress now keeps a report, not a
    curve); it plots the report now, also after save/load."""
    from sklearn.svm import SVC

    from sparsekm.plotting import compress_curve

    X, y = make_moons(300, noise=0.25, random_state=0)
    svc = SVC(C=10, gamma=1.0).fit(X[:150], y[:150])
    small = sparsekm.compress(svc, X[150:], y[150:], n_vectors=5, method="construct",
                              random_state=0, n_init=2, max_iter=50)
    out = compress_curve(small, path=tmp_path / "c.png")
    assert str(out).endswith("c.png") and (tmp_path / "c.png").stat().st_size > 0
    sparsekm.save(small, tmp_path / "m.skm")
    compress_curve(sparsekm.load(tmp_path / "m.skm"), path=tmp_path / "d.png")
    assert (tmp_path / "d.png").stat().st_size > 0
