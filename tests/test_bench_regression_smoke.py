"""Smoke test of benchmarks/bench_regression.py (issue 36): --quick runs and writes its JSON."""

import importlib.util
import json
import math
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def test_bench_regression_quick(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    spec = importlib.util.spec_from_file_location("bench_regression",
                                                  BENCH / "bench_regression.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_regression"] = module
    spec.loader.exec_module(module)
    out = tmp_path / "r.json"
    fig = tmp_path / "r.png"
    assert module.main(["--quick", "--out", str(out), "--fig", str(fig)]) == 0
    assert fig.stat().st_size > 0
    res = json.loads(out.read_text())
    assert [d["name"].split()[0] for d in res["datasets"]] == ["diabetes", "friedman1"]
    for d in res["datasets"]:
        for m in ("KernelRidge", "GaussianProcessRegressor"):
            row = d["models"][m]["budgets"][0]
            for k in ("compress", "nystroem_uniform", "nystroem_kmeans"):
                assert math.isfinite(row[k]["rmse"]) and row[k]["rmse"] > 0
            assert row["compress"]["n_vectors"] <= row["n_vectors"]
