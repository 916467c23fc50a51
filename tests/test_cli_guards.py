"""The command line refuses what it cannot do before doing any work: unwritable outputs,
hour-long selections, options a reproduction ignores, a report figure over the model; it
reads a CSV's numeric header as names, and loads models the same way with or without data."""

import numpy as np
import pytest
from sklearn.datasets import make_moons

import sparsekm


def test_csv_of_pandas_default_column_names_has_no_extra_row(tmp_path, capsys):
    """pandas.DataFrame(X).to_csv(index=False) writes the header '0,1,2,...', which is
    numeric: it was read as a data row (one prediction too many, in silence). A table of
    whole numbers keeps such a first line as data."""
    import pandas as pd
    from sklearn.svm import SVC

    from sparsekm.cli import main, read_matrix
    from sparsekm.multiclass import ExpansionClassifier

    X, y = make_moons(40, noise=0.25, random_state=0)
    svc = SVC(C=10, gamma=1.0).fit(X, y)
    sparsekm.save(ExpansionClassifier.from_estimator(svc),
                  tmp_path / "m.skm")
    pd.DataFrame(X).to_csv(tmp_path / "x.csv", index=False)
    assert main(["predict", str(tmp_path / "m.skm"), str(tmp_path / "x.csv")]) == 0
    out = capsys.readouterr()
    assert out.out.split() == [str(v) for v in svc.predict(X)]
    assert "column names" in out.err
    pd.DataFrame(X).to_csv(tmp_path / "x.txt", index=False, sep=" ")
    np.testing.assert_array_equal(read_matrix(tmp_path / "x.txt", note=lambda t: None), X)
    (tmp_path / "ints.csv").write_text("0,1,2\n3,4,5\n")
    np.testing.assert_array_equal(read_matrix(tmp_path / "ints.csv"), [[0, 1, 2], [3, 4, 5]])


def _cli_case(tmp_path, monkeypatch):
    """A joblib SVC and a validation CSV in ``tmp_path``; compress (and reduce_expansion)
    replaced by a function that fails if called: the refusals must come first."""
    import importlib

    import joblib
    from sklearn.svm import SVC

    X, y = make_moons(60, noise=0.25, random_state=0)
    joblib.dump(SVC(C=10, gamma=1.0).fit(X, y), tmp_path / "m.joblib")
    np.savetxt(tmp_path / "val.csv", np.column_stack([X, y]), delimiter=",")

    def never(*a, **k):
        raise AssertionError("the reduction ran")

    monkeypatch.setattr(importlib.import_module("sparsekm.compression"), "compress", never)
    monkeypatch.setattr("sparsekm.reduced_set.reduce_expansion", never)


def test_reduce_refuses_an_unwritable_output_before_the_work(tmp_path, capsys, monkeypatch):
    """reduce ran the whole reduction (compress: minutes to hours) and only then failed to
    save to a read-only file, a folder or a missing folder; it refuses them up front."""
    import os

    from sparsekm.cli import main

    _cli_case(tmp_path, monkeypatch)
    (tmp_path / "ro.skm").write_bytes(b"old")
    os.chmod(tmp_path / "ro.skm", 0o444)
    base = ["--quiet", "reduce", str(tmp_path / "m.joblib"), "--trust-pickle", "-n", "4"]
    for out, words in ((tmp_path / "ro.skm", "read-only"), (tmp_path, "folder"),
                       (tmp_path / "nope" / "m.skm", "does not exist")):
        for extra in ([], ["--validation", str(tmp_path / "val.csv")]):
            assert main([*base, *extra, "-o", str(out)]) == 1, (out, extra)
            assert words in capsys.readouterr().err
    assert (tmp_path / "ro.skm").read_bytes() == b"old"


def test_reduce_with_data_loads_models_as_reduce_without(tmp_path, capsys):
    """reduce --validation read the model with its own copy of the loading code: a
    corrupt file given with --trust-pickle failed with the unpickler's raw error, and a
    pickle was unpickled without the warning reduce -n gives. Both paths share
    load_object now."""
    import joblib
    from sklearn.svm import SVC

    from sparsekm.cli import main

    X, y = make_moons(60, noise=0.25, random_state=0)
    np.savetxt(tmp_path / "val.csv", np.column_stack([X, y]), delimiter=",")
    (tmp_path / "bad.bin").write_bytes(b"\x80\x04garbage that is no pickle")
    data = ["--validation", str(tmp_path / "val.csv"), "--method", "construct"]
    assert main(["--quiet", "reduce", str(tmp_path / "bad.bin"), "--trust-pickle", "-n", "4",
                 *data, "-o", str(tmp_path / "o.skm")]) == 1
    assert "could not be unpickled" in capsys.readouterr().err
    joblib.dump(SVC(C=10, gamma=1.0).fit(X, y), tmp_path / "m.joblib")
    assert main(["--quiet", "reduce", str(tmp_path / "m.joblib"), "--trust-pickle", "-n", "4",
                 *data, "-o", str(tmp_path / "o.skm")]) == 0
    assert "warning: unpickling" in capsys.readouterr().err


def test_reduce_with_data_refuses_hour_long_selections_up_front(tmp_path, capsys,
                                                                monkeypatch):
    """reduce -n refuses select-kpca / shared select-l1 where they would take hours; with
    --validation (compress) the same selections ran unguarded."""
    from sparsekm import cli

    _cli_case(tmp_path, monkeypatch)
    monkeypatch.setattr("sparsekm.cli._commands.reduce._KPCA_MAX_WORK", 1e3)
    base = ["--quiet", "reduce", str(tmp_path / "m.joblib"), "--trust-pickle",
            "--validation", str(tmp_path / "val.csv"), "--method", "select-kpca",
            "-o", str(tmp_path / "o.skm")]
    for size in (["-n", "5"], ["--max-error-increase", "0.01"]):
        with pytest.raises(SystemExit) as exc:
            cli.main([*base, *size])
        assert exc.value.code == 2 and "far too long" in capsys.readouterr().err


def test_reproduce_table_options_refused_where_ignored(capsys):
    """--datasets and --seeds are read by Wu et al.'s tables only; given with other
    reproductions they were ignored, and every section's command line showed them."""
    from sparsekm.cli import main
    from sparsekm.reproduce import Context
    from sparsekm.reproduce._report import command_line

    for extra in (["--datasets", "banana"], ["--seeds", "5"]):
        with pytest.raises(SystemExit) as exc:
            main(["reproduce", "ripley", "franc-pca", *extra])
        assert exc.value.code == 2 and extra[0] in capsys.readouterr().err
    ctx = Context(datasets=("banana",), seeds=5)
    assert command_line("ripley", ctx) == "sparsekm reproduce ripley"
    assert command_line("wu-table1", ctx).endswith("--datasets banana --seeds 5")


def test_reduce_report_figure_never_replaces_the_model(tmp_path, capsys):
    """With -o model.png the report's default figure (OUTPUT with .png) overwrote the saved
    model; --plot naming the model's own file is refused."""
    import joblib
    from sklearn.svm import SVC

    from sparsekm.cli import main

    X, y = make_moons(60, noise=0.25, random_state=0)
    joblib.dump(SVC(C=10, gamma=1.0).fit(X, y), tmp_path / "m.joblib")
    np.savetxt(tmp_path / "val.csv", np.column_stack([X, y]), delimiter=",")
    base = ["--quiet", "reduce", str(tmp_path / "m.joblib"), "--trust-pickle", "-n", "4",
            "--validation", str(tmp_path / "val.csv"), "--method", "construct"]
    assert main([*base, "-o", str(tmp_path / "model.png")]) == 0
    capsys.readouterr()
    small = sparsekm.load(tmp_path / "model.png")  # still the model
    assert small.n_vectors_ <= 4 and (tmp_path / "model.png.report.png").stat().st_size > 0
    with pytest.raises(SystemExit) as exc:
        main([*base, "-o", str(tmp_path / "m2.skm"), "--plot", str(tmp_path / "m2.skm")])
    assert exc.value.code == 2 and not (tmp_path / "m2.skm").exists()


