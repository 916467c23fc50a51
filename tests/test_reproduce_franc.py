"""Smoke and target checks of the Franc & Hlaváč reproductions."""

import numpy as np
import pytest

from sparsekm.reproduce import REGISTRY, Context, discover

from .conftest import requires_ida, requires_ripley


@pytest.fixture(scope="module")
def registry():
    return discover()


def test_registered(registry):
    for name in ("franc-pca", "ripley", "ida-franc"):
        assert name in registry
    assert registry["ida-franc"].slow


def test_franc_pca_quick(registry, tmp_path):
    res = REGISTRY["franc-pca"].func(Context(out_dir=tmp_path, quick=True, progress=False))
    assert (tmp_path / "franc_fig1_pca.png").exists()
    assert (tmp_path / "franc_fig1_pca_decaying.png").exists()
    rows = [[c.strip() for c in line.split("|")] for line in res.table.splitlines()[2:]]
    train = [float(r[7]) for r in rows if r[3] == "training"]
    test = [float(r[7]) for r in rows if r[3] == "testing" and r[1] == "N(0, I)"]
    # PCA is the optimal rank-m subspace of the training data: greedy / PCA >= 1 there.
    assert len(train) == 12 and min(train) >= 1.0
    # On held-out isotropic data the two are comparable (the paper's Fig. 1 b, d).
    assert max(abs(t - 1.0) for t in test) < 0.1


@requires_ripley
def test_ripley_quick_chooses_C_on_training_data(registry, tmp_path, monkeypatch):
    """C comes from cross-validation on the training set: the same whatever the test labels
    are (issue 23: the former C = 10 / 1e-3 had no source)."""
    from sparsekm.reproduce import franc

    res = REGISTRY["ripley"].func(Context(out_dir=tmp_path, quick=True, progress=False))
    assert len(res.figures) == 2
    row = next(line for line in res.table.splitlines() if "SVM+Approx (m = 25)" in line)
    test_err = float(row.split("|")[4])
    # paper: 9.4 %; with C chosen by 5-fold CV (2^11) ours is 10.2 %: within 1.6 points
    assert test_err <= 11.0
    real = franc.load_ripley

    def flipped(path=None):
        X, y, Xt, yt = real(path)
        return X, y, Xt[::-1], 1 - yt  # test points reordered, test labels flipped

    monkeypatch.setattr(franc, "load_ripley", flipped)
    res2 = REGISTRY["ripley"].func(Context(out_dir=tmp_path, quick=True, progress=False))
    assert res2.data["chosen_C"] == res.data["chosen_C"]
    assert set(res.data["chosen_C"]["rbf"]) == {"SVM", "KFD"}
    cells = res.data["cells"]
    assert len(cells) == 36 and all(c["table"] == franc.RIPLEY_TABLE for c in cells)


@requires_ida
def test_ida_protocol_on_one_set_tiny_grid(monkeypatch):
    from sparsekm.reproduce import franc

    monkeypatch.setattr(franc, "ida_grid", lambda quick: (np.array([2.0**-4]), np.array([1.0, 8.0]),
                                                          (1,), (1, 2)))
    rows, chosen = franc.ida_franc(Context(progress=False), datasets=("heart",))
    acc = rows["heart"]
    # the m = n_SV/5 supplement exists only with the validation choice (issue 23: no row
    # rests on (sigma, C) picked by test error beyond the paper's own protocol rows)
    assert set(acc) == set(franc.METHODS)
    for m in franc.METHODS:
        assert len(acc[m]) == 2
        assert all(0.0 <= r[1] <= 0.5 for r in acc[m])
    # m = 0.1 n for the SVM, 0.25 n for the KFD (170 training points)
    assert all(r[4] <= 17 for r in acc["SVM+Approx"])
    assert all(r[4] <= 42 for r in acc["KFD+Approx"])
    assert all(r[4] == 170 for r in acc["KFD"])


@pytest.mark.slow
@requires_ida
def test_ida_franc_quick_runs(registry):
    res = REGISTRY["ida-franc"].func(Context(quick=True, progress=False))
    assert "flare_solar is not available offline" in " ".join(res.notes)


@requires_ida
def test_ida_validation_selection_never_reads_the_test_set(monkeypatch):
    """(sigma, C) chosen by validation: the same whatever the test labels are."""
    from sparsekm.reproduce import franc

    monkeypatch.setattr(franc, "ida_grid", lambda quick: (
        np.array([2.0**-6, 2.0**-2]), np.array([1.0, 64.0]), (1,), (1,)))
    real = franc._ida_data
    seen = []

    def spy(data, seed):  # the validation split gets the training data only
        seen.append(data)
        return real_val(data, seed)

    real_val = franc._validation_data
    monkeypatch.setattr(franc, "_validation_data", spy)
    ctx = Context(progress=False)
    rows_a, a = franc.ida_franc(ctx, datasets=("heart",), selection="validation")
    assert franc.SUPPLEMENT in rows_a["heart"]
    monkeypatch.setattr(franc, "_ida_data", lambda name, split, ctx: (
        lambda d: (d[0], d[1], d[2][::-1], -d[3]))(real(name, split, ctx)))
    rows_b, b = franc.ida_franc(ctx, datasets=("heart",), selection="validation")
    assert a == b and len(seen) == 2
    # the supplement's training errors do not depend on the test labels either
    assert [r[0] for r in rows_a["heart"][franc.SUPPLEMENT]] == \
        [r[0] for r in rows_b["heart"][franc.SUPPLEMENT]]
    Xf, yf, Xv, yv = real_val(real("heart", 1, ctx), 1)
    assert Xf.shape[0] + Xv.shape[0] == 170 and abs(Xv.shape[0] - 170 / 4) < 1
    with pytest.raises(ValueError, match="selection"):
        franc.ida_franc(ctx, datasets=("heart",), selection="test set")
