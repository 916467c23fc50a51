"""Smoke test of benchmarks/bench_regression_large.py (issue 36): the cells, the targets,
the skip of a set whose shipping package is missing."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_regression_large",
                                                  BENCH / "bench_regression_large.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_regression_large"] = module
    spec.loader.exec_module(module)
    return module


def test_targets_by_hand(bench):
    def row(c, se, peers, secs, frac=0.05):
        r = {"budget_fraction": frac, "compress": {"rmse": c, "se": se, "seconds": secs}}
        for i, (p, s) in enumerate(peers):
            r[f"nystroem_{i}"] = {"rmse": p, "se": 0.01, "seconds": s}
        return r

    # 1.0 <= 0.95 + 0.1; 40 s > max(3 x 10 s, 30 s); 1.0 <= 1.02 x 0.99
    t = bench.targets(row(1.0, 0.1, [(0.95, 10.0), (1.2, 2.0)], 40.0), 0.99)
    assert t == {"rmse_le_best_peer_plus_se": True, "time_le_max(3 x peer, 30 s)": False,
                 "within_2pct_of_original": True}
    # 1.0 > 0.85 + 0.1; 29 s under the 30 s floor; 1.0 > 1.02 x 0.9; not 5 %: no (c)
    t = bench.targets(row(1.0, 0.1, [(0.85, 1.0)], 29.0), 0.9)
    assert t["rmse_le_best_peer_plus_se"] is False and t["within_2pct_of_original"] is False
    assert t["time_le_max(3 x peer, 30 s)"] is True
    assert "within_2pct_of_original" not in bench.targets(
        row(1.0, 0.1, [(0.85, 1.0)], 29.0, frac=0.02), 0.9)


def test_quick_cell_and_missing_package(bench, tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setitem(sys.modules, "plotnine.data", None)  # as if plotnine were missing
    out = tmp_path / "r.json"
    assert bench.main(["--quick", "--sets", "diamonds,friedman1", "--models", "KernelRidge",
                       "--budgets", "0.05", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert "plotnine" in res["skipped"]["diamonds"]
    cell = res["datasets"]["friedman1"]["models"]["KernelRidge"]["budgets"]["0.05"]
    assert cell["n_vectors"] == 30 and cell["compress"]["n_vectors"] <= 30
    for k in ("compress", "nystroem_uniform", "nystroem_kmeans"):
        assert math.isfinite(cell[k]["rmse"]) and cell[k]["rmse"] > 0
        assert cell[k]["peak_bytes"] >= 0
    assert set(cell["targets"]) == {"rmse_le_best_peer_plus_se", "time_le_max(3 x peer, 30 s)",
                                    "within_2pct_of_original"}
    assert "| friedman1 | KRR | 30 |" in bench.table(out)


def test_rerun_keeps_the_svgp_arm_only_with_the_same_original(bench, tmp_path, monkeypatch):
    """A rerun replaces the compress and Nystrom arms (today's commit), keeps a stored SVGP
    arm with its own commit while the refitted original's test RMSE equals the stored one,
    and drops it when it does not."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    out = tmp_path / "r.json"
    args = ["--quick", "--sets", "friedman1", "--models", "KernelRidge", "--budgets", "0.05",
            "--out", str(out)]
    assert bench.main(args) == 0
    res = json.loads(out.read_text())
    model = res["datasets"]["friedman1"]["models"]["KernelRidge"]
    model["budgets"]["0.05"]["svgp"] = {"rmse": 0.5, "se": 0.01, "seconds": 1000.0}
    res["svgp_sources"] = {"regression_svgp_large_friedman1.json": {
        "commit": "abc123", "uncommitted_changes": False}}
    out.write_text(json.dumps(res))
    assert bench.main(args) == 0
    res = json.loads(out.read_text())
    model = res["datasets"]["friedman1"]["models"]["KernelRidge"]
    cell = model["budgets"]["0.05"]
    assert model["original_check"]["equal_to_1e-12"] is True
    assert cell["svgp"]["commit"] == "abc123" and cell["svgp"]["rmse"] == 0.5
    today = res["environment"]["commit"]
    assert cell["compress"]["commit"] == today == cell["nystroem_kmeans"]["commit"]
    # 1000 s of SVGP: the SVGP time flag is met (3 x 1000 s), the RMSE one judged against 0.5
    assert cell["targets"]["time_le_max(3 x SVGP, 30 s)"] is True
    assert cell["targets"]["rmse_le_best_peer_plus_se"] is (
        cell["compress"]["rmse"] <= 0.5 + cell["compress"]["se"])
    model["test_rmse"] += 1e-9  # as if the stored arms had been run next to another original
    out.write_text(json.dumps(res))
    assert bench.main(args) == 0
    res = json.loads(out.read_text())
    model = res["datasets"]["friedman1"]["models"]["KernelRidge"]
    assert model["original_check"]["equal_to_1e-12"] is False
    assert "svgp" not in model["budgets"]["0.05"]
