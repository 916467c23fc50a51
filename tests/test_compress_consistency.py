"""What compress returns agrees with its own report and with independent computations:
the original's numbers are scikit-learn's, the chosen row's error and agreement are the
returned model's, its vectors are counted as stated, and the result does not depend on
the form the machine is given in, the labels' names or the order of the validation rows.
(Which candidate wins is not asserted here: only that the report describes the result.)"""

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.metrics import accuracy_score
from sklearn.svm import SVC

from sparsekm import compress
from sparsekm.multiclass import ExpansionClassifier


@pytest.fixture(scope="module")
def moons():
    """100 training and 60 validation points of the two moons."""
    X, y = make_moons(160, noise=0.25, random_state=0)
    return X[:100], y[:100], X[100:], y[100:]


def _small(model, Xv, yv, method=("construct", "construct+refine"), n_vectors=6):
    return compress(model, Xv, yv, n_vectors=n_vectors, method=list(method), random_state=0)


@pytest.fixture(scope="module")
def svc(moons):
    return SVC(C=10, gamma=1.0).fit(*moons[:2])


@pytest.fixture(scope="module")
def result(svc, moons):
    _, _, Xv, yv = moons
    return _small(svc, Xv, yv)


def _chosen(model):
    report = model.compress_report_
    return report["rows"][report["chosen"]]


def test_the_originals_error_is_scikit_learns(svc, moons, result):
    _, _, Xv, yv = moons
    assert result.compress_report_["full_error"] == pytest.approx(1 - svc.score(Xv, yv))


def test_the_originals_size_is_its_distinct_support_vectors(svc, result):
    distinct = np.unique(svc.support_vectors_, axis=0).shape[0]
    assert result.compress_report_["full_n_vectors"] == distinct


def test_the_chosen_rows_error_is_the_returned_models(moons, result):
    _, _, Xv, yv = moons
    assert _chosen(result)["val_error"] == pytest.approx(np.mean(result.predict(Xv) != yv))


def test_the_chosen_rows_agreement_is_recomputed(svc, moons, result):
    _, _, Xv, _ = moons
    assert _chosen(result)["agreement"] == pytest.approx(
        np.mean(result.predict(Xv) == svc.predict(Xv)))


def test_the_vector_count_is_the_models_distinct_vectors_within_the_budget(result):
    vectors = np.asarray(result.expansion_.vectors)
    assert result.n_vectors_ == np.unique(vectors, axis=0).shape[0] <= 6
    assert _chosen(result)["n_vectors"] == result.n_vectors_


def test_every_candidate_asked_for_has_a_row_in_the_order_asked(result):
    assert [r["method"] for r in result.compress_report_["rows"]] == [
        "construct", "construct+refine"]
    assert sum(r["status"] == "chosen" for r in result.compress_report_["rows"]) == 1


def test_binary_predictions_are_the_sign_of_the_decision_function(moons, result):
    _, _, Xv, _ = moons
    dec = result.decision_function(Xv)
    np.testing.assert_array_equal(result.predict(Xv), result.classes_[(dec > 0).astype(int)])


def test_score_is_the_accuracy(moons, result):
    _, _, Xv, yv = moons
    assert result.score(Xv, yv) == pytest.approx(accuracy_score(yv, result.predict(Xv)))


def test_the_svc_and_its_expansion_classifier_compress_alike(svc, moons, result):
    _, _, Xv, yv = moons
    other = _small(ExpansionClassifier.from_estimator(svc), Xv, yv)
    np.testing.assert_allclose(other.decision_function(Xv), result.decision_function(Xv),
                               rtol=1e-9, atol=1e-12)


def test_renamed_labels_give_the_renamed_predictions(moons, result):
    Xtr, ytr, Xv, yv = moons
    names = np.array(["left", "right"])
    svc_named = SVC(C=10, gamma=1.0).fit(Xtr, names[ytr])
    named = _small(svc_named, Xv, names[yv])
    np.testing.assert_array_equal(named.classes_, names)
    np.testing.assert_array_equal(named.predict(Xv), names[result.predict(Xv)])


def test_the_order_of_the_validation_rows_does_not_matter(svc, moons, result):
    _, _, Xv, yv = moons
    order = np.random.default_rng(0).permutation(len(yv))
    shuffled = _small(svc, Xv[order], yv[order])
    np.testing.assert_allclose(shuffled.decision_function(Xv), result.decision_function(Xv),
                               rtol=1e-9, atol=1e-12)
    assert ([r["val_error"] for r in shuffled.compress_report_["rows"]]
            == pytest.approx([r["val_error"] for r in result.compress_report_["rows"]]))


def test_three_separated_classes_keep_every_decision():
    X, y = make_blobs(150, centers=[[-4, 0], [4, 0], [0, 5]], cluster_std=0.7,
                      random_state=1)
    svc = SVC(C=10, gamma=0.5).fit(X[:90], y[:90])
    small = _small(svc, X[90:], y[90:], method=["construct"], n_vectors=6)
    assert small.n_vectors_ <= 6
    np.testing.assert_array_equal(small.predict(X[90:]), svc.predict(X[90:]))
    assert _chosen(small)["agreement"] == 1.0


@pytest.mark.parametrize("y_change, match", [
    (lambda y: np.where(np.arange(len(y)) == 0, 7, y), r"labels the model does not know: \[7\]"),
    (lambda y: y + 0.5, r"labels the model does not know: \[0\.5, 1\.5\]"),
], ids=["unknown-class", "fractional"])
def test_validation_labels_the_model_does_not_know_are_named(svc, moons, y_change, match):
    _, _, Xv, yv = moons
    with pytest.raises(ValueError, match=match):
        compress(svc, Xv, y_change(yv), n_vectors=6, method="construct")


def test_empty_validation_rows_are_refused(svc, moons):
    _, _, Xv, yv = moons
    with pytest.raises(ValueError, match=r"X_val is empty \(shape \(0, 2\)\)"):
        compress(svc, Xv[:0], yv[:0], n_vectors=6, method="construct")


@pytest.mark.parametrize("method", [["construct", "magic"], []], ids=["unknown", "empty"])
def test_a_method_list_must_name_known_candidates(svc, moons, method):
    _, _, Xv, yv = moons
    with pytest.raises(ValueError, match=r"'method' parameter of compress .* a list of them"):
        compress(svc, Xv, yv, n_vectors=6, method=method)


def test_training_rows_without_labels_are_refused(svc, moons):
    Xtr, ytr, Xv, yv = moons
    with pytest.raises(ValueError, match="Pass both X_train and y_train, or neither"):
        compress(svc, Xv, yv, n_vectors=6, method="construct", X_train=Xtr)
    with pytest.raises(ValueError, match=r"y_train must be 1-D with one label per row of "
                                         r"X_train \(100\)"):
        compress(svc, Xv, yv, n_vectors=6, method="construct", X_train=Xtr, y_train=ytr[:-1])


def test_a_data_method_without_training_rows_leaves_no_usable_candidate(svc, moons):
    _, _, Xv, yv = moons
    with pytest.raises(ValueError, match=r"no candidate gave a usable model at 6 vectors "
                                         r"\(uniform-svm: refused \(needs the training data"):
        compress(svc, Xv, yv, n_vectors=6, method="uniform-svm")


def test_a_method_named_twice_is_tried_once(svc, moons):
    _, _, Xv, yv = moons
    twice = _small(svc, Xv, yv, method=["construct", "construct"])
    assert [r["method"] for r in twice.compress_report_["rows"]] == ["construct"]
