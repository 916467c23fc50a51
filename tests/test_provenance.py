"""Issue 38, deliverable 4: every benchmark result says where it was computed.

``sparsekm._provenance.stamp`` is the one function; ``benchmarks/_benchutil.write_results``
the one way benchmarks write ``benchmarks/results/``; files older than it were re-stamped
by ``tools/restamp_results.py`` without recomputing, naming what was not known.
"""

import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from sparsekm._provenance import STAMP_KEYS, numpy_cpu_features, stamp

ROOT = Path(__file__).resolve().parents[1]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def restamp():
    return _load("restamp_results", ROOT / "tools" / "restamp_results.py")


def test_stamp_records_every_key_and_names_the_unknown():
    s = stamp()
    assert set(STAMP_KEYS) <= set(s)
    assert s["unknown"] == [k for k in STAMP_KEYS if s[k] is None]
    import threadpoolctl

    blas = [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
    assert len(s["blas"] or []) == len(blas)
    assert s["versions"]["numpy"] == np.__version__
    assert len(s["load_average_1_5_15_min"]) == 3
    if (ROOT / ".git").exists():
        assert re.fullmatch(r"[0-9a-f]{7,40}(\+dirty)?", s["commit"])
    json.dumps(s)  # JSON-ready


def test_numpy_cpu_features_are_numpys_own():
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:  # pragma: no cover
        from numpy.core import _multiarray_umath as mu
    f = numpy_cpu_features()
    assert f["enabled"] == sorted(k for k, v in mu.__cpu_features__.items() if v)
    assert set(f["enabled"]).isdisjoint(f["disabled"])
    assert set(f["baseline"]) <= set(f["enabled"])


def test_every_results_text_file_names_its_commit():
    """Results that are not JSON (a profiler's text) name the commit on their first line."""
    texts = [p for p in (ROOT / "benchmarks" / "results").rglob("*") if p.is_file()
             and p.suffix != ".json"]
    for p in texts:
        first = p.read_text(encoding="utf-8").splitlines()[0]
        assert re.match(r"# commit [0-9a-f]{7,40}", first), (p, first)


def test_every_results_file_carries_a_provenance_block(restamp):
    files = restamp.results_files()
    assert len(files) > 40
    for p in files:
        obj = json.loads(p.read_text())
        for item in (obj if isinstance(obj, list) else [obj]):
            block = item.get("provenance")
            assert isinstance(block, dict), p
            assert isinstance(block.get("unknown"), list), p
            if block.get("restamped"):
                # a re-stamp recomputes nothing: it points into the file and names the rest
                assert set(block["found_in_file"]) | set(block["unknown"]) >= \
                    set(STAMP_KEYS) - {"commit"}, p
                assert block["commit"], p
            else:
                assert set(STAMP_KEYS) <= set(block), p


def test_restamp_points_into_the_file_and_names_the_rest(restamp, tmp_path):
    f = tmp_path / "old.json"
    f.write_text(json.dumps({"machine": {"platform": "Linux", "load_average_1_5_15_min":
                                         [1, 2, 3]}, "rows": [{"x": 1}]}, indent=2) + "\n")
    assert restamp.restamp(f)
    block = json.loads(f.read_text())["provenance"]
    assert block["found_in_file"] == {"platform": "machine.platform",
                                      "load_average_1_5_15_min":
                                          "machine.load_average_1_5_15_min"}
    assert "numpy_cpu_features" in block["unknown"] and "blas_kernel" in block["unknown"]
    assert not restamp.restamp(f)  # once


def test_write_results_stamps(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        bu = _load("_benchutil_t", ROOT / "benchmarks" / "_benchutil.py")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    bu.write_results(tmp_path / "r.json", {"a": 1})
    assert set(STAMP_KEYS) <= set(json.loads((tmp_path / "r.json").read_text())["provenance"])
    bu.write_results(tmp_path / "l.json", [{"run": 1}, {"run": 2}])
    runs = json.loads((tmp_path / "l.json").read_text())
    assert "provenance" in runs[-1]


#: json writers in benchmarks/ that write caches or scratch files, not results
_NOT_RESULTS = {("bench_pareto.py", "tmp.write_text(json.dumps(obj"),
                ("bench_predict_vs_sklearn.py", "meta.write_text(json.dumps("),
                ("bench_randomized.py", '(work / "eps_hat.json").write_text(json.dumps(')}


def test_every_benchmark_writes_results_through_write_results():
    offenders = []
    for p in sorted((ROOT / "benchmarks").glob("*.py")):
        if p.name == "_benchutil.py":
            continue
        for line in p.read_text().splitlines():
            if re.search(r"write_text\(\s*json\.dumps|json\.dump\(", line) and not any(
                    p.name == f and frag in line for f, frag in _NOT_RESULTS):
                offenders.append(f"{p.name}: {line.strip()}")
    assert offenders == []


# -- deliverable 5: tools/test_kernels.py also runs the suite with numpy's AVX-512 loops off
def test_test_kernels_tool_turns_numpys_avx512_loops_off():
    import os
    import subprocess

    tool = _load("test_kernels_tool", ROOT / "tools" / "test_kernels.py")
    targets = tool.avx512_targets()
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:  # pragma: no cover
        from numpy.core import _multiarray_umath as mu
    assert targets == [d for d in mu.__cpu_dispatch__ if d.startswith("AVX512") or d == "X86_V4"]
    env = tool._env("native", 1, "no-avx512", pythonwarnings="ignore")
    assert env["NPY_DISABLE_CPU_FEATURES"] == " ".join(targets)
    assert env["PYTHONWARNINGS"] == "ignore" and env["OMP_NUM_THREADS"] == "1"
    assert "NPY_DISABLE_CPU_FEATURES" not in tool._env("native", 1, "native") or \
        os.environ.get("NPY_DISABLE_CPU_FEATURES")
    # numpy in that environment uses none of them (on any CPU: off, or absent)
    code = ("import json; from sparsekm._provenance import numpy_cpu_features as f; "
            "print(json.dumps(f()))")
    out = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(
        ROOT / "src")}, capture_output=True, text=True, check=True, timeout=120).stdout
    feats = json.loads(out)
    assert not set(feats["enabled"]) & set(targets)
    assert feats["disabled_by_env"] == " ".join(targets)
    with pytest.raises(ValueError, match="numpy mode"):
        tool._env("native", 1, "no-sse")
