"""``sparsekm predict`` prints what the saved model computes: labels or decision values of
a classifier, every output of a multi-output expansion, a transformer's features; written
files hold the same numbers; wrong inputs get one line naming the problem."""

import json

import numpy as np
import pytest
from sklearn.svm import SVC

import sparsekm
from sparsekm import KernelExpansion
from sparsekm.cli import main
from sparsekm.kernels import RBF
from sparsekm.multiclass import ExpansionClassifier


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("predict")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] * X[:, 1] > 0, "yes", "no")
    clf = ExpansionClassifier.from_estimator(SVC(C=3, gamma=0.7).fit(X, y))
    sparsekm.save(clf, d / "clf.skm")
    two = KernelExpansion(rng.normal(size=(6, 3)), rng.normal(size=(6, 2)), RBF(0.4),
                          np.array([0.5, -0.25]))
    sparsekm.save(two, d / "two.skm")
    np.save(d / "x.npy", X[:7])
    np.save(d / "x4.npy", rng.normal(size=(7, 4)))
    return d, X[:7], clf, two


def _rows(text):
    return [line.split(",") for line in text.splitlines()]


def test_labels_printed_are_the_classifiers_predictions(saved, capsys):
    d, X, clf, _ = saved
    assert main(["predict", str(d / "clf.skm"), str(d / "x.npy")]) == 0
    assert capsys.readouterr().out.split() == clf.predict(X).tolist()


def test_decision_values_printed_to_ten_digits(saved, capsys):
    d, X, clf, _ = saved
    assert main(["predict", str(d / "clf.skm"), str(d / "x.npy"), "--decision"]) == 0
    printed = np.array([float(v) for v in capsys.readouterr().out.split()])
    np.testing.assert_allclose(printed, clf.decision_function(X), rtol=1e-9, atol=1e-300)


def test_every_output_of_a_multi_output_expansion_is_a_column(saved, capsys):
    d, X, _, two = saved
    assert main(["predict", str(d / "two.skm"), str(d / "x.npy")]) == 0
    printed = np.array(_rows(capsys.readouterr().out), dtype=float)
    assert printed.shape == (7, 2)
    # f_k(x) = sum_j coef_jk exp(-gamma |x - z_j|^2) + b_k, computed here directly
    sq = ((X[:, None, :] - np.asarray(two.vectors)[None]) ** 2).sum(-1)
    expected = np.exp(-0.4 * sq) @ np.asarray(two.coef) + np.array([0.5, -0.25])
    np.testing.assert_allclose(printed, expected, rtol=1e-9)


def test_written_npy_holds_the_decision_values_exactly(saved, capsys):
    d, X, clf, _ = saved
    out = d / "dec.npy"
    assert main(["predict", str(d / "clf.skm"), str(d / "x.npy"), "--decision",
                 "-o", str(out), "--force"]) == 0
    np.testing.assert_array_equal(np.load(out), clf.decision_function(X))
    assert capsys.readouterr().err.strip() == f"wrote 7 rows to {out}"


def test_written_json_holds_the_labels(saved, capsys):
    d, X, clf, _ = saved
    out = d / "labels.json"
    assert main(["predict", str(d / "clf.skm"), str(d / "x.npy"), "-o", str(out),
                 "--force"]) == 0
    assert json.loads(out.read_text()) == clf.predict(X).tolist()
    assert "wrote 7 labels" in capsys.readouterr().err


def test_decision_on_an_expansion_is_a_usage_error(saved, capsys):
    d, _, _, _ = saved
    with pytest.raises(SystemExit) as exc:
        main(["predict", str(d / "two.skm"), str(d / "x.npy"), "--decision"])
    assert exc.value.code == 2
    assert "--decision applies to classifiers" in capsys.readouterr().err


def test_rows_with_the_wrong_number_of_features_are_one_line(saved, capsys):
    d, _, _, _ = saved
    assert main(["predict", str(d / "clf.skm"), str(d / "x4.npy")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sparsekm: error:")
    assert "X has 4 features" in err and "expecting 3 features" in err


def test_index_col_gives_the_predictions_without_the_index(saved, capsys):
    d, X, clf, _ = saved
    np.savetxt(d / "ix.csv", np.column_stack([np.arange(7) + 100, X]), delimiter=",",
               fmt="%.17g")
    assert main(["predict", str(d / "clf.skm"), str(d / "ix.csv"), "--index-col"]) == 0
    assert capsys.readouterr().out.split() == clf.predict(X).tolist()


def test_a_missing_model_file_is_named(saved, capsys):
    d, _, _, _ = saved
    assert main(["predict", str(d / "none.skm"), str(d / "x.npy")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"sparsekm: error: model file {d / 'none.skm'}: no such file")


def test_an_unknown_output_extension_is_refused_before_loading(saved, capsys):
    d, _, _, _ = saved
    with pytest.raises(SystemExit) as exc:  # the model is missing: not even looked at
        main(["predict", str(d / "none.skm"), str(d / "x.npy"), "-o", str(d / "y.xls")])
    assert exc.value.code == 2
    assert "unknown output format '.xls'" in capsys.readouterr().err


def test_a_transformer_prints_its_features(tmp_path, capsys):
    from sparsekm.models import KernelPCA

    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    kpca = KernelPCA(n_components=2, kernel=RBF(0.5)).fit(X)
    sparsekm.save(kpca, tmp_path / "kpca.skm")
    np.save(tmp_path / "x.npy", X[:5])
    assert main(["predict", str(tmp_path / "kpca.skm"), str(tmp_path / "x.npy")]) == 0
    printed = np.array(_rows(capsys.readouterr().out), dtype=float)
    np.testing.assert_allclose(printed, kpca.transform(X[:5]), rtol=1e-9, atol=1e-12)


def test_labels_written_as_text_are_one_per_line(saved, capsys):
    d, X, clf, _ = saved
    out = d / "labels.txt"
    assert main(["predict", str(d / "clf.skm"), str(d / "x.npy"), "-o", str(out),
                 "--force"]) == 0
    assert out.read_text().split("\n")[:-1] == clf.predict(X).tolist()
