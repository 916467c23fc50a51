"""compress's tolerance mode (its target and the walk over budgets), the models it takes
and refuses (NuSVC, one-vs-one, kernels without an equivalent), its input forms, byte
budgets of multi-class and string-labelled machines, and the chance rule. Which
candidate wins is not asserted: one candidate is asked for where a choice is involved."""

import contextlib
import io
import re

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.multiclass import OneVsOneClassifier
from sklearn.svm import SVC, NuSVC

from sparsekm import compress

from ._small_cases import layout_bytes


@pytest.fixture(scope="module")
def data():
    X, y = make_moons(160, noise=0.25, random_state=0)
    svc = SVC(C=10, gamma=1.0).fit(X[:100], y[:100])
    return svc, X[:100], y[:100], X[100:], y[100:]


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(150, centers=[[-4, 0], [4, 0], [0, 5]], cluster_std=0.7, random_state=1)
    return X[:90], y[:90], X[90:], y[90:]


def _construct(model, Xv, yv, **kw):
    return compress(model, Xv, yv, method="construct", random_state=0, **kw)


# -- tolerance mode -----------------------------------------------------------------------
def test_without_a_budget_the_tolerance_is_half_a_point(data):
    svc, _, _, Xv, yv = data
    report = _construct(svc, Xv, yv).compress_report_
    assert report["mode"] == "tolerance"
    assert report["target_error"] == pytest.approx(report["full_error"] + 0.005)


def test_a_given_tolerance_is_added_to_the_originals_error(data):
    svc, _, _, Xv, yv = data
    report = _construct(svc, Xv, yv, max_error_increase=0.02).compress_report_
    assert report["target_error"] == pytest.approx(report["full_error"] + 0.02)


def test_the_walk_doubles_then_bisects(data):
    svc, _, _, Xv, yv = data
    report = _construct(svc, Xv, yv, max_error_increase=0.0).compress_report_
    budgets = [r["budget"] for r in report["rows"]]
    meets = [r["val_error"] <= report["target_error"] + 1e-12 for r in report["rows"]]
    first = meets.index(True)  # doubling: 1, 2, 4, ... up to the first that meets it
    assert budgets[:first + 1] == [2 ** i for i in range(first + 1)]
    lo, hi = budgets[first] // 2, budgets[first]
    assert all(lo < b < hi for b in budgets[first + 1:])  # then inside the last step


def test_zero_tolerance_gives_no_more_errors_than_the_original(data):
    svc, _, _, Xv, yv = data
    small = _construct(svc, Xv, yv, max_error_increase=0.0)
    assert np.mean(small.predict(Xv) != yv) <= np.mean(svc.predict(Xv) != yv)


# -- the models it takes and refuses --------------------------------------------------------
def test_a_nu_svc_at_full_budget_comes_back_as_it_decides(data):
    _, Xtr, ytr, Xv, yv = data
    nu = NuSVC(gamma=1.0).fit(Xtr, ytr)
    same = compress(nu, Xv, yv, n_vectors=10_000)
    np.testing.assert_allclose(same.decision_function(Xv), nu.decision_function(Xv),
                               rtol=1e-9, atol=1e-12)
    assert same.n_vectors_ == len(nu.support_)


def test_a_one_vs_one_classifier_at_full_budget_predicts_as_before(blobs):
    Xtr, ytr, Xv, yv = blobs
    ovo = OneVsOneClassifier(SVC(C=10, gamma=0.5)).fit(Xtr, ytr)
    same = compress(ovo, Xv, yv, n_vectors=10_000)
    np.testing.assert_array_equal(same.predict(Xv), ovo.predict(Xv))
    np.testing.assert_array_equal(same.classes_, ovo.classes_)


def test_kernels_without_a_sparsekm_equivalent_are_named(data):
    _, Xtr, ytr, Xv, yv = data
    for svc in (SVC(kernel="precomputed").fit(Xtr @ Xtr.T, ytr),
                SVC(kernel=lambda A, B: A @ B.T).fit(Xtr, ytr)):
        with pytest.raises(TypeError, match=r"Cannot convert SVC with kernel=.*\(its 'kernel' "
                                             r"parameter\): only 'rbf', 'poly', 'sigmoid'"):
            compress(svc, Xv if svc.kernel != "precomputed" else Xv @ Xtr.T, yv, n_vectors=5)


def test_a_sigmoid_machine_cannot_be_constructed_and_says_why(data):
    _, Xtr, ytr, Xv, yv = data
    sig = SVC(kernel="sigmoid", gamma=0.1).fit(Xtr, ytr)
    with pytest.raises(ValueError, match=r"no candidate gave a usable model at 5 vectors "
                                         r"\(construct: failed .* positive semi-definite"):
        _construct(sig, Xv, yv, n_vectors=5)


def test_a_result_no_better_than_the_majority_class_is_refused(data):
    svc, _, _, Xv, yv = data
    with pytest.raises(ValueError, match=r"construct: refused \(error .* is no better than "
                                         r"always predicting the most frequent class"):
        _construct(svc, Xv, yv, n_vectors=1)


def test_validation_rows_of_one_class_are_refused(data):
    """Rows of one class make every validation rule vacuous (always predicting it errs
    on none): refused, naming the reason, before anything is fitted."""
    svc, _, _, Xv, yv = data
    with pytest.raises(ValueError, match=r"y_val holds one class only \(\[1\]\)"):
        _construct(svc, Xv[yv == 1], yv[yv == 1], n_vectors=6)


def test_the_result_cannot_be_fitted_again(data):
    svc, Xtr, ytr, Xv, yv = data
    small = _construct(svc, Xv, yv, n_vectors=6)
    with pytest.raises(TypeError, match=r"built by sparsekm.compress\(model, \.\.\.\), not "
                                        r"fitted"):
        small.fit(Xtr, ytr)
    with pytest.raises(ValueError, match="Reshape your data"):
        small.decision_function(Xv[0])  # one row must be given as a row


# -- input forms -----------------------------------------------------------------------------
def test_text_validation_rows_are_refused(data):
    svc, _, _, _, yv = data
    with pytest.raises(TypeError, match=r"X_val must hold real numbers; got an array of "
                                        r"dtype <U1"):
        compress(svc, np.array([["a", "b"]] * len(yv)), yv, n_vectors=6, method="construct")


def test_float32_rows_and_a_numpy_budget_give_the_same_model(data):
    svc, _, _, Xv, yv = data
    ref = _construct(svc, Xv, yv, n_vectors=6).decision_function(Xv)
    other = _construct(svc, Xv.astype(np.float32), yv, n_vectors=np.int64(6))
    np.testing.assert_array_equal(other.decision_function(Xv), ref)


def test_fresh_random_states_of_one_seed_give_one_model(data):
    svc, _, _, Xv, yv = data
    a, b = (compress(svc, Xv, yv, n_vectors=6, method="construct",
                     random_state=np.random.RandomState(3)) for _ in range(2))
    np.testing.assert_array_equal(a.decision_function(Xv), b.decision_function(Xv))


def test_one_machine_needs_no_sharing(data):
    svc, _, _, Xv, yv = data
    np.testing.assert_array_equal(
        _construct(svc, Xv, yv, n_vectors=6, shared=False).decision_function(Xv),
        _construct(svc, Xv, yv, n_vectors=6, shared=True).decision_function(Xv))


def test_compress_prints_nothing_by_default(data):
    svc, _, _, Xv, yv = data
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        compress(svc, Xv, yv, n_vectors=6, method=["construct", "construct+refine"],
                 random_state=0)
    assert out.getvalue() == "" and err.getvalue() == ""


def test_a_shared_multi_class_set_stores_each_vector_once(blobs):
    Xtr, ytr, Xv, yv = blobs
    small = _construct(SVC(C=10, gamma=0.5).fit(Xtr, ytr), Xv, yv, n_vectors=6)
    V = np.asarray(small.expansion_.vectors)
    assert len(V) == len(np.unique(V, axis=0)) == small.n_vectors_ <= 6


# -- deployment budgets ----------------------------------------------------------------------
def test_a_three_class_machine_is_counted_with_three_outputs_and_labels(blobs):
    Xtr, ytr, Xv, yv = blobs
    svc = SVC(C=10, gamma=0.5).fit(Xtr, ytr)  # one-vs-one: 3 outputs
    report = _construct(svc, Xv, yv, max_bytes=300).compress_report_
    for line in report["deploy_conversion"]:
        precision = line.split(":")[0]
        n = int(line.rsplit("<= ", 1)[1])
        kw = dict(n_outputs=3, labels=("0", "1", "2"))
        assert layout_bytes(precision, n, **kw) <= 300 < layout_bytes(precision, n + 1, **kw)


def test_string_labels_are_stored_with_their_length(data):
    _, Xtr, ytr, Xv, yv = data
    names = np.array(["left", "right"])
    svc = SVC(C=10, gamma=1.0).fit(Xtr, names[ytr])
    report = _construct(svc, Xv, names[yv], max_bytes=150).compress_report_
    fixed = layout_bytes("float32", 0, labels=("left", "right"))
    assert f"float32: {fixed} B fixed" in " ".join(report["deploy_conversion"])
    assert fixed == 4 + (4 + 5) + (4 + 6)


def test_bytes_and_microseconds_together_take_the_smaller_size(data):
    svc, _, _, Xv, yv = data
    report = _construct(svc, Xv, yv, max_bytes=150, max_latency_us=2.0).compress_report_
    sizes = {}
    for line in report["deploy_conversion"]:
        precision, n = line.split(":")[0], int(line.rsplit("<= ", 1)[1])
        sizes.setdefault(precision, []).append(n)
    assert all(len(v) == 2 for v in sizes.values())  # one line per budget and precision
    chosen = report["deploy_precision"]
    assert report["deploy_n_vectors"] == min(sizes[chosen])


def test_only_the_precisions_named_are_searched(data):
    svc, _, _, Xv, yv = data
    report = _construct(svc, Xv, yv, max_bytes=150,
                        precision=("float16", "int8")).compress_report_
    assert [c.split(":")[0] for c in report["deploy_candidates"]] == ["float16", "int8"]
    with pytest.raises(ValueError, match=r"latency_target must be one of \['cost model', "
                                         r"'this machine'\]; got 'fast'"):
        _construct(svc, Xv, yv, max_latency_us=2.0, latency_target="fast")
    assert re.fullmatch(r"float16|int8", report["deploy_precision"])
