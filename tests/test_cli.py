import re

import pytest

from sparsekm.cli import main


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("demo", "info", "reproduce"):
        assert cmd in out


def test_no_command_is_a_usage_error(capsys):
    assert main([]) == 2


def test_unknown_option_exits_2():
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--no-such-option"])
    assert exc.value.code == 2


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sparsekm ")
    assert "data folder" in out


def test_demo_prints_table_and_writes_figure(capsys, tmp_path):
    assert main(["demo", "--quiet", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = {}
    for line in out.splitlines():
        m = re.match(r"(.+?)\s{2,}(\d+)\s+([\d.]+)%\s+(\d+)\s+([\d.]+)x", line)
        if m:
            rows[m.group(1).strip()] = (int(m.group(2)), float(m.group(3)), float(m.group(5)))
    assert rows["sklearn OneVsRestClassifier(SVC)"][1] < 3.0  # about 0.4 % on the digits
    exact = rows["KernelExpansion (same SVM, exact)"]
    assert exact[1] == rows["sklearn OneVsRestClassifier(SVC)"][1]
    assert rows["RS-10 per class"][0] == 100 and rows["RS-10 per class"][1] < 3.0
    assert rows["SLMC-10 per class"][0] == 100 and rows["SLMC-10 per class"][1] < 3.0
    assert rows["RS-10 per class"][2] > 1.0  # measured speed-up over sklearn
    assert (tmp_path / "demo_rs_vectors.png").stat().st_size > 10_000


def test_reproduce_unknown_name_is_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "no-such-table"])
    assert exc.value.code == 2
    assert "unknown reproduction" in capsys.readouterr().err


def test_runtime_error_is_one_line_exit_1(capsys, monkeypatch):
    from sparsekm import cli

    def boom(args):
        raise ValueError("something broke")

    monkeypatch.setattr(cli, "cmd_info", boom)
    assert main(["info"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "sparsekm: error: ValueError: something broke"
    with pytest.raises(ValueError, match="something broke"):
        main(["info", "--debug"])


def test_predict_with_saved_expansion(tmp_path, capsys):
    import numpy as np

    import sparsekm
    from sparsekm.kernels import RBF

    rng = np.random.default_rng(0)
    psi = sparsekm.KernelExpansion(rng.normal(size=(5, 3)), rng.normal(size=5), RBF(0.5), 0.25)
    sparsekm.save(psi, tmp_path / "m.skm")
    X = rng.normal(size=(4, 3))
    np.save(tmp_path / "x.npy", X)
    np.savetxt(tmp_path / "x.csv", X, delimiter=",", header="a,b,c", comments="")
    assert main(["predict", str(tmp_path / "m.skm"), str(tmp_path / "x.npy"),
                 "-o", str(tmp_path / "y.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), psi.decision_function(X))
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "m.skm"), str(tmp_path / "x.csv")]) == 0
    out = np.loadtxt(capsys.readouterr().out.splitlines())
    np.testing.assert_allclose(out, psi.decision_function(X), rtol=1e-9)


def test_predict_errors_are_one_line(tmp_path, capsys):
    import numpy as np

    (tmp_path / "bad.skm").write_bytes(b"not a model")
    np.save(tmp_path / "x.npy", np.ones((2, 3)))
    assert main(["predict", str(tmp_path / "bad.skm"), str(tmp_path / "x.npy")]) == 1
    assert "FormatError" in capsys.readouterr().err
    import sparsekm
    from sparsekm.kernels import RBF

    sparsekm.save(sparsekm.KernelExpansion(np.ones((1, 2)), [1.0], RBF()), tmp_path / "m.skm")
    assert main(["predict", str(tmp_path / "m.skm"), str(tmp_path / "x.npy")]) == 1
    assert "X has 3 features, but KernelExpansion is expecting 2" in capsys.readouterr().err
    np.save(tmp_path / "nan.npy", np.array([[np.nan, 1.0]]))
    assert main(["predict", str(tmp_path / "m.skm"), str(tmp_path / "nan.npy")]) == 1
    assert "contains NaN" in capsys.readouterr().err


def test_reduce_saved_svc_and_predict(tmp_path, capsys):
    import joblib
    import numpy as np
    from sklearn.svm import SVC

    import sparsekm

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    y = (X[:, 0] ** 2 + X[:, 1] > 0.3).astype(int)
    svc = SVC(gamma=0.5, C=10).fit(X, y)
    joblib.dump(svc, tmp_path / "svc.joblib")
    # without --trust-pickle a pickle is refused with a one-line explanation
    assert main(["reduce", str(tmp_path / "svc.joblib"), "-n", "5", "-o",
                 str(tmp_path / "r.skm")]) == 1
    assert "--trust-pickle" in capsys.readouterr().err
    assert main(["--quiet", "reduce", str(tmp_path / "svc.joblib"), "-n", "8", "--trust-pickle",
                 "-o", str(tmp_path / "r.skm")]) == 0
    out = capsys.readouterr()
    assert "reduced with construct to 8 vectors" in out.out
    assert "unpickling" in out.err
    reduced = sparsekm.load(tmp_path / "r.skm")
    assert reduced.n_terms == 8
    # the 8-vector machine agrees with the full SVC on most points
    agree = np.mean((reduced.decision_function(X) > 0) == svc.predict(X).astype(bool))
    assert agree > 0.9
    # and a saved sparsekm expansion is reduced without any pickle
    sparsekm.save(sparsekm.KernelExpansion.from_estimator(svc), tmp_path / "full.skm")
    assert main(["--quiet", "reduce", str(tmp_path / "full.skm"), "-n", "6", "--method",
                 "select-kpca", "-o", str(tmp_path / "s.skm")]) == 0
    assert sparsekm.load(tmp_path / "s.skm").n_terms == 6
