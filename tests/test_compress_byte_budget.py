"""compress with a budget in bytes (``max_bytes``): each storage precision gets the most
vectors whose C arrays fit, counted by the layout ``sparsekm.deploy`` documents (written
out here), the error stated is that of the numbers as stored, and budgets that
cannot be met or that clash with another budget are refused with the reason."""

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.svm import SVC

from sparsekm import compress

from ._small_cases import layout_bytes

BUDGET = 150


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(160, noise=0.25, random_state=0)
    svc = SVC(C=10, gamma=1.0).fit(X[:100], y[:100])
    return svc, X[100:], y[100:]


@pytest.fixture(scope="module")
def stored(moons):
    svc, Xv, yv = moons
    return compress(svc, Xv, yv, max_bytes=BUDGET, method="construct", random_state=0)


def test_each_precision_gets_the_most_vectors_that_fit(stored):
    counts = {line.split(":")[0]: int(line.split(": ")[1].split()[0])
              for line in stored.compress_report_["deploy_candidates"]}
    assert set(counts) == {"float32", "float16", "int8"}
    for precision, n in counts.items():
        assert layout_bytes(precision, n) <= BUDGET < layout_bytes(precision, n + 1)


def test_the_chosen_size_in_bytes_is_the_layouts(stored):
    report = stored.compress_report_
    n, precision = report["deploy_n_vectors"], report["deploy_precision"]
    assert report["deploy_bytes"] == layout_bytes(precision, n) <= BUDGET
    assert stored.n_vectors_ == n


def test_the_stated_error_is_the_stored_models_on_the_validation_rows(moons, stored):
    # the model is returned in float64; exported at the chosen precision it is
    # deployed_model(model, precision): the numbers the C code computes with
    from sparsekm.c_export import deployed_model

    _, Xv, yv = moons
    precision = stored.compress_report_["deploy_precision"]
    line = next(x for x in stored.compress_report_["deploy_candidates"]
                if x.startswith(precision + ":"))
    stated = float(line.split("validation error ")[1].rstrip(" %")) / 100
    error = np.mean(deployed_model(stored, precision).predict(Xv) != yv)
    assert error == pytest.approx(stated, abs=5e-5)  # printed to 0.01 %


def test_a_budget_below_one_vector_is_refused_with_each_precisions_arithmetic(moons):
    svc, Xv, yv = moons
    with pytest.raises(ValueError, match="no storage precision fits one expansion vector") as e:
        compress(svc, Xv, yv, max_bytes=20, method="construct")
    for precision in ("float32", "float16", "int8"):
        fixed, per = layout_bytes(precision, 0), layout_bytes(precision, 1) - layout_bytes(
            precision, 0)
        assert f"{precision}: {fixed} B fixed + {per} B per vector <= 20 B" in str(e.value)


def test_a_byte_budget_needs_validation_rows(moons):
    svc, Xv, yv = moons
    with pytest.raises(ValueError, match="storage precision is picked on validation data"):
        compress(svc, max_bytes=BUDGET, method="construct", X_train=Xv, y_train=yv)


@pytest.mark.parametrize("other", [dict(n_vectors=5), dict(max_error_increase=0.01)])
def test_a_byte_budget_replaces_the_other_budgets(moons, other):
    svc, Xv, yv = moons
    with pytest.raises(ValueError, match="replaces n_vectors and max_error_increase"):
        compress(svc, Xv, yv, max_bytes=BUDGET, method="construct", **other)


def test_an_unknown_precision_is_named(moons):
    svc, Xv, yv = moons
    with pytest.raises(ValueError, match=r"precision must be one of .* got 'float64'"):
        compress(svc, Xv, yv, max_bytes=BUDGET, precision="float64", method="construct")
