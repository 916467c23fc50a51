"""What the reproductions draw from the data sets (given here by stand-in loaders): the
per-digit subsets, validation digits disjoint from the training ones, the --quick
subsamples and the digits fallback; and the baselines they compare with: SVM+Approx with
a complete basis is the exact SVM, the relative objective is the Gram matrices'."""

from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.svm import SVC

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF
from sparsekm.reproduce import Context, denoising, franc, randomized
from sparsekm.reproduce import reduced_set as rs

from ._small_cases import noisy_xor


@pytest.fixture
def fake_usps(monkeypatch):
    """A USPS stand-in: 300 training and 120 test rows per digit, all rows distinct."""
    rng = np.random.default_rng(50)
    data = (rng.normal(size=(3000, 16)), np.repeat(np.arange(10), 300),
            rng.normal(size=(1200, 16)), np.repeat(np.arange(10), 120))
    calls = []

    def load_usps(path=None):
        calls.append(path)
        return data

    monkeypatch.setattr("sparsekm.datasets.load_usps", load_usps)
    return data, calls


def _rows(X):
    return {r.tobytes() for r in np.asarray(X)}


def test_denoising_subsets_have_so_many_of_each_digit(fake_usps):
    (Xtr, _, Xte, yte), _ = fake_usps
    X, T, yt, _ = denoising._usps_subsets(Context(seed=2), 30, 7)
    assert X.shape == (300, 16) and T.shape == (70, 16)
    assert np.bincount(yt).tolist() == [7] * 10
    assert len(_rows(X)) == 300 and _rows(X) <= _rows(Xtr) and _rows(T) <= _rows(Xte)
    X2, T2, _, _ = denoising._usps_subsets(Context(seed=2), 30, 7)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(T, T2)


def test_validation_digits_are_training_digits_not_used_for_training(fake_usps):
    (Xtr, ytr, _, _), _ = fake_usps
    X, _, _, _ = denoising._usps_subsets(Context(seed=2), 30, 7)
    V, _ = denoising._usps_validation(Context(seed=2), X, 20)
    assert V.shape == (200, 16)
    assert _rows(V) <= _rows(Xtr) and _rows(V).isdisjoint(_rows(X))
    label = {r.tobytes(): d for r, d in zip(Xtr, ytr, strict=True)}
    assert np.bincount([label[r.tobytes()] for r in V]).tolist() == [20] * 10


def test_the_quick_usps_subsample_is_a_sorted_seeded_subset(fake_usps):
    (Xtr, ytr, Xte, _), calls = fake_usps
    X, y, Xt, _ = rs._load(Context(seed=4, quick=True, data_path="/some/where"))
    assert calls == ["/some/where"]
    assert X.shape[0] == 2000 and Xt.shape[0] == 1000
    index = {r.tobytes(): i for i, r in enumerate(Xtr)}
    positions = [index[r.tobytes()] for r in X]
    assert positions == sorted(positions)  # the original order is kept
    np.testing.assert_array_equal(y, ytr[positions])
    full = rs._load(Context(seed=4, quick=False))
    assert full[0].shape[0] == 3000 and full[2].shape[0] == 1200


def test_the_randomized_section_falls_back_to_the_digits(monkeypatch):
    def missing(path=None):
        raise FileNotFoundError("no USPS here")

    monkeypatch.setattr("sparsekm.datasets.load_usps", missing)
    X, y, Xt, yt, name, gamma = randomized._load(Context(seed=0, quick=False))
    assert name.startswith("embedded 8x8 digits") and gamma == 1.0 / 32.0
    assert X.shape[1] == 64
    Xq, _, Xtq, _, _, _ = randomized._load(Context(seed=0, quick=True))
    assert Xq.shape[0] == min(1500, X.shape[0]) and Xtq.shape[0] == min(500, Xt.shape[0])
    assert _rows(Xq) <= _rows(X)


def test_the_randomized_section_uses_usps_with_its_width(fake_usps):
    _, _, _, _, name, gamma = randomized._load(Context(seed=0))
    assert name == "USPS" and gamma == 1.0 / 128.0


def test_svm_approx_with_a_complete_basis_is_the_exact_svm():
    X, y, Xt, yt = noisy_xor(3, 60, 200, noise=0.5)
    trn, test, ker_eval, ker_train, n_basis = franc._approx_svm_scores(
        (X, y, Xt, yt), 0.5, 1.0, 60, seed=0, eps=1e-12)
    svc = SVC(C=1.0, gamma=0.5).fit(X, y)
    assert n_basis == 60
    assert trn == pytest.approx(np.mean(svc.predict(X) != y))
    assert test == pytest.approx(np.mean(svc.predict(Xt) != yt))
    assert ker_train == 60 * 60  # the approximation itself evaluated the full Gram matrix


def test_the_relative_objective_is_the_gram_matrices():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(12, 2))
    coef = np.zeros((12, 2))
    coef[:7, 0], coef[7:, 1] = rng.normal(size=7), rng.normal(size=5)
    E = KernelExpansion(X, coef, RBF(0.8), np.zeros(2))
    blocks = [(rng.normal(size=(3, 2)), rng.normal(size=3)) for _ in range(2)]

    def k(A, B):
        return np.exp(-0.8 * ((A[:, None] - B[None]) ** 2).sum(-1))

    rel = []
    for (Z, b), rows in zip(blocks, (slice(0, 7), slice(7, 12)), strict=True):
        Xk, a = X[rows], coef[rows, 0 if rows.start == 0 else 1]
        norm2 = a @ k(Xk, Xk) @ a
        rel.append((norm2 - 2 * a @ k(Xk, Z) @ b + b @ k(Z, Z) @ b) / norm2)
    assert rs._rel_obj(E, blocks) == pytest.approx(np.mean(rel), rel=1e-10)


def test_a_pair_not_run_at_equal_factor_says_so():
    table = rs._pairs_table([("RS-25 (10x)", 5.1, (25, 6.25), None),
                             ("RS-50 (5x)", 4.3, (50, 4.5), (100, 4.125))])
    lines = table.splitlines()
    assert lines[2] == "| RS-25 (10x) | 5.1% | 6.25% (n = 25) | - (not run) |"
    assert lines[3] == "| RS-50 (5x) | 4.3% | 4.50% (n = 50) | 4.12% (n = 100) |"


def test_the_command_lines_defaults_are_the_contexts():
    from sparsekm.cli import build_parser

    args = build_parser().parse_args(["reproduce", "ripley"])
    ctx = Context()
    assert (args.seed, args.seeds, args.quick) == (ctx.seed, ctx.seeds, ctx.quick)
    assert args.no_cache == ctx.no_cache and args.cached_only == ctx.cached_only


def test_the_denoising_note_counts_against_the_papers_45_cells_by_default():
    # Table I has 5 sigmas x 9 component counts; a record without n_cells is of that grid
    notes = denoising._denoise_table_notes({"table-denoise-gaussians": SimpleNamespace(
        data={"wins": 3})})
    assert "in 3 of 45 cells" in notes[denoising.TABLE_I]  # n_cells defaults to the 45
