"""Parameters at save and load: a value fit accepts saves and loads; a value load would
refuse is refused by save, naming the parameter, before anything is written."""

import numpy as np
import pytest
from sklearn.datasets import make_moons

import sparsekm
from sparsekm.models import ReducedSetClassifier


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


@pytest.mark.parametrize("make, param, after_fit", [
    # fit refuses these values (``_fit_context``, issue 35) and lam with method="construct"
    # (an option it would ignore), so each value reaches the fitted estimator through
    # set_params
    (lambda: __import__("sparsekm.models", fromlist=["RVC"]).RVC(max_iter=5),
     "fit_intercept", {"fit_intercept": 1}),
    (lambda: __import__("sparsekm.models", fromlist=["KernelFisherDiscriminant"])
     .KernelFisherDiscriminant(), "degree", {"degree": 0}),
    (lambda: ReducedSetClassifier(n_vectors=3, random_state=0), "lam", {"lam": -1.0}),
])
def test_save_refuses_parameters_that_load_refuses(moons, tmp_path, make, param, after_fit):
    """fit accepted (or, under an RBF kernel, ignored) parameter values that load()'s
    checks refuse: save wrote a file that could not be loaded. save refuses now, naming
    the parameter, and writes nothing."""
    X, y = moons
    est = make().fit(X, y).set_params(**after_fit)
    with pytest.raises(ValueError, match=f"Cannot save.*'{param}' parameter"):
        sparsekm.save(est, tmp_path / "m.skm")
    assert not (tmp_path / "m.skm").exists()
