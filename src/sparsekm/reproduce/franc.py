"""Reproductions of Franc & Hlaváč, *Training set approximation for kernel methods*.

* ``franc-pca``: Figure 1, greedy basis vs PCA (linear kernel) on Gaussian data.
* ``ripley``: Table 1 and Figures 2-3, SVM and KFD on Ripley's data.
* ``ida-franc``: Table 2 on the IDA sets available offline.
"""

from __future__ import annotations

import numpy as np

from ..approx.greedy import GreedyBasis, pivoted_cholesky
from ..datasets import load_ida, load_ripley
from ..expansion import KernelExpansion
from ..kernels import RBF, Linear, Polynomial
from ..models import ApproxKFD, ApproxSVC, KernelFisherDiscriminant
from ..models.approx_svm import svc_precomputed
from ..models.kfd import fisher_scatter, kfd_path
from ..plotting import approximation_mse_curves, decision_boundaries
from ..utils.progress import progress
from . import PRINTED_DECIMALS, Result, Section, Target, published_cell, register

SECTION = Section(
    title="Training-set approximation (Franc & Hlaváč; issue 5)",
    order=5,
    intro="""\
*Training set approximation for kernel methods* (Franc & Hlaváč, CVWW 2003): the greedy
basis of Algorithm 1 (= pivoted Cholesky of the Gram matrix) replaces the training set by m
basis vectors; the SVM and the KFD are trained on the approximated data. Commands:
`sparsekm reproduce franc-pca ripley ida-franc` (Ripley and IDA data: download them with
`sparsekm data fetch ripley ida`, then pass `--data DIR` or set `SPARSEKM_DATA=DIR` if they
are not in the default data folder).""",
    table_notes=lambda records: _franc_table_notes(records),
)


def _franc_table_notes(records):
    """Scoreboard evidence for Tables 1-2, from the records' data (what was chosen, how)."""
    out = {}
    rip = records.get("ripley")
    if rip is not None and rip.data.get("chosen_C"):
        ch = rip.data["chosen_C"]
        out[RIPLEY_TABLE] = (
            "The paper does not state C; ours is chosen by 5-fold CV on the 250 training "
            "points (" + "; ".join(f"{k}: SVM C = {v['SVM']:g}, KFD regulariser {v['KFD']:g}"
                                   for k, v in ch.items())
            + "), and the +Approx rows use one random first basis point (seed 0; the column "
            "'over random inits' gives the spread). With 1000 test points one error is 0.1 "
            "point.")
    ida = records.get("ida-franc")
    if ida is not None and ida.data.get("chosen_validation"):
        ch = ida.data["chosen_validation"]
        out[IDA_TABLE] = (
            "Compared cells are our validation-chosen rows: (sigma, C) chosen on held-out "
            "quarters of the training sets of splits 1-5, where the paper chose them by the "
            "smallest test error; means over splits 1-10 against the paper's 100. Chosen "
            "(log2 sigma, log2 C) for SVM: " + ", ".join(
                f"{IDA_LABELS.get(n, n)} ({np.log2(c['SVM'][0]):.0f}, {np.log2(c['SVM'][1]):.0f})"
                for n, c in ch.items() if "SVM" in c) + ".")
    return out


def _pct(x):
    return f"{100 * x:.1f}"


def _err(f, y):
    return float(np.mean(np.where(f > 0, 1, -1) != y))


# -- Figure 1 -------------------------------------------------------------------------
def _pca_mse(Xtr, Xte, ms):
    """Mean squared residual of the best rank-m subspace of the training data (uncentred)."""
    _, _, Vt = np.linalg.svd(Xtr, full_matrices=False)
    out_tr, out_te = [], []
    for m in ms:
        V = Vt[:m].T
        for X, out in ((Xtr, out_tr), (Xte, out_te)):
            R = X - (X @ V) @ V.T
            out.append(float(np.mean(np.einsum("ij,ij->i", R, R))))
    return np.array(out_tr), np.array(out_te)


def _greedy_mse(Xtr, Xte, ms, seed):
    gb = GreedyBasis(n_basis=max(ms), tol=0.0, kernel=Linear(), random_state=seed).fit(Xtr)
    piv = gb.basis_indices_
    diag_tr = np.einsum("ij,ij->i", Xtr, Xtr)
    diag_te = np.einsum("ij,ij->i", Xte, Xte)
    out_tr, out_te = [], []
    G_tr = gb.transform(Xtr)
    G_te = gb.transform(Xte)
    for m in ms:
        m_eff = min(m, len(piv))
        out_tr.append(float(np.mean(diag_tr - np.einsum("ij,ij->i", G_tr[:, :m_eff], G_tr[:, :m_eff]))))
        out_te.append(float(np.mean(diag_te - np.einsum("ij,ij->i", G_te[:, :m_eff], G_te[:, :m_eff]))))
    return np.maximum(out_tr, 0), np.maximum(out_te, 0)


@register("franc-pca", "Franc & Hlavac Fig. 1: greedy basis vs PCA mse (linear kernel, R^100)")
def run_franc_pca(ctx):
    rng = np.random.default_rng(ctx.seed)
    d = 100
    ms = np.arange(1, d + 1) if not ctx.quick else np.union1d(np.arange(1, d + 1, 3), [25, 50])
    settings = [
        ("isotropic", "N(0, I)", np.ones(d), "franc_fig1_pca.png"),
        ("decaying", "N(0, Q diag(exp(-i/20))^2 Q^T)", np.exp(-np.arange(d) / 20.0),
         "franc_fig1_pca_decaying.png"),
    ]
    figs, rows = [], []
    for _key, law, scales, fname in settings:
        Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        panels = []
        for n in (100, 1000):
            Xtr = (rng.normal(size=(n, d)) * scales) @ Q.T
            Xte = (rng.normal(size=(n, d)) * scales) @ Q.T
            p_tr, p_te = _pca_mse(Xtr, Xte, ms)
            g_tr, g_te = _greedy_mse(Xtr, Xte, ms, ctx.seed)
            for part, g, p in (("training", g_tr, p_tr), ("testing", g_te, p_te)):
                panels.append({"title": f"{part} data, n = {n}", "m": ms,
                               "curves": {"greedy (Algorithm 1)": g, "PCA": p}})
                for m in (10, 25, 50):
                    i = int(np.searchsorted(ms, m))
                    if i < len(ms) and ms[i] == m:
                        rows.append((law, n, part, m, g[i], p[i]))
        figs.append(approximation_mse_curves(
            panels, path=ctx.out_dir / fname,
            suptitle=f"Greedy training-set approximation vs PCA (linear kernel, {law} in R^100)"))
    lines = ["| data | n | set | m | mse greedy | mse PCA | greedy / PCA | paper (Fig. 1) |",
             "|---|---|---|---|---|---|---|---|"]
    for law, n, part, m, g, p in rows:
        paper = "slightly above PCA" if part == "training" else "comparable to PCA"
        lines.append(f"| {law} | {n} | {part} | {m} | {g:.3f} | {p:.3f} | {g / p:.3f} | {paper} |")
    notes = [
        "mse is the mean of se(x) over the set (the paper's sum divided by n); PCA is the best "
        "rank-m subspace of the training data (uncentred, the subspace problem Algorithm 1 "
        "approximates), evaluated on the training and on an independent test set.",
        "The paper says only 'Gaussian distribution'; N(0, I) is the natural reading (first "
        "figure). A second, anisotropic law with a decaying spectrum (random rotation Q) is "
        "shown as well: there the greedy subspace is clearly worse than PCA on both sets.",
        f"Basis initialised at a random point (seed {ctx.seed}).",
    ]
    return Result("franc-pca", "Franc & Hlaváč Figure 1: greedy basis vs PCA", "\n".join(lines),
                  notes=notes, figures=figs)


# -- Table 1, Figures 2-3 -----------------------------------------------------------------
_RIPLEY_PAPER = {
    ("rbf", "SVM"): (14.4, 9.4, 94), ("rbf", "SVM+Approx", 5): (14.4, 9.6, 5),
    ("rbf", "SVM+Approx", 25): (14.4, 9.4, 25), ("rbf", "KFD"): (14.8, 10.4, 250),
    ("rbf", "KFD+Approx", 5): (16.4, 9.8, 5), ("rbf", "KFD+Approx", 25): (14.8, 10.4, 25),
    ("poly", "SVM"): (14.0, 9.9, 90), ("poly", "SVM+Approx", 3): (14.4, 13.5, 3),
    ("poly", "SVM+Approx", 6): (14.4, 9.8, 6), ("poly", "KFD"): (14.8, 11.7, 250),
    ("poly", "KFD+Approx", 3): (13.6, 10.8, 3), ("poly", "KFD+Approx", 6): (14.8, 11.8, 6),
}
#: The paper does not state C for Ripley's data: C is chosen per kernel by stratified
#: 5-fold cross-validation on the 250 training points over the grid of the paper's IDA
#: experiment (section 5.3: C in 2^0 ... 2^12; the KFD regulariser of eq. 5/7 is 1 / C, as
#: in ``ida-franc``), the smallest mean validation error winning (ties: the first, i.e.
#: the smallest C). The +Approx rows use the C chosen for their full method.
RIPLEY_C_GRID = tuple(2.0 ** np.arange(0, 13))
RIPLEY_FOLDS = 5


def ripley_choose_C(X, y, kernel, seed=0):
    """``{"SVM": C, "KFD": regulariser}`` by 5-fold CV on the training data ``(X, y)`` only.

    The test set is not an argument: nothing of it can enter the choice.
    """
    from sklearn.model_selection import StratifiedKFold

    K = kernel(X)
    err = {"SVM": np.zeros(len(RIPLEY_C_GRID)), "KFD": np.zeros(len(RIPLEY_C_GRID))}
    folds = StratifiedKFold(RIPLEY_FOLDS, shuffle=True, random_state=seed).split(X, y)
    for tr, va in folds:
        Ktr, Kva = K[np.ix_(tr, tr)], K[np.ix_(va, tr)]
        for j, C in enumerate(RIPLEY_C_GRID):
            sv, dual, b = svc_precomputed(Ktr, y[tr], C)
            err["SVM"][j] += _err(Kva[:, sv] @ dual + b, y[va])
        N, d, means = fisher_scatter(Ktr, y[tr])
        for j, a in enumerate(kfd_path(N, d, 1.0 / np.asarray(RIPLEY_C_GRID))):
            b = -0.5 * float(a @ (means[0] + means[1]))
            err["KFD"][j] += _err(Kva @ a + b, y[va])
    return {"SVM": float(RIPLEY_C_GRID[int(np.argmin(err["SVM"]))]),
            "KFD": 1.0 / float(RIPLEY_C_GRID[int(np.argmin(err["KFD"]))])}


@register("ripley", "Franc & Hlavac Table 1, Figs. 2-3: SVM/KFD on approximated Ripley data")
def run_ripley(ctx):
    X, y, Xt, yt = load_ripley(ctx.data_path)
    y, yt = 2 * y - 1, 2 * yt - 1
    n_seeds = 3 if ctx.quick else 10
    kernels = [("rbf", "RBF sigma = 1", RBF.from_sigma(1.0), (5, 25)),
               ("poly", "polynomial d = 2", Polynomial(2, 1.0), (3, 6))]
    lines = ["| kernel | method | TrnErr % | TestErr % | n_SV | TestErr % over "
             f"{n_seeds} random inits (mean ± std) | paper TrnErr / TestErr / n_SV |",
             "|---|---|---|---|---|---|---|"]
    svm_panels, kfd_panels, targets, cells, chosen = [], [], [], [], {}
    for key, kname, k, ms in kernels:
        cs = chosen[key] = ripley_choose_C(X, y, k, ctx.seed)
        sv, dual, b = svc_precomputed(k(X), y, cs["SVM"])
        svm = KernelExpansion(X[sv], dual, k, b)
        kfd = KernelFisherDiscriminant(C=cs["KFD"], kernel=k).fit(X, y)
        for method, full, n_terms in (("SVM", svm.decision_function, len(sv)),
                                      ("KFD", kfd.decision_function, kfd.n_vectors_)):
            paper = _RIPLEY_PAPER[(key, method)]
            lines.append(f"| {kname} | {method} (C = {_fmt_C(cs[method])}) | "
                         f"{_pct(_err(full(X), y))} | {_pct(_err(full(Xt), yt))} | {n_terms} | | "
                         f"{paper[0]} / {paper[1]} / {paper[2]} |")
            cells += _ripley_cells(f"{kname}, {method}", 100 * _err(full(X), y),
                                   100 * _err(full(Xt), yt), n_terms, paper)
            for m in ms:
                test_errs = []
                shown = None
                for s in range(n_seeds):
                    seed = ctx.seed + s
                    if method == "SVM":
                        est = ApproxSVC(C=cs["SVM"], n_basis=m, tol=0.0, kernel=k,
                                        random_state=seed)
                    else:
                        est = ApproxKFD(C=cs["KFD"], n_basis=m, tol=0.0, kernel=k,
                                       random_state=seed)
                    est.fit(X, y)
                    test_errs.append(1 - est.score(Xt, yt))
                    if s == 0:
                        shown = est
                paper = _RIPLEY_PAPER[(key, f"{method}+Approx", m)]
                if (key, method, m) == ("rbf", "SVM", 25):
                    first_err = 1 - shown.score(Xt, yt)
                    targets.append(Target(
                        "Ripley SVM+Approx (m = 25) test error <= 9.6 %",
                        f"{_pct(first_err)} % (seed {ctx.seed}; {_pct(np.mean(test_errs))} ± "
                        f"{_pct(np.std(test_errs))} over {n_seeds} initialisations)",
                        f"{paper[1]} %", bool(round(100 * first_err, 1) <= 9.6)))
                lines.append(
                    f"| {kname} | {method}+Approx (m = {m}) | {_pct(1 - shown.score(X, y))} | "
                    f"{_pct(1 - shown.score(Xt, yt))} | {shown.n_vectors_} | "
                    f"{_pct(np.mean(test_errs))} ± {_pct(np.std(test_errs))} | "
                    f"{paper[0]} / {paper[1]} / {paper[2]} |")
                cells += _ripley_cells(f"{kname}, {method}+Approx (m = {m})",
                                       100 * (1 - shown.score(X, y)),
                                       100 * (1 - shown.score(Xt, yt)), shown.n_vectors_, paper)
                panel = {"title": f"{method}, {kname}: full vs approx m = {m}", "full": full,
                         "approx": shown.decision_function, "basis": shown.expansion_.vectors}
                (svm_panels if method == "SVM" else kfd_panels).append(panel)
    figs = [
        decision_boundaries(svm_panels, X, y, path=ctx.out_dir / "franc_fig2_ripley_svm.png",
                            suptitle="SVM on Ripley"),
        decision_boundaries(kfd_panels, X, y, path=ctx.out_dir / "franc_fig3_ripley_kfd.png",
                            suptitle="KFD on Ripley"),
    ]
    notes = [
        "The paper does not state C. The SVM's C and the KFD regulariser (eq. 5/7) are "
        f"chosen per kernel by stratified {RIPLEY_FOLDS}-fold cross-validation on the 250 "
        "training points over the paper's IDA grid C = 2^0 ... 2^12 (KFD regulariser 1 / C), "
        "smallest mean validation error (ties: smallest C); no test point enters the choice. "
        "Chosen: " + "; ".join(f"{kn}: SVM C = {_fmt_C(chosen[kk]['SVM'])}, KFD regulariser "
                               f"{_fmt_C(chosen[kk]['KFD'])}" for kk, kn, _, _ in kernels)
        + ". The +Approx rows use their full method's C. RBF sigma = 1 is k = exp(-||x-y||^2 / 2), the polynomial "
        "kernel is (x.y + 1)^2. Approximation: Algorithm 1 with exactly m basis vectors (eps = 0: "
        "with the paper's IDA setting eps = 1e-3 the RBF selection stops at 12 vectors, "
        "below m = 25), random first point.",
        f"TrnErr/TestErr/n_SV columns use the first random initialisation (seed {ctx.seed}); "
        "the next column shows the spread over initialisations.",
        "KFD's n_SV is the number of expansion terms (all 250 training points).",
        "Labels: 250 training, 1000 test points (MASS synth.tr/synth.te).",
    ]
    return Result("ripley", "Franc & Hlaváč Table 1: Ripley data", "\n".join(lines),
                  notes=notes, figures=figs, targets=targets,
                  data={"cells": cells, "chosen_C": chosen})


RIPLEY_TABLE = "Franc & Hlaváč 2003, Table 1"


def _fmt_C(C):
    e = np.log2(C)
    return f"2^{e:.0f}" if float(e).is_integer() else f"{C:g}"


def _ripley_cells(row, trn, test, n_sv, paper):
    """Published cells of one Table 1 row: TrnErr %, TestErr %, n_SV (ours rounded as shown)."""
    return [published_cell(RIPLEY_TABLE, f"{row} TrnErr %", round(float(trn), 1), paper[0]),
            published_cell(RIPLEY_TABLE, f"{row} TestErr %", round(float(test), 1), paper[1]),
            published_cell(RIPLEY_TABLE, f"{row} n_SV", int(n_sv), paper[2])]


# -- Table 2 ------------------------------------------------------------------------------
IDA_SETS = ("breast_cancer", "heart", "ringnorm", "titanic", "waveform")
_IDA_PAPER = {  # TrnErr, TestErr, ker_eval, n_SV (paper, 100 splits)
    "breast_cancer": {"SVM": (20.69, 25.36, "2.7e6", 116), "SVM+Approx": (20.93, 26.51, "7.8e3 (264e6)", 20),
                      "KFD": (28.04, 29.52, "40e3", 200), "KFD+Approx": (20.82, 29.82, "18.8e3 (10e3)", 50)},
    "heart": {"SVM": (13.82, 15.31, "291.3e3", 100), "SVM+Approx": (13.95, 15.44, "5.6e3 (242.8e3)", 17),
              "KFD": (14.43, 16.31, "28.9e3", 170), "KFD+Approx": (14.06, 16.53, "13.4e3 (7.3e3)", 42)},
    "ringnorm": {"SVM": (0.07, 1.60, "1.7e6", 218), "SVM+Approx": (1.11, 1.91, "31.2e3 (1.7e6)", 40),
                 "KFD": (1.43, 1.49, "160e3", 400), "KFD+Approx": (1.7, 2.01, "75.1e3 (40e3)", 100)},
    "titanic": {"SVM": (19.57, 22.28, "4.3e6", 85), "SVM+Approx": (19.56, 22.94, "3.4e3 (350e3)", 11),
                "KFD": (21.99, 23.81, "22.5e3", 150), "KFD+Approx": (22.47, 24.26, "2.8e3 (1.4e3)", 9)},
    "waveform": {"SVM": (2.68, 9.92, "1.0e6", 175), "SVM+Approx": (7.14, 10.47, "31.2e3 (4.4e6)", 40),
                 "KFD": (6.34, 10.39, "160e3", 400), "KFD+Approx": (7.26, 10.80, "115e3 (75e3)", 100)},
}
METHODS = ("SVM", "SVM+Approx", "KFD", "KFD+Approx")


def _fmt_count(x):
    """A count as mantissa-e-exponent (``4.2e3``), like the paper's ker_eval column."""
    if x == 0:
        return "0"
    e = int(np.floor(np.log10(x)))
    return f"{x / 10**e:.2g}e{e}"


def ida_grid(quick):
    """(sigmas, Cs, selection splits, evaluation splits) of the ida-franc protocol."""
    if quick:
        return (2.0 ** np.arange(-8, 4, 2), 2.0 ** np.arange(0, 13, 3), (1, 2), (1, 2, 3))
    return 2.0 ** np.arange(-8, 4), 2.0 ** np.arange(0, 13), (1, 2, 3, 4, 5), tuple(range(1, 11))


def _ida_split_scores(data, sigma, Cs, seed, eps=1e-3):
    """Train every method for one split and one sigma over all C.

    Returns ``{method: [(trn_err, test_err, ker_eval, ker_eval_training, n_sv), ...]
    per C}`` (``ker_eval_training`` is None for the full methods). For the
    KFD the regulariser of eq. 5/7 is ``1 / C`` (so that the same grid applies).
    """
    X, y, Xt, yt = data
    n = X.shape[0]
    k = RBF(gamma=float(sigma))
    K = k(X)
    Kt = k(Xt, X)
    out = {m: [] for m in METHODS}
    for C in Cs:
        sv, dual, b = svc_precomputed(K, y, C)
        f_tr, f_te = K[:, sv] @ dual + b, Kt[:, sv] @ dual + b
        out["SVM"].append((_err(f_tr, y), _err(f_te, yt), n * n, None, len(sv)))
    # Approximation shared by every C (it does not depend on C).
    results = {}
    for method, frac in (("SVM+Approx", 0.1), ("KFD+Approx", 0.25)):
        m = max(1, int(round(frac * n)))
        first = int(np.random.RandomState(seed).randint(n))
        piv, L, _, n_eval = pivoted_cholesky(X, k, m, tol=eps, first=first)
        results[method] = (piv, L.T, np.ascontiguousarray(L[:, piv].T), n * (len(piv) + 1))
    piv, G, chol, n_approx = results["SVM+Approx"]
    Gram = G @ G.T
    Gt = np.linalg.solve(chol, Kt[:, piv].T).T
    for C in Cs:
        sv, dual, b = svc_precomputed(Gram, y, C)
        w = G[sv].T @ dual
        out["SVM+Approx"].append((_err(G @ w + b, y), _err(Gt @ w + b, yt),
                                  n_approx, n * n, len(piv)))
    N, d, means = fisher_scatter(K, y)
    for a in kfd_path(N, d, 1.0 / np.asarray(Cs)):
        b = -0.5 * float(a @ (means[0] + means[1]))
        out["KFD"].append((_err(K @ a + b, y), _err(Kt @ a + b, yt), n * n, None, n))
    piv, G, chol, n_approx = results["KFD+Approx"]
    A = G @ chol.T
    N, d, means = fisher_scatter(A, y)
    for a in kfd_path(N, d, 1.0 / np.asarray(Cs)):
        b = -0.5 * float(a @ (means[0] + means[1]))
        out["KFD+Approx"].append((_err(A @ a + b, y), _err(Kt[:, piv] @ a + b, yt),
                                  n_approx, 0, len(piv)))
    return out


def _validation_data(data, seed, fraction=0.25):
    """A stratified validation split carved from the *training* set of ``data``.

    Returns ``(X_fit, y_fit, X_val, y_val)`` in the ``(X, y, Xt, yt)`` layout of
    :func:`_ida_split_scores`; the test set of ``data`` is dropped.
    """
    from sklearn.model_selection import StratifiedShuffleSplit

    X, y, _, _ = data
    fit, val = next(StratifiedShuffleSplit(1, test_size=fraction, random_state=seed).split(X, y))
    return X[fit], y[fit], X[val], y[val]


def ida_franc(ctx, datasets=IDA_SETS, selection="test"):
    """The ida-franc protocol; returns ``(rows, chosen)`` for the table and the notes.

    ``selection="test"``: (sigma, C) by the smallest mean test error on the first splits
    (the paper's protocol: "The pairs of arguments (sigma, C) which yielded the smallest
    testing error were selected"). ``selection="validation"``: by the smallest mean error
    on a stratified quarter of each selection split's *training* set, the models fitted on
    the other three quarters (:func:`_validation_data`); no test data is used to choose.
    """
    if selection not in ("test", "validation"):
        raise ValueError(f"selection must be 'test' or 'validation'; got {selection!r}.")
    sigmas, Cs, sel_splits, eval_splits = ida_grid(ctx.quick)
    rows = {}
    chosen = {}
    for name in progress(datasets, desc="ida-franc", disable=None if ctx.progress else True):
        # 1. model selection on the first splits: smallest mean test error (as in the paper)
        #    or smallest mean validation error inside the training sets
        score = {m: np.zeros((len(sigmas), len(Cs))) for m in METHODS}
        for split in sel_splits:
            data = _ida_data(name, split, ctx)
            if selection == "validation":
                data = _validation_data(data, ctx.seed + split)
            for i, sigma in enumerate(sigmas):
                res = _ida_split_scores(data, sigma, Cs, ctx.seed + split)
                for m in METHODS:
                    score[m][i] += [r[1] for r in res[m]]
        best = {m: np.unravel_index(np.argmin(score[m]), score[m].shape) for m in METHODS}
        chosen[name] = {m: (float(sigmas[i]), float(Cs[j])) for m, (i, j) in best.items()}
        # 2. evaluation with the chosen parameters on the evaluation splits
        acc = {m: [] for m in METHODS}
        for split in eval_splits:
            data = _ida_data(name, split, ctx)
            for m in METHODS:
                sigma, C = chosen[name][m]
                acc[m].append(_ida_split_scores(data, sigma, [C], ctx.seed + split)[m][0])
        # 3. supplement: SVM+Approx with m = (mean n_SV of the full SVM) / 5, i.e. exactly a
        #    5x reduction, at the (sigma, C) chosen for SVM+Approx (no re-selection). Only
        #    with the validation choice: no row of it may rest on a test-set choice.
        if selection == "validation":
            m5 = max(1, int(np.mean([r[4] for r in acc["SVM"]]) // 5))
            sigma, C = chosen[name]["SVM+Approx"]
            acc[SUPPLEMENT] = [_approx_svm_scores(_ida_data(name, split, ctx), sigma, C, m5,
                                                  ctx.seed + split) for split in eval_splits]
        rows[name] = acc
    return rows, chosen


SUPPLEMENT = "SVM+Approx (m = n_SV/5)"
IDA_TABLE = "Franc & Hlaváč 2003, Table 2"
# the paper prints the errors with two decimals (1.60, 10.80), the counts as integers ...
PRINTED_DECIMALS[IDA_TABLE] = {"TrnErr %": 2, "TestErr %": 2, "n_SV": 0}
# ... but for one cell: Ringnorm's KFD+Approx TrnErr is printed "1.7"
_IDA_PRINTED_OTHERWISE = {("ringnorm", "KFD+Approx", "TrnErr %"): 1}


def ida_cell(name, method, column, ours, paper):
    """The scoreboard cell of Table 2 for data set ``name``, ``method`` and ``column``
    (``"TrnErr %"``, ``"TestErr %"`` or ``"n_SV"``), judged at the decimals the paper
    prints that cell with."""
    return published_cell(IDA_TABLE, f"{IDA_LABELS.get(name, name)} {method} {column}", ours,
                          paper, paper_decimals=_IDA_PRINTED_OTHERWISE.get((name, method,
                                                                             column)))
IDA_LABELS = {"breast_cancer": "Breast Cancer", "heart": "Heart", "ringnorm": "Ringnorm",
              "titanic": "Titanic", "waveform": "Waveform"}


def _approx_svm_scores(data, sigma, C, m, seed, eps=1e-3):
    """SVM+Approx with ``m`` basis vectors: (trn_err, test_err, ker_eval, ker_train, n_sv)."""
    X, y, Xt, yt = data
    n = X.shape[0]
    k = RBF(gamma=float(sigma))
    first = int(np.random.RandomState(seed).randint(n))
    piv, L, _, _ = pivoted_cholesky(X, k, m, tol=eps, first=first)
    G = L.T
    chol = np.ascontiguousarray(L[:, piv].T)
    sv, dual, b = svc_precomputed(G @ G.T, y, C)
    w = G[sv].T @ dual
    Gt = np.linalg.solve(chol, k(Xt, X[piv]).T).T
    return (_err(G @ w + b, y), _err(Gt @ w + b, yt), n * (len(piv) + 1), n * n, len(piv))


def _ida_data(name, split, ctx):
    X, y, Xt, yt = load_ida(name, split, ctx.data_path)
    return X, y.astype(float), Xt, yt.astype(float)


@register("ida-franc", "Franc & Hlavac Table 2: SVM/KFD on approximated IDA training sets",
          slow=True)
def run_ida_franc(ctx):
    sigmas, Cs, sel_splits, eval_splits = ida_grid(ctx.quick)
    rows, chosen = ida_franc(ctx)
    vrows, vchosen = ida_franc(ctx, selection="validation")
    lines = ["| data set | method | (sigma, C) | TrnErr % | TestErr % | ker_eval | n_SV | "
             "paper TrnErr / TestErr / ker_eval / n_SV |",
             "|---|---|---|---|---|---|---|---|"]
    summary, diffs, ratios, sup, vdiffs = [], {}, {}, {}, {}
    for name, acc in vrows.items():  # rows with (sigma, C) chosen inside the training sets
        svm_te = np.mean([x[1] for x in acc["SVM"]])
        apx_te = np.mean([x[1] for x in acc["SVM+Approx"]])
        vdiffs[name] = 100 * (apx_te - svm_te)
    cells = []
    for name, acc in rows.items():
        for m in METHODS:
            r = acc[m]
            trn = np.mean([x[0] for x in r])
            te = np.mean([x[1] for x in r])
            nsv = np.mean([x[4] for x in r])
            ke = _fmt_count(np.mean([x[2] for x in r]))
            if r[0][3] is not None:
                ke += f" ({_fmt_count(np.mean([x[3] for x in r]))})"
            p = _IDA_PAPER[name][m]
            s, C = chosen[name][m]
            lines.append(f"| {name} | {m} | (2^{np.log2(s):.0f}, 2^{np.log2(C):.0f}) | "
                         f"{100 * trn:.2f} | {100 * te:.2f} | {ke} | {nsv:.1f} | "
                         f"{p[0]} / {p[1]} / {p[2]} / {p[3]} |")
            # the same method, (sigma, C) by validation inside the training sets
            v = vrows[name][m]
            vs, vC = vchosen[name][m]
            vke = _fmt_count(np.mean([x[2] for x in v]))
            if v[0][3] is not None:
                vke += f" ({_fmt_count(np.mean([x[3] for x in v]))})"
            vtrn, vte = 100 * np.mean([x[0] for x in v]), 100 * np.mean([x[1] for x in v])
            vnsv = np.mean([x[4] for x in v])
            lines.append(
                f"| {name} | {m}, validation-chosen | (2^{np.log2(vs):.0f}, "
                f"2^{np.log2(vC):.0f}) | {vtrn:.2f} | {vte:.2f} | {vke} | "
                f"{vnsv:.1f} | {p[0]} / {p[1]} / {p[2]} / {p[3]} |")
            cells += [ida_cell(name, m, "TrnErr %", round(float(vtrn), 2), p[0]),
                      ida_cell(name, m, "TestErr %", round(float(vte), 2), p[1]),
                      ida_cell(name, m, "n_SV", round(float(vnsv), 1), p[3])]
        # supplement (not in the paper): m = n_SV / 5 at the validation-chosen (sigma, C)
        v = vrows[name][SUPPLEMENT]
        vs, vC = vchosen[name]["SVM+Approx"]
        lines.append(
            f"| {name} | {SUPPLEMENT}, validation-chosen (extra) | (2^{np.log2(vs):.0f}, "
            f"2^{np.log2(vC):.0f}) | {100 * np.mean([x[0] for x in v]):.2f} | "
            f"{100 * np.mean([x[1] for x in v]):.2f} | "
            f"{_fmt_count(np.mean([x[2] for x in v]))} "
            f"({_fmt_count(np.mean([x[3] for x in v]))}) | "
            f"{np.mean([x[4] for x in v]):.1f} | – |")
        svm_te = np.mean([x[1] for x in acc["SVM"]])
        apx_te = np.mean([x[1] for x in acc["SVM+Approx"]])
        ratio = np.mean([x[4] for x in acc["SVM"]]) / np.mean([x[4] for x in acc["SVM+Approx"]])
        summary.append(f"{name}: SVM+Approx - SVM test error = {100 * (apx_te - svm_te):+.2f} "
                       f"points (target <= 1.5), SV reduction {ratio:.1f}x (target >= 5x)")
        vacc = vrows[name]  # the supplement: validation-chosen (sigma, C) only
        vsvm_te = np.mean([x[1] for x in vacc["SVM"]])
        sup_te = np.mean([x[1] for x in vacc[SUPPLEMENT]])
        sup_ratio = (np.mean([x[4] for x in vacc["SVM"]])
                     / np.mean([x[4] for x in vacc[SUPPLEMENT]]))
        diffs[name], ratios[name] = 100 * (apx_te - svm_te), ratio
        sup[name] = (100 * (sup_te - vsvm_te), sup_ratio)
        summary.append(f"{name}: with m = n_SV/5 ((sigma, C) chosen by validation), SVM+Approx "
                       f"- SVM test error = {100 * (sup_te - vsvm_te):+.2f} points, SV reduction "
                       f"{sup_ratio:.1f}x")
    grid = (f"sigma in 2^{np.log2(sigmas[0]):.0f}..2^{np.log2(sigmas[-1]):.0f} "
            f"({len(sigmas)} values), C in 2^{np.log2(Cs[0]):.0f}..2^{np.log2(Cs[-1]):.0f} "
            f"({len(Cs)} values)")
    notes = [
        f"Grid: {grid}; (sigma, C) chosen per method and data set by the smallest mean test "
        f"error on splits {list(sel_splits)} (the paper's protocol), then averaged over splits "
        f"{list(eval_splits)}. The paper averaged 100 splits; only splits 1-10 are available "
        "offline." + (" QUICK RUN: coarse grid and few splits." if ctx.quick else ""),
        "flare_solar is not available offline (no split files), so its rows are missing.",
        "Kernel exp(-sigma ||x - y||^2); m = 0.1 n for SVM+Approx and 0.25 n for KFD+Approx, "
        "eps = 0.001, random first basis point. KFD regulariser (eq. 5/7) = 1 / C.",
        "ker_eval: our counts. SVM and KFD: entries of the Gram matrix given to the solver "
        "(n^2; libsvm's SMO is run on the precomputed matrix, so the paper's on-demand SMO "
        "count is not available). +Approx: kernel values computed by Algorithm 1, n (m + 1), "
        "and in brackets the approximated kernel values gamma_i^T gamma_j formed for SMO (n^2; "
        "0 for KFD, whose eq. 7 needs only m x m matrices).",
        "n_SV: expansion terms of the decision function (all n training points for the KFD).",
        f"Row '{SUPPLEMENT}' (not in the paper): m = mean n_SV of our full SVM / 5, at the "
        "(sigma, C) chosen for SVM+Approx by validation inside the training sets (never by "
        "test error), to test the >= 5x reduction target where m = 0.1 n gives less than 5x.",
        "Scoreboard: the published cells (TrnErr, TestErr, n_SV) are compared with the "
        "validation-chosen rows, which use no test data; the paper's rows (test-error "
        "selection) are shown for reference only. ker_eval is not compared: our counts are "
        "Gram entries given to the solver, not the paper's on-demand SMO counts.",
    ] + summary
    notes.append(
        "Protocol: the full grid selects (sigma, C) on splits 1-5 and evaluates on splits "
        "1-10; `--quick` uses a coarse grid, selection on splits 1-2 and evaluation on 1-3 and "
        "is only a smoke test (two splits are too few to select (sigma, C)). Model selection "
        "on test error follows the paper (\"We used first 5 realization of data ... The pairs "
        "of arguments (sigma, C) which yielded the smallest testing error were selected\", "
        "section 5) and is optimistic for every method alike: those rows are the paper's "
        "protocol. The rows marked \"validation-chosen\" choose (sigma, C) without "
        "the test set: on each selection split a stratified quarter of the training set is "
        "held out, the methods are fitted on the other three quarters, and the grid point "
        "with the smallest mean held-out error is taken; the evaluation is then the same "
        "(full training sets, test errors over the evaluation splits).")
    n_sets = len(diffs)
    within = [n for n, d in diffs.items() if d <= 1.5]
    vwithin = [n for n, d in vdiffs.items() if d <= 1.5]
    five = [n for n, r in ratios.items() if r >= 5.0]
    sup_ok = [n for n, (d, r) in sup.items() if d <= 1.5 and r >= 5.0]
    targets = [
        Target("IDA: SVM+Approx test error within 1.5 points of our full SVM ((sigma, C) "
               "by test error, the paper's protocol)",
               ", ".join(f"{n} {d:+.2f}" for n, d in diffs.items()) + " points",
               "-", True if len(within) == n_sets else f"{len(within)} of {n_sets} sets"),
        Target("same, (sigma, C) chosen by validation inside the training sets (extra)",
               ", ".join(f"{n} {d:+.2f}" for n, d in vdiffs.items()) + " points",
               "-", True if len(vwithin) == n_sets else f"{len(vwithin)} of {n_sets} sets"),
        Target("IDA: >= 5x fewer support vectors with m = 0.1 n",
               ", ".join(f"{n} {r:.1f}x" for n, r in ratios.items()),
               "waveform 175 / 40 = 4.4x",
               True if len(five) == n_sets else f"{len(five)} of {n_sets} sets"),
        Target("same, with m = n_SV / 5 ((sigma, C) chosen by validation; supplementary row, "
               "not in the paper)",
               ", ".join(f"{n} {r:.2f}x at {d:+.2f} points" for n, (d, r) in sup.items()),
               "-", True if len(sup_ok) == n_sets else f"{len(sup_ok)} of {n_sets} sets"),
    ]
    return Result("ida-franc", "Franc & Hlaváč Table 2: IDA benchmarks", "\n".join(lines),
                  notes=notes, targets=targets,
                  data={"diff_points": diffs, "sv_ratio": ratios, "cells": cells,
                        "diff_points_validation": vdiffs,
                        "chosen_validation": {n: {m: list(v) for m, v in c.items()}
                                              for n, c in vchosen.items()}})
