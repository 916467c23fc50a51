"""The one label check (utils.validation.check_labels) every label-taking entry uses."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.svm import SVC

from sparsekm.utils.validation import check_labels


@pytest.mark.parametrize("bad, what", [(np.nan, "NaN"), (np.inf, "infinity"),
                                       (-np.inf, "infinity")])
def test_non_finite_numeric_labels_are_named(bad, what):
    y = np.array([0.0, 1.0, bad, 1.0])
    with pytest.raises(ValueError, match=f"^y_val contains {what}; class labels must be "
                                         "finite.$"):
        check_labels(y, 4, "y_val", "X_val")


def test_shape_is_checked_against_the_rows():
    with pytest.raises(ValueError, match=r"y must be 1-D with one label per row of X \(3\); "
                                         r"got shape \(2,\)"):
        check_labels([0, 1], 3)
    with pytest.raises(ValueError, match=r"got shape \(3, 1\)"):
        check_labels(np.zeros((3, 1)), 3)
    # strings and integers pass untouched, and without n_rows only finiteness is checked
    np.testing.assert_array_equal(check_labels(["a", "b"], 2), np.array(["a", "b"]))
    assert check_labels(np.zeros((2, 2))).shape == (2, 2)


def _entries():
    from sparsekm import compress
    from sparsekm.convert import exact_classifier
    from sparsekm.kernels import RBF
    from sparsekm.models import SLMC, ApproxSVC
    from sparsekm.reduced_set import refit_intercept

    X, y = make_blobs(60, centers=2, random_state=0)
    svc = SVC(gamma=0.5).fit(X, y)
    psi = exact_classifier(svc, svc.classes_).expansion
    return X, y, {
        "SLMC.fit": lambda yy: SLMC(n_vectors=3, max_iter=2).fit(X, yy),
        "ApproxSVC.fit": lambda yy: ApproxSVC(n_basis=3, kernel=RBF(0.5)).fit(X, yy),
        "refit_intercept": lambda yy: refit_intercept(psi, X, yy),
        "compress": lambda yy: compress(svc, X, yy, n_vectors=3),
    }


@pytest.mark.parametrize("entry", ["SLMC.fit", "ApproxSVC.fit",
                                   "refit_intercept", "compress"])
def test_every_entry_names_a_nan_label_without_a_numpy_warning(entry):
    X, y, entries = _entries()
    bad = y.astype(float)
    bad[5] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's cast warning must not come first
        with pytest.raises(ValueError, match="contains NaN; class labels must be finite"):
            entries[entry](bad)
