"""Defects found by the review of the compress / speed sessions (branch review2), each
with a test that failed before its fix."""

import numpy as np
import pytest
from sklearn.datasets import make_moons

import sparsekm
from sparsekm.models import RandomizedKernelPCA, ReducedSetClassifier


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


@pytest.mark.parametrize("sampling", ["none", "quantize", "sparsify"])
def test_randomized_kpca_s_below_one_refused_by_fit(moons, sampling):
    """s < 1 was accepted by fit when the sampling does not use it, and the saved model
    could not be loaded (load checks s >= 1 always)."""
    X, _ = moons
    with pytest.raises(ValueError, match="'s' parameter of RandomizedKernelPCA"):
        RandomizedKernelPCA(n_components=2, sampling=sampling, s=0.5, random_state=0).fit(X)


def test_plotting_compress_curve_takes_what_compress_returns(tmp_path):
    """sparsekm.plotting.compress_curve said it takes 'a model returned by
    sparsekm.compress' but raised TypeError on one (compress now keeps a report, not a
    curve); it plots the report now, also after save/load."""
    from sklearn.svm import SVC

    from sparsekm.plotting import compress_curve

    X, y = make_moons(300, noise=0.25, random_state=0)
    svc = SVC(C=10, gamma=1.0).fit(X[:150], y[:150])
    small = sparsekm.compress(svc, X[150:], y[150:], n_vectors=5, method="construct",
                              random_state=0, n_init=2, max_iter=50)
    out = compress_curve(small, path=tmp_path / "c.png")
    assert str(out).endswith("c.png") and (tmp_path / "c.png").stat().st_size > 0
    sparsekm.save(small, tmp_path / "m.skm")
    compress_curve(sparsekm.load(tmp_path / "m.skm"), path=tmp_path / "d.png")
    assert (tmp_path / "d.png").stat().st_size > 0


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

    monkeypatch.setattr(importlib.import_module("sparsekm.compress"), "compress", never)
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


def test_cache_budgets_reads_dask_sizes_and_names_bad_keys():
    """sparsekm.cache-bytes given as dask writes sizes ('1GiB') failed with "could not
    convert string to float: '1GiB'"; a non-number fraction did not name its key."""
    dask = pytest.importorskip("dask")
    from sparsekm.approx.distributed import cache_budgets

    class Client:
        def scheduler_info(self):
            return {"workers": {"w1": {"memory_limit": 3000}, "w2": {"memory_limit": 0}}}

    with dask.config.set({"sparsekm.cache-bytes": "1GiB"}):
        assert cache_budgets(Client()) == {"w1": 2.0**30, "w2": 2.0**30}
    with dask.config.set({"sparsekm.cache-bytes": 500}):
        assert cache_budgets(Client()) == {"w1": 500.0, "w2": 500.0}
    assert cache_budgets(Client()) == {"w1": 1000.0, "w2": float("inf")}
    for key, value in (("sparsekm.cache-bytes", "lots"), ("sparsekm.cache-bytes", -1),
                       ("sparsekm.cache-fraction", "half"), ("sparsekm.cache-fraction", 2)):
        with dask.config.set({key: value}), pytest.raises(ValueError, match=key):
            cache_budgets(Client())


def test_shift_images_bad_input_is_named():
    """shift_images raised 'cannot unpack non-iterable int object' for a single pair given
    as shifts, 'slice indices must be integers' for a fractional shift, a reshape error
    for side=-4 (-4 * -4 = 16 passed the shape check)."""
    from sparsekm.datasets import shift_images

    X = np.arange(32, dtype=float).reshape(2, 16)
    for kw, match in ((dict(side=-4), "side"), (dict(side=4.0), "side"),
                      (dict(side=4, shifts=(1, 0)), "shifts must be a sequence"),
                      (dict(side=4, shifts=[(0.5, 0)]), "pair of ints"),
                      (dict(side=4, shifts=[(1,)]), "pair of ints"),
                      (dict(side=4, shifts=[(True, 0)]), "pair of ints")):
        with pytest.raises(ValueError, match=match):
            shift_images(X, **kw)
    down = shift_images(X, 4, [(1, 0)])  # still right: content one row down, -1 enters
    np.testing.assert_array_equal(down.reshape(2, 4, 4)[:, 1:], X.reshape(2, 4, 4)[:, :-1])
    assert np.all(down.reshape(2, 4, 4)[:, 0] == -1.0)


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


def test_pipeline_with_a_compressed_classifier_exports_to_onnx():
    """The classifier compress returns, put back into its scaler's pipeline, had no
    skl2onnx converter ('no corresponding converter'); it exports like its base class."""
    pytest.importorskip("skl2onnx")
    ort = pytest.importorskip("onnxruntime")
    from sklearn.datasets import make_blobs
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from sparsekm.onnx_export import to_onnx

    X, y = make_blobs(300, centers=3, cluster_std=2.0, random_state=1)
    scaler = StandardScaler().fit(X[:100])
    Z = scaler.transform(X)
    small = sparsekm.compress(SVC(gamma=0.2).fit(Z[:100], y[:100]), Z[100:200], y[100:200],
                              n_vectors=6, method="construct", random_state=0, n_init=2,
                              max_iter=50)
    pipe = Pipeline([("scale", scaler), ("small", small)])
    proto = to_onnx(pipe, X[:5], dtype="float64")
    sess = ort.InferenceSession(proto.SerializeToString())
    labels = sess.run(None, {"X": X[200:]})[0]
    np.testing.assert_array_equal(np.ravel(labels), pipe.predict(X[200:]))


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
    monkeypatch.setattr(cli, "_KPCA_MAX_WORK", 1e3)
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


def test_image_grid_refuses_two_colour_scales():
    """image_grid(symmetric=True, center=...) drew with center's shared scale and ignored
    symmetric in silence."""
    from sparsekm.plotting import image_grid

    with pytest.raises(ValueError, match="symmetric=True .* or center"):
        image_grid(np.zeros((2, 4)), (2, 2), symmetric=True, center=0.0)
