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
