import re
from pathlib import Path

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


def test_demo_prints_table_and_writes_figure(capsys, tmp_path, monkeypatch):
    from sparsekm import cli

    # the speed-up columns are ratios of what _cpu_timings returns (least CPU time of
    # the repeats): fixed numbers here, so the test checks the arithmetic, not timing
    fake = {"sklearn": 8.0, "exact": 2.0, "RS-25": 0.25, "RS-50": 0.5, "RS-50+refine": 0.5,
            "SLMC-5 per class": 0.4}
    calls = []

    def cpu_timings(fns, repeat=9):
        calls.append((sorted(fns), repeat))
        return {k: fake[k] for k in fns}

    monkeypatch.setattr("sparsekm.cli._commands.demo._cpu_timings", cpu_timings)
    assert main(["demo", "--quiet", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert calls == [(sorted(fake), cli._DEMO_REPEATS)]
    # --quiet: no progress bar, and no warning of any kind (SLMC's short run included)
    assert captured.err == "", captured.err
    rows = {}
    for line in out.splitlines():
        m = re.match(r"(.+?)\s{2,}(\d+)\s+([\d.]+)%\s+([\d.]+)%\s+(-|[\d.]+x)\s+([\d.]+)x",
                     line)
        if m:
            vs_exact = None if m.group(5) == "-" else float(m.group(5)[:-1])
            rows[m.group(1).strip()] = (int(m.group(2)), float(m.group(3)), float(m.group(4)),
                                        vs_exact, float(m.group(6)))
    svc = rows["sklearn SVC (one-vs-one)"]
    assert svc[1] < 3.0  # about 1 % on the digits
    exact = rows["exact (sparsekm evaluator)"]
    assert exact[0] == svc[0] and exact[1] == svc[1] and exact[2] == 100.0
    assert exact[3] == 1.0  # the exact model against itself
    rs = rows["RS-50 (shared)"]
    assert rs[0] == 50 and rs[1] < 4.0 and rs[2] > 95.0
    assert rows["RS-25 (shared)"][0] == 25
    assert rows["SLMC-5 per class"][0] == 50
    assert "'vs exact' against the same SVC in sparsekm's own evaluator" in out
    assert (tmp_path / "demo_rs_vectors.png").stat().st_size > 10_000
    for key, (_, _, _, vs_exact, vs_sklearn) in rows.items():
        if key.startswith(("RS-25", "RS-50 (", "SLMC")):
            name = key.replace(" (shared)", "")
            assert vs_exact == pytest.approx(fake["exact"] / fake[name], abs=0.05)
            assert vs_sklearn == pytest.approx(fake["sklearn"] / fake[name], abs=0.05)
    assert "least of 9" in " ".join(out.split()) and "CPU time" in out
    # accurate wording: the SVC's settings are the papers', not scikit-learn's defaults
    assert "default one-vs-one SVC" not in out and "SVC(C=10, gamma=1/32)" in out
    assert "defaults would be C=1, gamma='scale'" in out


def test_cpu_timings_report_the_least_cpu_time_of_the_repeats():
    from sparsekm import cli

    # a fake CPU clock: each call of a contender advances it by its next duration
    durations = {"a": iter([5.0, 3.0, 4.0, 9.0]), "b": iter([1.0, 2.0, 0.5, 7.0])}
    now = [0.0]

    def clock():
        return now[0]

    def runner(name):
        def fn():
            now[0] += next(durations[name])
        return fn

    t = cli._cpu_timings({"a": runner("a"), "b": runner("b")}, repeat=3, clock=clock)
    # the warm-up (5.0 and 1.0) is not timed; the least of the 3 timed runs counts
    assert t == {"a": 3.0, "b": 0.5}


def test_rs_vector_classes_follow_the_strongest_pair():
    import numpy as np

    from sparsekm import cli

    classes = np.array([3, 5, 7])  # pairs (3,5), (3,7), (5,7)
    coef = np.array([[0.1, -2.0, 0.5],   # strongest: (3,7) negative -> votes for 7
                     [1.5, 0.2, -0.1],   # (3,5) positive -> 3
                     [0.0, 0.3, -0.9]])  # (5,7) negative -> 7
    got = cli._rs_vector_classes(coef, classes)
    assert [(c, o) for c, o, _ in got] == [(7, 3), (3, 5), (7, 5)]
    assert [b for _, _, b in got] == [-2.0, 1.5, -0.9]


def test_reproduce_unknown_name_is_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "no-such-table"])
    assert exc.value.code == 2
    assert "unknown reproduction" in capsys.readouterr().err


def test_runtime_error_is_one_line_exit_1(capsys, monkeypatch):

    def boom(args):
        raise ValueError("something broke")

    monkeypatch.setattr("sparsekm.cli._commands.info.cmd_info", boom)
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
    assert "bad.skm is corrupt: it is not a valid sparsekm file" in capsys.readouterr().err
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
    assert re.search(r"reduced with construct\+refine: \d+ -> 8 distinct vectors", out.out)
    assert re.search(r"agreement with the original on its \d+ vectors", out.out)
    assert "measured speed-up" in out.out
    assert "unpickling" in out.err
    reduced = sparsekm.load(tmp_path / "r.skm")
    assert reduced.expansion.n_terms == 8
    np.testing.assert_array_equal(reduced.classes_, svc.classes_)
    # the 8-vector machine agrees with the full SVC on most points
    agree = np.mean(reduced.predict(X) == svc.predict(X))
    assert agree > 0.9
    # and a saved sparsekm expansion is reduced without any pickle
    sparsekm.save(sparsekm.KernelExpansion.from_estimator(svc), tmp_path / "full.skm")
    assert main(["--quiet", "reduce", str(tmp_path / "full.skm"), "-n", "6", "--method",
                 "select-kpca", "-o", str(tmp_path / "s.skm")]) == 0
    assert sparsekm.load(tmp_path / "s.skm").n_terms == 6


# -- issue 17: labels, total -n, refusals, corrupt files, pipes, reproduce paths ---------
@pytest.fixture(scope="module")
def digits_models(tmp_path_factory):
    import joblib
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    d = tmp_path_factory.mktemp("models")
    X, y = load_digits(return_X_y=True)
    X, y = X[:300] / 16.0, y[:300]
    svc = SVC(C=10, gamma=0.5).fit(X, y)  # scikit-learn's default: one-vs-one
    joblib.dump(svc, d / "svc.joblib")
    ovr = OneVsRestClassifier(SVC(C=10, gamma=0.5)).fit(X[:150], y[:150])
    joblib.dump(ovr, d / "ovr.joblib")
    np.save(d / "x.npy", X[:40])
    return d, X, y, svc, ovr


def test_reduce_ovo_keeps_labels_and_n_is_total(digits_models, capsys):
    import numpy as np

    import sparsekm
    from sparsekm.multiclass import ExpansionClassifier

    d, X, y, svc, _ = digits_models
    assert main(["--quiet", "reduce", str(d / "svc.joblib"), "--trust-pickle", "-n", "40",
                 "-o", str(d / "ovo.skm")]) == 0
    out = capsys.readouterr().out
    n_sv = svc.support_vectors_.shape[0]
    assert f"{n_sv} -> 40 distinct vectors" in out and "one set shared by all outputs" in out
    assert "keeping the classes" in out
    clf = sparsekm.load(d / "ovo.skm")
    assert isinstance(clf, ExpansionClassifier) and clf.scheme == "ovo"
    assert clf.expansion.n_terms == 40 and clf.expansion.n_outputs == 45
    # predict prints one label per row by default ...
    assert main(["predict", str(d / "ovo.skm"), str(d / "x.npy")]) == 0
    labels = capsys.readouterr().out.split()
    np.testing.assert_array_equal(np.array(labels, dtype=int), clf.predict(X[:40]))
    assert np.mean(np.array(labels, dtype=int) == svc.predict(X[:40])) > 0.9
    # ... and decision values, shaped as the SVC's, with --decision
    assert main(["predict", str(d / "ovo.skm"), str(d / "x.npy"), "--decision"]) == 0
    D = np.loadtxt(capsys.readouterr().out.splitlines(), delimiter=",")
    assert D.shape == (40, 10)
    np.testing.assert_allclose(D, clf.decision_function(X[:40]), rtol=1e-9, atol=1e-9)
    # labels to a file
    assert main(["predict", str(d / "ovo.skm"), str(d / "x.npy"), "-o", str(d / "l.csv")]) == 0
    np.testing.assert_array_equal(np.loadtxt(d / "l.csv"), clf.predict(X[:40]))


def test_reduce_per_class_and_option_refusals(digits_models, capsys):
    import sparsekm

    d, _, _, _, ovr = digits_models
    assert main(["--quiet", "reduce", str(d / "ovr.joblib"), "--trust-pickle", "-n", "3",
                 "--per-class", "-o", str(d / "pc.skm")]) == 0
    captured = capsys.readouterr()
    out = captured.out
    clf = sparsekm.load(d / "pc.skm")
    assert clf.scheme == "ovr" and clf.expansion.merge_duplicates().n_terms == 30
    assert "3 per output" in out and "-> 30 distinct vectors" in out
    # larger than the -n asked: warned, with both numbers (issue 39)
    assert "has 30 distinct vectors" in captured.err and "more than the 3 asked" in captured.err
    usage = [
        ["-n", "0"],
        ["-n", "-3"],
        ["-n", "5", "--shared", "--per-class"],
    ]
    for extra in usage:
        with pytest.raises(SystemExit) as exc:
            main(["reduce", str(d / "ovr.joblib"), "--trust-pickle", "-o", str(d / "u.skm"),
                  *extra])
        assert exc.value.code == 2, extra
    assert not (d / "u.skm").exists()
    # options that do not apply to a single-output model
    sparsekm.save(sparsekm.KernelExpansion.from_estimator(ovr.estimators_[0]), d / "bin.skm")
    for opt in ("--per-class", "--shared"):
        with pytest.raises(SystemExit) as exc:
            main(["reduce", str(d / "bin.skm"), "-n", "5", opt, "-o", str(d / "u.skm")])
        assert exc.value.code == 2
        assert f"{opt} applies to models with several outputs" in capsys.readouterr().err
    # --decision does not apply to a bare expansion (its outputs are printed anyway)
    with pytest.raises(SystemExit) as exc:
        main(["predict", str(d / "bin.skm"), str(d / "x.npy"), "--decision"])
    assert exc.value.code == 2


def test_reduce_methods_on_binary_ovr_ovo(digits_models, capsys, monkeypatch, tmp_path):
    import joblib
    import numpy as np
    from sklearn.svm import SVC

    import sparsekm

    d, X, y, _, _ = digits_models
    small = SVC(C=10, gamma=0.5).fit(X[:90], y[:90] % 3)  # one-vs-one, 3 classes
    joblib.dump(small, tmp_path / "small.joblib")
    binary = SVC(C=10, gamma=0.5).fit(X[:90], y[:90] % 2)
    joblib.dump(binary, tmp_path / "bin.joblib")
    from sklearn.multiclass import OneVsRestClassifier

    ovr = OneVsRestClassifier(SVC(C=10, gamma=0.5)).fit(X[:90], y[:90] % 3)
    joblib.dump(ovr, tmp_path / "ovr.joblib")
    refs = {"small": small, "bin": binary, "ovr": ovr}
    for model in ("small", "bin", "ovr"):
        for method in ("construct", "construct+refine", "select-kpca", "select-l1"):
            out = tmp_path / f"{model}-{method}.skm"
            assert main(["--quiet", "reduce", str(tmp_path / f"{model}.joblib"),
                         "--trust-pickle", "-n", "10", "--method", method, "-o", str(out)]) == 0
            clf = sparsekm.load(out)
            assert 1 <= clf.expansion.merge_duplicates().n_terms <= 10, (model, method)
            ref = refs[model]
            assert clf.scheme == {"small": "ovo", "bin": "binary", "ovr": "ovr"}[model]
            # better than chance (1/3, 1/2) with 10 vectors and the SVM's thresholds
            assert np.mean(clf.predict(X[:90]) == ref.predict(X[:90])) > 0.5, (model, method)
    capsys.readouterr()
    # selections that would take hours are refused up front with a usage error
    monkeypatch.setattr("sparsekm.cli._commands.reduce._KPCA_MAX_WORK", 1e3)
    with pytest.raises(SystemExit) as exc:
        main(["reduce", str(d / "svc.joblib"), "--trust-pickle", "-n", "5", "--method",
              "select-kpca", "-o", str(tmp_path / "u.skm")])
    assert exc.value.code == 2 and "would take far too long" in capsys.readouterr().err
    monkeypatch.setattr("sparsekm.cli._commands.reduce._L1_MULTI_MAX_WORK", 1e3)
    with pytest.raises(SystemExit) as exc:
        main(["reduce", str(d / "svc.joblib"), "--trust-pickle", "-n", "5", "--method",
              "select-l1", "-o", str(tmp_path / "u.skm")])
    assert exc.value.code == 2 and "--per-class" not in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # 20 per pair: --per-class is a way out
        main(["reduce", str(d / "svc.joblib"), "--trust-pickle", "-n", "20", "--method",
              "select-l1", "-o", str(tmp_path / "u.skm")])
    assert exc.value.code == 2 and "--per-class" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # 5 per pair: refused with the reason
        main(["reduce", str(d / "svc.joblib"), "--trust-pickle", "-n", "5", "--per-class",
              "--method", "select-l1", "-o", str(tmp_path / "u.skm")])
    assert exc.value.code == 2 and "per binary machine" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # a binary machine: the same rule as compress
        main(["reduce", str(tmp_path / "bin.joblib"), "--trust-pickle", "-n", "5",
              "--method", "select-l1", "-o", str(tmp_path / "u.skm")])
    assert exc.value.code == 2 and "5 vectors: below 10" in capsys.readouterr().err


def test_corrupt_and_random_files_get_one_line_errors(tmp_path, capsys):
    import numpy as np

    import sparsekm
    from sparsekm.kernels import RBF

    sparsekm.save(sparsekm.KernelExpansion(np.ones((2, 2)), [1.0, 2.0], RBF()), tmp_path / "m.skm")
    raw = bytearray((tmp_path / "m.skm").read_bytes())
    raw[len(raw) // 2: len(raw) // 2 + 40] = b"\x00" * 40
    (tmp_path / "c.skm").write_bytes(bytes(raw))
    rng = np.random.default_rng(0)
    (tmp_path / "rand.bin").write_bytes(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    np.save(tmp_path / "x.npy", np.ones((2, 2)))
    cases = [
        (["reduce", str(tmp_path / "c.skm"), "-n", "1", "-o", str(tmp_path / "o.skm")],
         "is corrupt"),
        (["predict", str(tmp_path / "c.skm"), str(tmp_path / "x.npy")], "is corrupt"),
        (["reduce", str(tmp_path / "rand.bin"), "-n", "1", "-o", str(tmp_path / "o.skm")],
         "neither a sparsekm file nor a pickle"),
        (["reduce", str(tmp_path / "rand.bin"), "--trust-pickle", "-n", "1", "-o",
          str(tmp_path / "o.skm")], "could not be unpickled"),
    ]
    for argv, msg in cases:
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if ln.startswith("sparsekm: error")]
        assert len(lines) == 1 and msg in lines[0], err
        assert "--trust-pickle" not in lines[0] and "KeyError" not in lines[0]


def test_predict_into_closed_pipe_is_quiet(tmp_path):
    import os
    import subprocess
    import sys

    import numpy as np

    import sparsekm
    from sparsekm.kernels import RBF

    rng = np.random.default_rng(0)
    sparsekm.save(sparsekm.KernelExpansion(rng.normal(size=(3, 2)), rng.normal(size=3), RBF()),
                  tmp_path / "m.skm")
    np.save(tmp_path / "x.npy", rng.normal(size=(50_000, 2)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = (f"'{sys.executable}' -m sparsekm.cli predict '{tmp_path / 'm.skm'}' "
           f"'{tmp_path / 'x.npy'}' | head -1")
    res = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], capture_output=True,
                         text=True, env=env, timeout=120)
    assert len(res.stdout.splitlines()) == 1
    assert res.stderr == "", res.stderr
    assert res.returncode == 0  # with pipefail: sparsekm's own exit status
    # the same with a reader that closes its end after one line
    proc = subprocess.Popen([sys.executable, "-m", "sparsekm.cli", "predict",
                             str(tmp_path / "m.skm"), str(tmp_path / "x.npy")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""
    proc.stderr.close()
    # a fresh process loads a saved classifier (its class is registered on demand)
    from sklearn.datasets import load_iris
    from sklearn.svm import SVC

    from sparsekm.multiclass import ExpansionClassifier

    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    svc = SVC().fit(X, names)
    sparsekm.save(ExpansionClassifier.from_estimator(svc), tmp_path / "iris.skm")
    np.save(tmp_path / "iris.npy", X[::10])
    res = subprocess.run([sys.executable, "-m", "sparsekm.cli", "predict",
                          str(tmp_path / "iris.skm"), str(tmp_path / "iris.npy")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == list(svc.predict(X[::10]))


def test_reproduce_writes_under_out_or_checkout_docs(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    import sparsekm
    from sparsekm import cli

    docs = cli.checkout_docs()
    checkout = Path(sparsekm.__file__).resolve().parents[2]  # <checkout>/src/sparsekm
    if (checkout / "pyproject.toml").is_file() and (checkout / "docs").is_dir():
        assert docs == checkout / "docs"  # running from the source checkout
    else:
        assert docs is None
    monkeypatch.setattr("sparsekm.cli._commands.reproduce.checkout_docs", lambda: None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "all", "--render-only"])
    assert exc.value.code == 2 and "pass --out DIR" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written into the working directory
    out = tmp_path / "out"
    assert main(["reproduce", "all", "--render-only", "--out", str(out)]) == 0
    assert (out / "results.md").is_file()
    assert not (tmp_path / "docs").exists()
    assert main(["reproduce", "list"]) == 0  # listing needs no folder


def test_help_says_what_predict_prints(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "classifiers print labels" in out and "--decision" in out
    assert "regressors their predictions" in out
    with pytest.raises(SystemExit):
        main(["reduce", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "TOTAL number of distinct vectors" in out and "--per-class" in out


def test_reduce_saved_sparsekm_classifiers_keeps_classes(tmp_path, capsys):
    import numpy as np
    from sklearn.datasets import load_iris

    import sparsekm
    from sparsekm.models import SLMC, ReducedSetClassifier

    X, y = load_iris(return_X_y=True)
    # one-vs-rest, 9 vectors; converges (tol=1e-3), no cap warning
    slmc = SLMC(n_vectors=3, max_iter=40, tol=1e-3, random_state=0).fit(X, y)
    rs = ReducedSetClassifier(n_vectors=6, random_state=0).fit(X, y)  # one-vs-one
    for name, model, scheme in (("slmc", slmc, "ovr"), ("rs", rs, "ovo")):
        sparsekm.save(model, tmp_path / f"{name}.skm")
        assert main(["--quiet", "reduce", str(tmp_path / f"{name}.skm"), "-n", "4", "-o",
                     str(tmp_path / f"{name}-small.skm")]) == 0
        small = sparsekm.load(tmp_path / f"{name}-small.skm")
        assert small.scheme == scheme and small.expansion.merge_duplicates().n_terms == 4
        np.testing.assert_array_equal(small.classes_, model.classes_)
        assert np.mean(small.predict(X) == model.predict(X)) > 0.5
    capsys.readouterr()


# -- issue 26: the CLI as a new user meets it ----------------------------------------
def _error_line(err):
    """The one error line of a run's stderr (asserting there is exactly one line)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sparsekm: error: "), err
    return lines[0]


@pytest.fixture
def binary_svc(tmp_path):
    import joblib
    import numpy as np
    from sklearn.svm import SVC

    import sparsekm
    from sparsekm.multiclass import ExpansionClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)
    svc = SVC(C=10, gamma=0.5).fit(X, y)
    joblib.dump(svc, tmp_path / "svc.joblib")
    sparsekm.save(ExpansionClassifier.from_estimator(svc), tmp_path / "svc.skm")
    np.save(tmp_path / "x.npy", X)
    (tmp_path / "key").write_text("a secret\n")
    return tmp_path, X, svc


def test_predict_on_a_pickle_says_to_run_reduce(binary_svc, capsys):
    d, _, _ = binary_svc
    for cmd in (["predict", str(d / "svc.joblib"), str(d / "x.npy")],
                ["export", str(d / "svc.joblib"), "-o", str(d / "m.onnx")]):
        assert main(cmd) == 1
        line = _error_line(capsys.readouterr().err)
        assert "is a pickle" in line and "sparsekm reduce" in line and "--trust-pickle" in line
        assert "corrupt" not in line


def test_key_file_on_an_unsigned_file_says_unsigned(binary_svc, capsys, tmp_path):
    import sparsekm

    d, _, svc = binary_svc
    assert main(["predict", str(d / "svc.skm"), str(d / "x.npy"), "--key-file",
                 str(d / "key")]) == 1
    line = _error_line(capsys.readouterr().err)
    assert "is not signed" in line and "corrupt" not in line
    # a file signed with another key: the signature does not match (not "corrupt")
    sparsekm.save(sparsekm.load(d / "svc.skm"), tmp_path / "other.skm", key=b"other key")
    assert main(["predict", str(tmp_path / "other.skm"), str(d / "x.npy"), "--key-file",
                 str(d / "key")]) == 1
    line = _error_line(capsys.readouterr().err)
    assert "does not match the key" in line and "corrupt" not in line


def test_reduce_signs_a_joblib_input_in_one_step(binary_svc, capsys):
    import numpy as np

    import sparsekm

    d, X, svc = binary_svc
    assert main(["--quiet", "reduce", str(d / "svc.joblib"), "--trust-pickle", "--key-file",
                 str(d / "key"), "-n", "6", "-o", str(d / "small.skm")]) == 0
    small = sparsekm.load(d / "small.skm", key=b"a secret")
    assert small.expansion.n_terms == 6
    assert np.mean(small.predict(X) == svc.predict(X)) > 0.8
    with pytest.raises(sparsekm.FormatError, match="authentication failed"):
        sparsekm.load(d / "small.skm", key=b"another key")
    # without --trust-pickle the pickle is still refused, saying how to proceed
    capsys.readouterr()
    assert main(["reduce", str(d / "svc.joblib"), "--key-file", str(d / "key"), "-n", "6",
                 "-o", str(d / "u.skm")]) == 1
    assert "--trust-pickle" in _error_line(capsys.readouterr().err)
    assert not (d / "u.skm").exists()


def test_pandas_csv_with_its_index_column(binary_svc, capsys):
    import numpy as np
    import pandas as pd

    d, X, svc = binary_svc
    ref = [str(v) for v in svc.predict(X)]
    # header + unnamed index column (DataFrame.to_csv()), named or integer column names
    for name, frame in (("named", pd.DataFrame(X, columns=list("abcd"))),
                        ("numbered", pd.DataFrame(X))):
        frame.to_csv(d / f"{name}.csv")
        assert main(["predict", str(d / "svc.skm"), str(d / f"{name}.csv")]) == 0
        out = capsys.readouterr()
        assert out.out.split() == ref
        assert out.err.count("\n") == 1 and "read as a pandas index" in out.err
        assert "index=False" in out.err
    # no header: 5 columns for a 4-feature model, the first 0, 1, 2, ...: a hint ...
    pd.DataFrame(X).to_csv(d / "noheader.csv", header=False)
    assert main(["predict", str(d / "svc.skm"), str(d / "noheader.csv")]) == 1
    line = _error_line(capsys.readouterr().err)
    assert "5 columns but the model expects 4 features" in line
    assert "index=False" in line and "--index-col" in line
    # ... and --index-col skips it
    assert main(["predict", str(d / "svc.skm"), str(d / "noheader.csv"), "--index-col"]) == 0
    assert capsys.readouterr().out.split() == ref
    # a plain CSV without index is read as it is, without a note
    np.savetxt(d / "plain.csv", X, delimiter=",")
    assert main(["predict", str(d / "svc.skm"), str(d / "plain.csv")]) == 0
    out = capsys.readouterr()
    assert out.out.split() == ref and out.err == ""


def test_predict_output_format_follows_the_extension(binary_svc, capsys):
    import json

    import numpy as np

    d, X, svc = binary_svc
    labels = svc.predict(X)
    dec = svc.decision_function(X)
    for ext in (".json", ".npy", ".csv", ".txt"):
        for decision in (False, True):
            path = d / f"out{int(decision)}{ext}"
            assert main(["predict", str(d / "svc.skm"), str(d / "x.npy"), "-o", str(path)]
                        + (["--decision"] if decision else [])) == 0
            ref = dec if decision else labels
            if ext == ".json":
                got = np.array(json.loads(path.read_text()))
            elif ext == ".npy":
                got = np.load(path)
            else:
                got = np.loadtxt(path, delimiter="," if ext == ".csv" else None)
            np.testing.assert_allclose(got, ref, rtol=1e-12)
    capsys.readouterr()
    # rows of several values: comma-separated in .csv, space-separated in .txt
    from sparsekm.cli import write_matrix

    write_matrix(d / "m.csv", np.array([[1.0, 2.5], [3.0, 4.0]]))
    write_matrix(d / "m.txt", np.array([[1.0, 2.5], [3.0, 4.0]]))
    write_matrix(d / "m.json", np.array([["a", "b"]]))
    assert (d / "m.csv").read_text() == "1,2.5\n3,4\n"
    assert (d / "m.txt").read_text() == "1 2.5\n3 4\n"
    assert json.loads((d / "m.json").read_text()) == [["a", "b"]]
    for bad in ("out.xyz", "out"):
        with pytest.raises(SystemExit) as exc:
            main(["predict", str(d / "svc.skm"), str(d / "x.npy"), "-o", str(d / bad)])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "unknown output format" in err and ".json" in err
        assert not (d / bad).exists()


def test_denoise_refuses_gamma_with_width(tmp_path, capsys):
    import numpy as np

    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(20, 2)))
    base = ["denoise", "--train", str(tmp_path / "x.npy"), "--input", str(tmp_path / "x.npy"),
            "--n-components", "1"]
    with pytest.raises(SystemExit) as exc:
        main(base + ["--output", str(tmp_path / "z.npy"), "--gamma", "1", "--width", "2"])
    assert exc.value.code == 2
    assert "--gamma and --width both set" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(base + ["--output", str(tmp_path / "z.dat"), "--width", "2"])
    assert exc.value.code == 2 and "unknown output format" in capsys.readouterr().err
    assert not (tmp_path / "z.npy").exists() and not (tmp_path / "z.dat").exists()


def test_reduce_a_kernel_pca_file_and_an_accurate_refusal(tmp_path, capsys):
    import joblib
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    import sparsekm
    from sparsekm.kernels import RBF
    from sparsekm.models import KernelPCA

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    kpca = KernelPCA(n_components=2, kernel=RBF(0.2)).fit(X)
    sparsekm.save(kpca, tmp_path / "kpca.skm")
    assert main(["--quiet", "reduce", str(tmp_path / "kpca.skm"), "-n", "30", "-o",
                 str(tmp_path / "small.skm")]) == 0
    small = sparsekm.load(tmp_path / "small.skm")
    assert small.n_terms == 30 and small.n_outputs == 2
    Z = kpca.transform(X)
    assert np.linalg.norm(small.decision_function(X) - Z) < 0.2 * np.linalg.norm(Z)
    # a model reduce cannot shrink: the refusal lists what it can, accurately
    capsys.readouterr()
    joblib.dump(LogisticRegression().fit(X, X[:, 0] > 0), tmp_path / "lr.joblib")
    assert main(["reduce", str(tmp_path / "lr.joblib"), "--trust-pickle", "-n", "3", "-o",
                 str(tmp_path / "u.skm")]) == 1
    line = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert len(line) == 1 and "LogisticRegression, which reduce cannot shrink" in line[0]
    assert "sklearn.decomposition.KernelPCA" in line[0]


def test_data_fetch_offline_is_one_line(tmp_path, capsys):
    # a port nothing listens on: every download fails at once, as offline
    assert main(["--quiet", "data", "fetch", "ripley", "--data", str(tmp_path / "d"),
                 "--base-url", "http://127.0.0.1:9"]) == 1
    captured = capsys.readouterr()
    line = _error_line(captured.err)
    assert "could not download ripley" in line
    assert "--data" in line and "SPARSEKM_DATA" in line
    assert "Connection" not in captured.err and "127.0.0.1" not in captured.err


def test_warnings_reach_stderr_as_one_line(capsys, monkeypatch):
    import warnings

    from sklearn.exceptions import ConvergenceWarning


    def noisy(args):
        warnings.warn("first line of a warning\nand a second", UserWarning, stacklevel=1)
        warnings.warn("stopped at max_iter", ConvergenceWarning, stacklevel=1)
        return 0

    monkeypatch.setattr("sparsekm.cli._commands.info.cmd_info", noisy)
    # the caller's filters (PYTHONWARNINGS=ignore, -W error) are not this test's subject:
    # it sets its own, so that it holds in any environment (issue 38)
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("always")
        assert main(["info"]) == 0
        assert capsys.readouterr().err.splitlines() == [
            "sparsekm: warning: first line of a warning (--debug shows the rest)",
            "sparsekm: warning: stopped at max_iter"]
        # --quiet drops the convergence notice, never other warnings
        assert main(["info", "--quiet"]) == 0
        assert capsys.readouterr().err.splitlines() == [
            "sparsekm: warning: first line of a warning (--debug shows the rest)"]
    # and a user's PYTHONWARNINGS=ignore is respected: the command prints no warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["info"]) == 0
        assert capsys.readouterr().err == ""


def test_multi_line_errors_are_cut_to_one_line(capsys, monkeypatch):

    def boom(args):
        raise OSError("it failed\n  because of this\n  and that")

    monkeypatch.setattr("sparsekm.cli._commands.info.cmd_info", boom)
    assert main(["info"]) == 1
    assert capsys.readouterr().err == (
        "sparsekm: error: OSError: it failed (--debug shows the rest)\n")


def test_reduce_offers_select_backward(binary_svc, capsys):
    import numpy as np

    import sparsekm

    d, X, svc = binary_svc
    assert main(["--quiet", "reduce", str(d / "svc.skm"), "-n", "8", "--method",
                 "select-backward", "-o", str(d / "sb.skm")]) == 0
    assert "reduced with select-backward" in capsys.readouterr().out
    small = sparsekm.load(d / "sb.skm")
    assert small.expansion.n_terms == 8
    # a selection: its vectors are some of the SVC's support vectors
    sv = {tuple(v) for v in svc.support_vectors_}
    assert all(tuple(v) in sv for v in np.asarray(small.expansion.vectors))


def test_quiet_does_not_outlive_the_call(capsys):
    """``--quiet`` silences the progress bars of that call only: an in-process main()
    (a test, a notebook) must not switch them off for later fits."""
    from sparsekm.utils import progress

    assert progress._QUIET is False
    assert main(["--quiet", "info"]) == 0
    assert progress._QUIET is False
    capsys.readouterr()


# -- issue 38, item 8: a byte-order mark, FIFOs ------------------------------------------
def test_predict_keeps_the_first_row_of_a_csv_with_a_byte_order_mark(binary_svc, capsys):

    d, X, svc = binary_svc
    rows = X[:5]
    text = "\n".join(",".join(f"{v:.17g}" for v in r) for r in rows) + "\n"
    (d / "bom.csv").write_bytes("\ufeff".encode() + text.encode())  # Excel's "CSV UTF-8"
    capsys.readouterr()
    assert main(["predict", str(d / "svc.skm"), str(d / "bom.csv")]) == 0
    out = capsys.readouterr().out.split()
    assert [int(v) for v in out] == svc.predict(rows).tolist()  # 5 rows in, 5 out
    # with a header after the mark, the header is still recognised as one
    (d / "bomh.csv").write_bytes("\ufeffa,b,c,d\n".encode() + text.encode())
    assert main(["predict", str(d / "svc.skm"), str(d / "bomh.csv")]) == 0
    assert len(capsys.readouterr().out.split()) == 5


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("which", ["data", "key", "model"])
def test_a_fifo_is_refused_not_waited_on(binary_svc, capsys, which):
    import os
    import subprocess
    import sys

    d, _, _ = binary_svc
    fifo = d / "pipe"
    os.mkfifo(fifo)
    argv = {"data": ["predict", str(d / "svc.skm"), str(fifo)],
            "key": ["predict", str(d / "svc.skm"), str(d / "x.npy"), "--key-file", str(fifo)],
            "model": ["predict", str(fifo), str(d / "x.npy")]}[which]
    # in a child process: a hang must fail the test, not block the test run
    code = ("import sys; from sparsekm.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 1, proc.stderr
    line = _error_line(proc.stderr)
    assert "FIFO" in line and "not a regular file" in line and str(fifo) in line


# -- issue 38, item 11: overwriting, own inputs, messages that say what to do -------------
def test_outputs_are_not_replaced_without_force(binary_svc, capsys):
    import numpy as np

    d, X, _ = binary_svc
    for argv in (["--quiet", "reduce", str(d / "svc.skm"), "-n", "4", "-o", str(d / "old")],
                 ["predict", str(d / "svc.skm"), str(d / "x.npy"), "-o", str(d / "old.npy")],
                 ["denoise", "--train", str(d / "x.npy"), "--input", str(d / "x.npy"),
                  "--output", str(d / "old.npy"), "--n-components", "2"]):
        out = Path(argv[argv.index("-o") + 1] if "-o" in argv
                   else argv[argv.index("--output") + 1])
        out.write_bytes(b"precious")  # (open(out, "wb").write left the file to the GC)
        capsys.readouterr()
        assert main(argv) == 1
        line = _error_line(capsys.readouterr().err)
        assert "already exists" in line and "--force" in line
        assert out.read_bytes() == b"precious"
        assert main([*argv, "--force"]) == 0
        assert out.read_bytes() != b"precious"
    np.testing.assert_array_equal(np.load(d / "old.npy").shape, X.shape)


def test_export_c_does_not_replace_an_existing_header_without_force(binary_svc, capsys):
    # export --format c writes OUT.c and OUT.h: the existing-file rule holds for both
    d, _, _ = binary_svc
    (d / "edge.h").write_bytes(b"precious")
    argv = ["export", str(d / "svc.skm"), "--format", "c", "-o", str(d / "edge.c")]
    capsys.readouterr()
    assert main(argv) == 1
    line = _error_line(capsys.readouterr().err)
    assert "edge.h already exists" in line and "--force" in line
    assert (d / "edge.h").read_bytes() == b"precious" and not (d / "edge.c").exists()
    assert main([*argv, "--force"]) == 0
    assert (d / "edge.c").exists()
    assert (d / "edge.h").read_bytes() != b"precious"
    # -o naming the header itself: refused (the source would replace it), --force or not
    assert main([*argv[:-1], str(d / "edge.h"), "--force"]) == 1
    assert "give the .c file" in _error_line(capsys.readouterr().err)


def test_a_command_never_replaces_its_own_input(binary_svc, capsys):
    import os

    d, _, _ = binary_svc
    before = (d / "svc.skm").read_bytes()
    os.link(d / "svc.skm", d / "hard.skm")
    for argv in (["reduce", str(d / "svc.skm"), "-n", "4", "-o", str(d / "svc.skm")],
                 ["reduce", str(d / "svc.skm"), "-n", "4", "-o", str(d / "hard.skm")],
                 ["reduce", str(d / "svc.skm"), "-n", "4", "--validation", str(d / "x.npy"),
                  "-o", str(d / "x.npy")],
                 ["predict", str(d / "svc.skm"), str(d / "x.npy"), "-o", str(d / "x.npy")],
                 ["export", str(d / "svc.skm"), "-o", str(d / "svc.skm")]):
        for force in ([], ["--force"]):
            capsys.readouterr()
            assert main([*argv, *force]) == 1, argv
            line = _error_line(capsys.readouterr().err)
            assert "own input" in line, line
    assert (d / "svc.skm").read_bytes() == before


def test_messages_that_say_what_to_do(binary_svc, capsys):
    import joblib

    d, _, svc = binary_svc
    # a model given as data (the arguments swapped): not a UnicodeDecodeError
    joblib.dump(svc, d / "svc.pkl")
    for data in ("svc.skm", "svc.pkl"):
        for name in (data, data + ".csv"):
            (d / name).write_bytes((d / data).read_bytes())
            assert main(["predict", str(d / "svc.skm"), str(d / name)]) == 1
            line = _error_line(capsys.readouterr().err)
            assert "looks like a model file" in line and "not a CSV" in line \
                and "Unicode" not in line, line
    (d / "model.npy").write_bytes((d / "svc.skm").read_bytes())
    assert main(["predict", str(d / "svc.skm"), str(d / "model.npy")]) == 1
    assert "looks like a model file" in _error_line(capsys.readouterr().err)
    # -o into a missing folder: says which folder and what to do
    for argv in (["predict", str(d / "svc.skm"), str(d / "x.npy"), "-o",
                  str(d / "nope" / "y.npy")],
                 ["export", str(d / "svc.skm"), "-o", str(d / "nope" / "m.onnx")],
                 ["reduce", str(d / "svc.skm"), "-n", "3", "-o", str(d / "nope" / "m.skm")]):
        assert main(argv) == 1
        line = _error_line(capsys.readouterr().err)
        assert f"the folder {d / 'nope'} does not exist" in line and "mkdir" in line
        assert "FileNotFoundError" not in line
    # a missing --key-file names the option
    for argv in (["predict", str(d / "svc.skm"), str(d / "x.npy")],
                 ["export", str(d / "svc.skm"), "-o", str(d / "m.onnx")],
                 ["reduce", str(d / "svc.skm"), "-n", "3", "-o", str(d / "k.skm")]):
        assert main([*argv, "--key-file", str(d / "no-key")]) == 1
        line = _error_line(capsys.readouterr().err)
        assert line == f"sparsekm: error: --key-file {d / 'no-key'}: no such file"


def test_reduce_says_so_when_nothing_was_reduced(binary_svc, capsys, monkeypatch):
    import sparsekm

    d, _, _ = binary_svc
    n = sparsekm.load(d / "svc.skm").expansion.merge_duplicates().n_terms
    capsys.readouterr()
    assert main(["--quiet", "reduce", str(d / "svc.skm"), "-n", str(n), "-o",
                 str(d / "same.skm")]) == 0
    out = capsys.readouterr().out
    assert f"{n} -> {n} distinct vectors" in out
    assert "speed-up" not in out.replace("no speed-up", "") and "no reduction" in out
    # a real reduction still reports its measured speed-up
    assert main(["--quiet", "reduce", str(d / "svc.skm"), "-n", "3", "-o",
                 str(d / "small.skm")]) == 0
    assert "measured speed-up" in capsys.readouterr().out
    # the low-agreement warning suggests construct+refine only to other methods
    monkeypatch.setattr("sparsekm.cli._commands.reduce.MIN_AGREEMENT", 1.01)
    for method, suggested in (("construct+refine", False), ("construct", True)):
        assert main(["--quiet", "reduce", str(d / "svc.skm"), "-n", "3", "--method", method,
                     "-o", str(d / f"w-{method}.skm")]) == 0
        err = capsys.readouterr().err
        assert "predicts differently" in err
        assert ("--method construct+refine" in err) == suggested, err
