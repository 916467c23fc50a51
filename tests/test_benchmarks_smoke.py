"""Smoke tests of the issue-8 benchmarks: each ``--quick`` mode runs and writes its JSON.

No timing assertions (speed targets live in the benchmarks' own JSON and in
``docs/performance.md``); only that every section and fit the docs rely on exists
and is finite. Falls back to the embedded digits when the USPS files are missing.
"""

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def test_predict_vs_sklearn_quick(tmp_path):
    out, fig = tmp_path / "p.json", tmp_path / "p.png"
    # the smoke run's SLMC stops after 3 iterations (``max_iter=3`` under --quick), and says so
    with pytest.warns(ConvergenceWarning, match=r"SparseLargeMarginClassifier stopped at "
                                                r"max_iter=3 "):
        _load("bench_predict_vs_sklearn").main(["--quick", "--out", str(out), "--fig", str(fig)])
    res = json.loads(out.read_text())
    assert fig.stat().st_size > 0
    for key in ("machine", "dataset", "models", "throughput", "kernel_evaluations_per_sample",
                "scaling_n_terms", "scaling_n_samples"):
        assert key in res
    systems = list(res["throughput"])
    assert systems[0] == "sklearn_ovr_svc_full"
    assert len(systems) == 4
    assert any(k.startswith("sparsekm_RS-") for k in systems)
    assert any(k.startswith("sparsekm_SLMC-") for k in systems)
    for row in res["throughput"].values():
        for k in ("test_error_percent", "predictions_per_second_wall", "speedup_vs_sklearn_wall",
                  "predictions_per_second_cpu"):
            assert _finite(row[k])
        assert 0 <= row["test_error_percent"] <= 100
    # the full expansion reproduces scikit-learn's predictions, so their errors agree
    assert res["throughput"]["sparsekm_full_expansion"]["test_error_percent"] == pytest.approx(
        res["throughput"]["sklearn_ovr_svc_full"]["test_error_percent"], abs=0.5)
    terms = res["scaling_n_terms"]
    assert len(terms["n_terms"]) == len(terms["seconds_wall"])
    assert _finite(terms["linear_fit_wall"]["r2"]) and _finite(terms["linear_fit_wall"]["slope"])
    assert set(res["scaling_n_samples"]["systems"]) == set(systems[1:])
    for row in res["scaling_n_samples"]["systems"].values():
        assert _finite(row["linear_fit_wall"]["r2"])


def test_scaling_quick(tmp_path):
    out = tmp_path / "s.json"
    _load("bench_scaling").main(["--quick", "--out", str(out), "--fig-dir", str(tmp_path)])
    res = json.loads(out.read_text())
    expected = {"greedy_basis": ("vs_n", "vs_m"), "rs_construct": ("vs_N", "vs_N_z"),
                "slmc": ("vs_N", "vs_N_z")}
    for method, axes in expected.items():
        assert method in res
        assert (tmp_path / f"scaling_{method}.png").stat().st_size > 0
        fit = res[method]["model_fit"]
        assert len(fit["terms"]) == len(fit["seconds_per_unit"])
        assert all(c >= 0 for c in fit["seconds_per_unit"])
        for axis in axes:
            cur = res[method][axis]
            assert len(cur["values"]) == len(cur["seconds_cpu"]) == len(cur["seconds_wall"])
            assert _finite(cur["loglog_fit"]["exponent"])
            assert len(cur["expected_exponent"]) == 2
            assert len(cur["model_predicted_seconds"]) == len(cur["values"])
    assert "memory_probe" in res["greedy_basis"]
    assert "fixed_point_iterations" in res["rs_construct"]["vs_N"]


@pytest.mark.slow
def test_fuzz_load_quick(tmp_path):
    """A tiny fuzz campaign runs end to end and counts nothing bad (issue 13)."""
    out = tmp_path / "f.json"
    res = _load("bench_fuzz_load").main(["--n-mutations", "40", "--n-signed", "20",
                                         "--bomb-mb", "4", "--n-race", "20",
                                         "--out", str(out)])
    totals = json.loads(out.read_text())["totals"]
    assert totals == res["totals"] and totals["loads"] == 60 + res["n_crafted_cases"]
    for key in ("crashes", "hangs", "allocations_above_bound", "injected_attributes_restored",
                "with_key_modified_files_accepted"):
        assert totals[key] == 0, key
    assert totals["crafted_cases_as_expected"] == res["n_crafted_cases"]
    assert "tampered_accepted" not in res["signed_file_rewritten_during_load_with_key"]
    assert res["save_side"]["concurrent saves to one path (issue 38)"]["failures"] == 0


def test_pareto_quick_compress_rebuild_is_checked(tmp_path):
    """bench_pareto's compress row: the final model is rebuilt on all training data and
    checked there (a rebuild erring beyond its validation estimate is replaced by the next
    method); the cell's validation error is that of the method used."""
    mod = _load("bench_pareto")
    mod.main(["--quick", "--datasets", "digits", "--methods", "compress_auto", "--out-dir",
              str(tmp_path), "--fig-dir", str(tmp_path), "--cv-folds", "2"])
    res = json.loads((tmp_path / "pareto_digits_quick.json").read_text())
    from sparsekm.compression import _rebuild_margin
    for c in res["cells"]["compress_auto"].values():
        assert c["val_error"] == c["val_errors_by_variant"][c["variant"]]
        assert isinstance(c["rebuild_refused"], list)
        for r in c["rebuild_refused"]:
            margin = _rebuild_margin(r["val_error"], c["n_fit_final"])
            assert r["fit_error"] > r["val_error"] + margin


def test_pareto_quick(tmp_path):
    """bench_pareto --quick: every selected method has a cell per budget, the summary
    compares the validation-chosen best sparsekm method with the best peer."""
    mod = _load("bench_pareto")
    methods = "rs_construct,approx_svc,nystroem_uniform,nystroem_kmeans,rbf_sampler"
    argv = ["--quick", "--datasets", "digits", "--methods", methods, "--out-dir",
            str(tmp_path), "--fig-dir", str(tmp_path), "--cv-folds", "2"]
    mod.main(argv)
    res = json.loads((tmp_path / "pareto_digits_quick.json").read_text())
    assert (tmp_path / "pareto_digits_quick.png").stat().st_size > 0
    assert set(res["cells"]) == set(methods.split(","))
    budgets = [str(b) for b in res["protocol"]["budget_tiers"].values()]
    for cells in res["cells"].values():
        assert set(cells) == set(budgets)
        for c in cells.values():
            assert 0 <= c["test_error"] <= 1 and 0 <= c["val_error"] <= 1
            assert 1 <= c["n_evals"] <= max(int(b) for b in budgets)
            assert _finite(c["time_ratio_to_svc_ovr"])
    assert {"svc_ovr", "svc_ovo"} <= set(res["full"])
    for row in res["summary"]["per_budget"]:
        for fam in ("sparsekm", "peer"):
            # the best of a family is the one with the lowest validation error
            best = min(res["cells"][m][str(row["budget"])]["val_error"] for m in res["cells"]
                       if res["methods"][m]["family"] == fam)
            assert row[fam]["val_error"] == best
        assert row["sparsekm_test_le_peer"] == (row["sparsekm"]["test_error"]
                                               <= row["peer"]["test_error"])
    assert isinstance(res["summary"]["target_a"]["met"], bool)
    # protocol: choices on k-fold CV inside the training data (5 folds by default below
    # 1000 training points, one 15 % split above; 2 here for speed), the chosen variant
    # (lowest mean validation error) refitted on all training data
    assert (mod.n_folds_for(400), mod.n_folds_for(7291)) == (5, 1)
    assert res["protocol"]["n_folds"] == 2 and res["protocol"]["n_train"] == 250
    for cells in res["cells"].values():
        for c in cells.values():
            by = c["val_errors_by_variant"]
            assert c["variant"] in by and c["val_error"] == min(by.values())
            assert len(c["val_error_per_fold"]) == 2
            np.testing.assert_allclose(np.mean(c["val_error_per_fold"]), c["val_error"])
            assert c["n_fit_final"] == 250
    # resumable: a second run finds every cell in the cache and recomputes nothing
    logs = []
    mod.run_dataset("digits", quick=True, methods=methods.split(","),
                    cache_dir=tmp_path / "pareto_cache", log=logs.append, folds=2)
    assert logs and not any(": budgets [" in line for line in logs)


def test_many_classes_quick(tmp_path):
    """bench_many_classes --quick: a one-vs-one SVC with 325 pairwise machines, compress at
    one budget, both peers on the same validation data, and the per-budget summary."""
    mod = _load("bench_many_classes")
    out = tmp_path / "many_classes.json"
    mod.main(["--quick", "--seeds", "0", "--budgets", "20", "--out", str(out)])
    res = json.loads(out.read_text())
    (row,) = res["rows"]
    assert row["quick"] and row["n_pairs"] == 325 and row["budget"] == 20
    assert row["n_fit"] + row["n_val"] == 1_560 and row["n_test"] == 1_040
    assert 1 <= row["n_vectors"] <= 20 and row["n_sv"] > 20
    for err in [row["error_full"], row["error_small"]] + [
            p["test_error"] for p in row["peers"].values()]:
        assert 0 <= err <= 1
    assert set(row["peers"]) == {"kmeans", "uniform"}
    chosen = [r for r in row["report"] if r["status"] == "chosen"]
    assert [r["method"] for r in chosen] == [row["chosen"]]
    assert row["report"][0]["method"] == "construct"
    s = res["summary"]["20"]
    assert s["seeds"] == [0] and isinstance(s["compress_le_peer_plus_se"], bool)
    best = s["peers"][s["best_peer"]]["mean"]
    assert s["se"] == pytest.approx(math.sqrt(best * (1 - best) / 1_040))
    assert _finite(s["compress_over_max_svc_peer"]["mean"])
    assert res["protocol"]["n_classes"] == 26
