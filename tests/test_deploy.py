"""Budgets in bytes and microseconds: the size formula against the compiled arrays."""

import re
import subprocess

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from sklearn.svm import SVC

from sparsekm.c_export import to_c
from sparsekm.deploy import (
    deployed_bytes,
    macs_per_row,
    model_bytes,
    plan_budget,
)

from .test_c_export import CC, needs_cc


@pytest.fixture(scope="module")
def data():
    X, y = load_digits(return_X_y=True)
    return X[:200] / 16.0, y[:200]


def _sizeof_arrays(model, tmp_path, **kw):
    """Bytes of every const array of the generated C, as the compiler lays them out."""
    src, h = to_c(model, name="m", **kw)
    (tmp_path / "m.c").write_text(src)
    (tmp_path / "m.h").write_text(h)
    names = re.findall(r"^static const \w+ (\w+)\[\d+\]", src, flags=re.M)
    prog = ['#include <stdio.h>', '#include <string.h>', '#include "m.c"',
            "int main(void) {", "    size_t total = 0;"]
    prog += [f"    total += sizeof {n};" for n in names]
    if "m_classes" in src:
        prog += ["    { int c; total += sizeof m_classes;",
                 "      for (c = 0; c < M_N_CLASSES; ++c) total += strlen(m_classes[c]) + 1; }"]
    prog += ['    printf("%lu %lu\\n", (unsigned long)total, (unsigned long)sizeof(char *));',
             "    return 0;", "}"]
    (tmp_path / "sizes.c").write_text("\n".join(prog) + "\n")
    exe = tmp_path / "sizes"
    # the model's functions are unused here: no -Werror for that
    subprocess.run([CC, "-std=c99", "-o", str(exe), str(tmp_path / "sizes.c"), "-lm"],
                   check=True, capture_output=True)
    total, ptr = map(int, subprocess.run([str(exe)], capture_output=True, text=True,
                                         check=True).stdout.split())
    return total, ptr, len(names)


@needs_cc
@pytest.mark.parametrize("precision,scales", [("float32", "per-vector"), ("float16", "per-vector"),
                                              ("int8", "per-vector"), ("int8", "per-feature")])
def test_deployed_bytes_equal_the_compiled_arrays(data, tmp_path, precision, scales):
    X, y = data
    y_names = np.array(["zero", "one", "two", "three", "four", "five", "six", "seven",
                        "eight", "nine"])[y]
    for model in (Pipeline([("s", StandardScaler()), ("m", MinMaxScaler()),
                            ("c", SVC(gamma=0.5))]).fit(X, y_names),
                  SVC(gamma=0.5).fit(X, y >= 5)):
        total, ptr, n_arrays = _sizeof_arrays(model, tmp_path, precision=precision,
                                              scales=scales)
        parts = model_bytes(model, precision, scales=scales, pointer_size=ptr)
        assert parts["total"] == total
        assert n_arrays >= 3
        svc = model[-1] if isinstance(model, Pipeline) else model
        n_sv = svc.support_vectors_.shape[0]
        itemsize = {"float32": 4, "float16": 2, "int8": 1}[precision]
        assert parts["vectors"] == n_sv * 64 * itemsize


def test_plan_budget_bytes_is_the_largest_fit():
    for precision in ("float32", "float16", "int8"):
        plan = plan_budget(256, 45, "ovo", max_bytes=64 * 1024, precision=precision,
                           n_scaler_steps=1)
        n = plan[precision]["n_vectors"]
        kw = dict(n_scaler_steps=1, n_classes=10)
        assert deployed_bytes(n, 256, 45, precision, **kw)["total"] <= 64 * 1024
        assert deployed_bytes(n + 1, 256, 45, precision, **kw)["total"] > 64 * 1024
        assert plan[precision]["bytes"] == deployed_bytes(n, 256, 45, precision, **kw)["total"]
        assert plan[precision]["limited_by"] == "bytes"
    # int8 per-vector: 256 + 4 * 45 + 4 bytes per vector; float32 4 * 256 + 4 * 45
    plan = plan_budget(256, 45, "ovo", max_bytes=64 * 1024)
    assert plan["int8"]["n_vectors"] > plan["float16"]["n_vectors"] > plan["float32"]["n_vectors"]
    fixed = 4 * 45 + 10 * (4 + 2)
    assert plan["float32"]["n_vectors"] == (64 * 1024 - fixed) // (4 * 256 + 4 * 45)
    assert len(plan["conversion"]) == 3


def test_plan_budget_latency_cost_model():
    plan = plan_budget(64, 1, max_latency_us=100.0, precision="float32", macs_per_us=50.0,
                       max_bytes=10 ** 9)
    n = plan["float32"]["n_vectors"]
    assert macs_per_row(n, 64, 1) / 50.0 <= 100.0 < macs_per_row(n + 1, 64, 1) / 50.0
    assert plan["float32"]["limited_by"] == "latency"
    assert plan["float32"]["latency_us"] == pytest.approx(macs_per_row(n, 64, 1) / 50.0)
    assert plan_budget(64, 1, max_bytes=10, precision="int8")["int8"]["n_vectors"] == 0
    for bad in (dict(), dict(max_bytes=-1), dict(max_bytes=100, latency_target="fast"),
                dict(max_latency_us=float("nan"))):
        with pytest.raises(ValueError):
            plan_budget(64, 1, **bad)


@needs_cc
def test_plan_budget_this_machine_is_measured():
    plan = plan_budget(16, 1, max_latency_us=50.0, precision="int8",
                       latency_target="this machine")
    p = plan["int8"]
    assert p["n_vectors"] >= 0 and p["latency_us"] > 0
    assert "this machine" in plan["conversion"][0]


@pytest.mark.filterwarnings("ignore:compress:UserWarning")
def test_compress_with_a_byte_budget_picks_on_validation(data, tmp_path):
    import sparsekm
    from sparsekm.c_export import deployed_model

    X, y = data
    from sklearn.multiclass import OneVsRestClassifier

    svc = OneVsRestClassifier(SVC(C=10, gamma=0.5)).fit(X[:150], y[:150])
    Xv, yv = X[150:], y[150:]
    clf = sparsekm.compress(svc, Xv, yv, max_bytes=6 * 1024, method="construct",
                            random_state=0)
    rep = clf.compress_report_
    p = rep["deploy_precision"]
    assert model_bytes(clf, p)["total"] == rep["deploy_bytes"] <= 6 * 1024
    assert clf.n_vectors_ == rep["deploy_n_vectors"]
    assert len(rep["deploy_conversion"]) == len(rep["deploy_candidates"]) == 3
    # the pick: the lowest validation error as stored, recomputed for every precision
    errs = {}
    for q in ("float32", "float16", "int8"):
        n = plan_budget(64, 10, "ovr", max_bytes=6 * 1024, precision=q,
                        class_labels=svc.classes_)[q]["n_vectors"]
        other = sparsekm.compress(svc, Xv, yv, n_vectors=n, method="construct",
                                  random_state=0)
        errs[q] = np.mean(deployed_model(other, q).predict(Xv) != yv)
    assert errs[p] == min(errs.values())
    assert f"{100 * errs[p]:.2f} %" in " ".join(rep["deploy_candidates"])
    # the report round-trips through a file
    sparsekm.save(clf, tmp_path / "m.skm")
    assert sparsekm.load(tmp_path / "m.skm").compress_report_["deploy_precision"] == p
    with pytest.raises(ValueError, match="replaces n_vectors"):
        sparsekm.compress(svc, Xv, yv, max_bytes=6 * 1024, n_vectors=5)
    with pytest.raises(ValueError, match="X_val and y_val"):
        sparsekm.compress(svc, max_bytes=6 * 1024, X_train=X[:150], y_train=y[:150])


@needs_cc
def test_bench_edge_quick(tmp_path):
    """Smoke test: bench_edge --quick runs and writes every field the docs use."""
    import importlib.util
    import json
    from pathlib import Path

    pytest.importorskip("onnxruntime")
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_edge.py"
    spec = importlib.util.spec_from_file_location("bench_edge", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "edge.json"
    assert bench.main(["--quick", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    row = res["datasets"]["digits"]["budgets"][0]
    for p, r in row["precisions"].items():
        assert r["bytes"] == r["bytes_planned"] <= 8 * 1024, p
        assert r["c_labels_identical"] and r["c_us_per_row"] > 0
    assert row["python_fused_us_per_row"] > 0 and row["onnx_f32_us_per_row_same_vectors"] > 0
    sbs = row["side_by_side"]  # ONNX and C timed in turn: each round's ratio, their median
    assert sbs["repeats"] == len(sbs["onnx_f32_us_per_row"]) == 2
    for k, times in sbs["c_us_per_row"].items():
        np.testing.assert_allclose(sbs["c_over_onnx"][k],
                                   np.divide(times, sbs["onnx_f32_us_per_row"]))
        assert sbs["median_c_over_onnx"][k] == np.median(sbs["c_over_onnx"][k])
    assert row["c_over_onnx"] == sbs["median_c_over_onnx"]["O2"]
    assert "digits_int8_loses_at_most_0.2_points" in res["targets"]
    assert res["provenance_start"]["numpy_cpu_features"] and res["provenance"]["commit"]


def test_compress_budget_refuses_regressors(data):
    from sklearn.svm import SVR

    import sparsekm

    X, y = data
    svr = SVR(gamma=0.5).fit(X[:150], y[:150].astype(float))
    with pytest.raises(ValueError, match="for classifiers"):
        sparsekm.compress(svr, X[150:], y[150:].astype(float), max_bytes=4096)
