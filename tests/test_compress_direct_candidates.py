"""The direct candidates of compress build their expansion on vectors of the kind they
name: a uniform subset keeps training rows, k-means keeps the centres of the training
data (each the mean of its points), and a direct machine is one-vs-rest whatever the
original's scheme; the file-format ``method`` field stays "construct" while
``chosen_method_`` names the candidate. One candidate is asked for each time."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.svm import SVC

from sparsekm import compress


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(160, noise=0.25, random_state=0)
    return SVC(C=10, gamma=1.0).fit(X[:100], y[:100]), X[:100], y[:100], X[100:], y[100:]


def _direct(data, method, n_vectors=6):
    svc, Xtr, ytr, Xv, yv = data
    return compress(svc, Xv, yv, n_vectors=n_vectors, method=method, X_train=Xtr,
                    y_train=ytr, random_state=0)


def test_a_uniform_subset_keeps_training_rows(moons):
    small = _direct(moons, "uniform-svm")
    rows = {tuple(r) for r in moons[1]}
    Z = np.asarray(small.expansion_.vectors)
    assert len(Z) == 6 and all(tuple(z) in rows for z in Z)
    assert small.chosen_method_ == "uniform-svm"
    assert small.get_params()["method"] == "construct"  # the file format's field


def test_k_means_centres_are_the_means_of_their_training_points(moons):
    small = _direct(moons, "kmeans-svm")
    Xtr = moons[1]
    Z = np.asarray(small.expansion_.vectors)
    nearest = ((Xtr[:, None, :] - Z[None]) ** 2).sum(-1).argmin(axis=1)
    assert set(nearest) == set(range(len(Z)))  # no empty cluster
    np.testing.assert_allclose([Xtr[nearest == k].mean(axis=0) for k in range(len(Z))], Z,
                               atol=1e-8)


def test_a_direct_machine_is_one_vs_rest_for_a_one_vs_one_original():
    X, y = make_blobs(150, centers=[[-4, 0], [4, 0], [0, 5]], cluster_std=0.7,
                      random_state=1)
    svc = SVC(C=10, gamma=0.5).fit(X[:90], y[:90])  # scikit-learn's one-vs-one
    small = _direct((svc, X[:90], y[:90], X[90:], y[90:]), "uniform-svm")
    assert small.scheme_ == "ovr"
    dec = small.decision_function(X[90:])
    assert dec.shape == (60, 3)
    np.testing.assert_array_equal(small.predict(X[90:]), small.classes_[dec.argmax(axis=1)])
