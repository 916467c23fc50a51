"""``sparsekm reduce`` refuses, with exit 2 and a line naming the option, every
combination of options that cannot apply -- before it loads anything or writes any
file -- and refuses data files whose label column does not fit the model (exit 1)."""

import numpy as np
import pytest
from sklearn.svm import SVC

import sparsekm
from sparsekm.cli import main
from sparsekm.multiclass import ExpansionClassifier


@pytest.fixture(scope="module")
def svc_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("reduce")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 2))
    y = (X[:, 0] > 0).astype(int)
    sparsekm.save(ExpansionClassifier.from_estimator(SVC(C=1, gamma=0.5).fit(X, y)),
                  d / "svc.skm")
    np.savetxt(d / "val.csv", np.column_stack([X[:20], y[:20]]), delimiter=",")
    np.savetxt(d / "half.csv", np.column_stack([X[:20], y[:20] + 0.5]), delimiter=",")
    np.savetxt(d / "onecol.csv", y[:20, None], delimiter=",")
    return d


def _usage(svc_file, capsys, *options, model="svc.skm"):
    """Run reduce; it must be a usage error (exit 2) writing nothing; return stderr."""
    out = svc_file / "out.skm"
    with pytest.raises(SystemExit) as exc:
        main(["reduce", str(svc_file / model), "-o", str(out), *options])
    assert exc.value.code == 2
    assert not out.exists()
    return capsys.readouterr().err


def test_without_a_budget_or_a_tolerance(svc_file, capsys):
    assert "reduce needs -n/--n-vectors" in _usage(svc_file, capsys)


@pytest.mark.parametrize("bad, says", [("0", "must be >= 1, got 0"),
                                       ("2.5", "expected a whole number >= 1, got '2.5'")])
def test_n_must_be_a_positive_whole_number(svc_file, capsys, bad, says):
    assert says in _usage(svc_file, capsys, "-n", bad)


def test_plot_needs_candidates(svc_file, capsys):
    assert "--plot applies with --validation/--train" in _usage(
        svc_file, capsys, "-n", "3", "--plot", str(svc_file / "p.png"))


def test_time_limit_needs_candidates(svc_file, capsys):
    assert "--time-limit applies with --validation/--train" in _usage(
        svc_file, capsys, "-n", "3", "--time-limit", "5")


def test_a_method_that_trains_needs_data(svc_file, capsys):
    err = _usage(svc_file, capsys, "-n", "3", "--method", "kmeans-svm")
    assert "--method kmeans-svm needs data" in err and "--validation" in err


def test_budget_and_tolerance_together(svc_file, capsys):
    err = _usage(svc_file, capsys, "-n", "3", "--max-error-increase", "0.01",
                 "--validation", str(svc_file / "val.csv"))
    assert "give -n N (a budget) or --max-error-increase TOL (a tolerance), not both" in err


def test_per_class_with_data(svc_file, capsys):
    err = _usage(svc_file, capsys, "-n", "3", "--per-class",
                 "--validation", str(svc_file / "val.csv"))
    assert "--per-class applies to -n without --validation/--train" in err


def test_a_tolerance_needs_rows_to_measure_it_on(svc_file, capsys):
    assert "--max-error-increase needs --validation VAL and/or --train TRAIN" in _usage(
        svc_file, capsys, "--max-error-increase", "0.01")


def test_the_checks_come_before_loading(svc_file, capsys):
    # the model file does not exist: the option check answers first
    assert "reduce needs -n/--n-vectors" in _usage(svc_file, capsys, model="missing.skm")


def test_a_data_file_without_a_label_column_is_refused(svc_file, capsys):
    assert main(["--quiet", "reduce", str(svc_file / "svc.skm"), "-n", "3", "-o",
                 str(svc_file / "o1.skm"), "--validation", str(svc_file / "onecol.csv")]) == 1
    assert "needs feature columns and a label column (the last)" in capsys.readouterr().err
    assert not (svc_file / "o1.skm").exists()


def test_labels_that_are_not_whole_numbers_for_integer_classes(svc_file, capsys):
    assert main(["--quiet", "reduce", str(svc_file / "svc.skm"), "-n", "3", "-o",
                 str(svc_file / "o2.skm"), "--validation", str(svc_file / "half.csv")]) == 1
    err = capsys.readouterr().err
    assert "label column (the last) holds values that are not whole numbers (e.g. 0.5)" in err
    assert "classes are integers" in err
    assert not (svc_file / "o2.skm").exists()
