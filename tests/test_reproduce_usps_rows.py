"""The USPS reduced-set and IDA reproductions' rows, on small stand-ins: the baseline is
scikit-learn's one-vs-rest SVM and its expansion, the SV counts are its own, re-fitted
thresholds never add binary training errors, phase 2 never worsens a block, the blocks
of a construction are found back, and every row registers one cell per published number;
the IDA SVM rows are scikit-learn's SVM at each C."""

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.svm import SVC

from sparsekm.reduced_set import construct
from sparsekm.reproduce import franc
from sparsekm.reproduce import reduced_set as rs

from ._small_cases import noisy_xor


@pytest.fixture(scope="module")
def digits_ovr():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    ovr, E = rs.usps_svm(X[:200], y[:200])
    return ovr, E, X[:200], y[:200], X[200:400], y[200:400]


@pytest.fixture(scope="module")
def small(digits_ovr):
    """RS-3 of each of the ten classifiers (separate sets)."""
    return construct(digits_ovr[1], 3, shared=False, random_state=0).expansion


def test_the_baseline_expansion_is_the_one_vs_rest_svm(digits_ovr):
    ovr, E, _, _, Xte, _ = digits_ovr
    assert ovr.estimators_[0].C == 10.0 and ovr.estimators_[0].gamma == 1.0 / 128.0
    np.testing.assert_allclose(E.decision_function(Xte), ovr.decision_function(Xte),
                               rtol=1e-9, atol=1e-9)


def test_the_sv_row_counts_each_classifiers_own_vectors(digits_ovr):
    ovr, E, _, _, Xte, yte = digits_ovr
    cells, paper = [], list(range(100, 110)) + [104.5]
    n_sv, (sv_row, _) = rs._baseline_rows(E, ovr, Xte, yte, paper, cells=cells,
                                          sv_tables=("T",))
    counts = [len(est.support_) for est in ovr.estimators_]
    assert n_sv == pytest.approx(np.mean(counts))
    sv_cells = {c["cell"]: c for c in cells}
    assert [sv_cells[f"#SVs digit {d}"]["ours"] for d in range(10)] == counts
    assert sv_cells["#SVs mean"]["ours"] == round(float(np.mean(counts)), 1)
    assert sv_row.startswith("| #SVs |") and f"{counts[0]} / 100" in sv_row


def test_refitted_thresholds_never_add_binary_training_errors(digits_ovr, small):
    _, E, Xtr, ytr, _, _ = digits_ovr
    ev = rs._evaluate(small, Xtr, ytr, Xtr, ytr)  # evaluated on the training rows
    kept = rs._binary_errors(small.decision_function(Xtr), ytr)
    assert all(r <= k for r, k in zip(ev["digits"], kept, strict=True))
    assert rs._evaluate(E, None, None, Xtr, ytr, keep_b=True)["per"] == pytest.approx(
        100 * np.mean(np.argmax(E.decision_function(Xtr), axis=1) != ytr))


def test_the_blocks_of_a_separate_construction_are_found_back(digits_ovr, small):
    _, E, _, _, _, _ = digits_ovr
    runs = rs._runs_of(E, small)
    coef = np.asarray(small.coef)
    for k, Z in enumerate(runs):
        np.testing.assert_array_equal(Z, np.asarray(small.vectors)[coef[:, k] != 0])


def test_phase_2_never_worsens_a_block(digits_ovr, small):
    _, E, _, _, _, _ = digits_ovr
    coef = np.asarray(small.coef)
    blocks = [(Z, coef[coef[:, k] != 0, k]) for k, Z in enumerate(rs._runs_of(E, small))]
    refined, _ = rs._refine_blocks(E, blocks, max_iter=20)
    assert rs._rel_obj(E, refined) <= rs._rel_obj(E, blocks) + 1e-12


def test_a_row_registers_one_cell_per_published_number():
    ev = {"digits": list(range(10)), "per": 4.567, "keep": 5.0}
    cells, thr = [], []
    paper = [1] * 10 + [4.4]
    line = rs._row("RS-50", 50, 254, ev, paper, 0.1234, cells=cells, tables=("T1", "T2"),
                   thr=thr)
    assert len(cells) == 22 and {c["table"] for c in cells} == {"T1", "T2"}
    ten = [c for c in cells if c["cell"] == "RS-50 10-class %"]
    assert [c["ours"] for c in ten] == [4.57, 4.57] and ten[0]["paper"] == 4.4
    assert thr == [("RS-50", 5.0, 4.567)]
    assert "| RS-50 | 50 | 5.1x |" in line and "4.57% / 4.4%" in line and "0.123" in line


def test_the_sv_summary_lists_the_recorded_grid():
    path = Path(rs.__file__).resolve().parents[3] / "benchmarks" / "results" / \
        "usps_sv_grid.json"
    text = rs._sv_summary({})
    if not path.exists():
        assert "bench_usps_sv_grid.py" in text
        return
    rows = json.loads(path.read_text())["rows"]
    for r in rows:
        assert f"| {r['C']:g} | 1/{1 / r['gamma']:.0f} | {r['mean_n_sv']:.1f} |" in text


def test_the_ida_svm_rows_are_scikit_learns_svm_at_each_C():
    X, y, Xt, yt = noisy_xor(8, 50, 80, noise=0.4)
    Cs = [0.5, 4.0]
    rows = franc._ida_split_scores((X, y, Xt, yt), 0.5, Cs, seed=0)["SVM"]
    for C, (trn, test, _, _, n_sv) in zip(Cs, rows, strict=True):
        svc = SVC(C=C, gamma=0.5).fit(X, y)
        assert trn == pytest.approx(np.mean(svc.predict(X) != y))
        assert test == pytest.approx(np.mean(svc.predict(Xt) != yt))
        assert n_sv == len(svc.support_)

