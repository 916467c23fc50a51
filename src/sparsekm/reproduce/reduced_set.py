"""USPS reduced-set reproductions: Table 1 of *Fast approximation of support vector
kernel expansions* and Tables II-IV of *Input space vs. feature space*.

Baseline: ten one-vs-rest ``SVC(C=10, gamma=1/128)`` on the raw USPS data
(``k = exp(-||x - y||^2 / 128)``, the papers' kernel). Our SVMs keep about 504
SVs per classifier against the papers' 254, so rows are compared both at equal
``n`` and at equal *reduction factor* (#SV / n). Every RS system is evaluated with
three thresholds: the SVM's ``b`` kept, the per-classifier training-error optimal
``b~`` (what the papers do) and a jointly re-fitted ``b~`` for the 10-class argmax.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC

from ..expansion import KernelExpansion
from ..reduced_set import (
    construct,
    optimal_coefficients,
    refine,
    refit_intercept,
    select_backward,
    select_kpca,
    select_l1,
    select_l1_multi,
)
from . import Result, register

GAMMA = 1.0 / 128.0
C = 10.0


def _load(ctx):
    from ..datasets import load_usps

    Xtr, ytr, Xte, yte = load_usps(path=ctx.data_path)
    if ctx.quick:
        rng = np.random.default_rng(ctx.seed)
        tr = np.sort(rng.choice(Xtr.shape[0], 2000, replace=False))
        te = np.sort(rng.choice(Xte.shape[0], 1000, replace=False))
        Xtr, ytr, Xte, yte = Xtr[tr], ytr[tr], Xte[te], yte[te]
    return Xtr, ytr, Xte, yte


def usps_svm(Xtr, ytr):
    """The baseline: ten one-vs-rest SVC(C=10, gamma=1/128) and their expansion."""
    ovr = OneVsRestClassifier(SVC(C=C, gamma=GAMMA)).fit(Xtr, ytr)
    return ovr, KernelExpansion.from_estimator(ovr)


def _err(expansion, X, y):
    return 100.0 * float(np.mean(np.argmax(expansion.decision_function(X), axis=1) != y))


def _binary_errors(expansion, X, y):
    F = expansion.decision_function(X)
    return [int(np.count_nonzero((F[:, k] > 0) != (y == k))) for k in range(F.shape[1])]


def _thresholds(expansion, Xtr, ytr, Xte, yte):
    """Test errors with b kept / per-classifier b~ / joint b~."""
    per = refit_intercept(expansion, Xtr, ytr)
    joint = refit_intercept(expansion, Xtr, ytr, method="joint")
    return {"keep": _err(expansion, Xte, yte), "per": _err(per, Xte, yte),
            "joint": _err(joint, Xte, yte), "per_expansion": per, "keep_expansion": expansion}


def _blocks_to_expansion(E, blocks):
    """Multi-output expansion from per-classifier (Z, beta) blocks (block-diagonal)."""
    Z = np.vstack([b[0] for b in blocks])
    coef = np.zeros((Z.shape[0], len(blocks)))
    start = 0
    for k, (Zk, bk) in enumerate(blocks):
        coef[start:start + Zk.shape[0], k] = bk
        start += Zk.shape[0]
    return KernelExpansion(Z, coef, E.kernel, E.intercept)


def _prefix_blocks(E, R, n_max, n):
    """RS-n from an RS-n_max run: the first n vectors of each classifier, beta by Prop. 8."""
    blocks = []
    for k in range(E.n_outputs):
        Zk = np.asarray(R.vectors[k * n_max:k * n_max + n])
        blocks.append((Zk, optimal_coefficients(E.output(k).compress(), Zk)))
    return blocks


def _refine_blocks(E, blocks, max_iter=300):
    """Phase 2 for each classifier's (Z, beta) block; returns the blocks and the time."""
    t0 = time.perf_counter()
    out = []
    for k, (Zk, bk) in enumerate(blocks):
        res = refine(E.output(k).compress(), KernelExpansion(Zk, bk, E.kernel), max_iter=max_iter)
        out.append((np.asarray(res.expansion.vectors), np.asarray(res.expansion.coef)))
    return out, time.perf_counter() - t0


def _rel_obj(E, blocks):
    vals = []
    for k, (Zk, bk) in enumerate(blocks):
        ek = E.output(k).compress()
        vals.append(ek.distance2(KernelExpansion(Zk, bk, E.kernel)) / ek.norm2())
    return float(np.mean(vals))


def _fmt_row(name, n_avg, n_sv, r, paper, rel=None):
    factor = n_sv / n_avg if n_avg else float("nan")
    rel_s = f"{rel:.3f}" if rel is not None else "-"
    return (f"| {name} | {n_avg:g} | {factor:.1f}x | {r['keep']:.2f}% | {r['per']:.2f}% | "
            f"{r['joint']:.2f}% | {paper} | {rel_s} |")


_HEADER = ("| system | vectors / classifier | reduction | ours, b kept | ours, b~ per classifier "
           "| ours, b~ joint | paper | rel. ||Psi-Psi'||^2 |\n|---|---|---|---|---|---|---|---|")


def _baseline_row(E, ovr, Xte, yte):
    n_sv = float(np.mean([est.support_vectors_.shape[0] for est in ovr.estimators_]))
    err = _err(E, Xte, yte)
    return n_sv, f"| SV (baseline) | {n_sv:.1f} | 1x | {err:.2f}% | - | - | 4.4% (254 SVs) | 0 |"


# -- Table IV / Table 1 ------------------------------------------------------------------
PAPER_RS = {10: "7.1%", 15: "6.4%", 20: "5.6%", 25: "5.1%", 50: "5.0%", 100: "4.8%",
            150: "4.7%", 200: "-", 250: "4.6%"}


@register("usps-rs-construct", "USPS RS construction RS-10..100, RS2-25/50/100 (Table 1 / IV, "
          "Fig. 11)", slow=True)
def run_construct(ctx):
    from ..plotting import image_grid

    Xtr, ytr, Xte, yte = _load(ctx)
    ovr, E = usps_svm(Xtr, ytr)
    n_sv, base = _baseline_row(E, ovr, Xte, yte)
    sizes = [10, 20, 25, 50] if ctx.quick else [10, 15, 20, 25, 50, 100]
    n_max = max(sizes)
    t0 = time.perf_counter()
    res = construct(E, n_max, shared=False, random_state=ctx.seed, progress=ctx.progress)
    t_max = time.perf_counter() - t0
    rows, notes, keep = [base], [], {}
    for n in sizes:
        blocks = _prefix_blocks(E, res.expansion, n_max, n)
        R = _blocks_to_expansion(E, blocks)
        r = _thresholds(R, Xtr, ytr, Xte, yte)
        keep[n] = (blocks, r)
        rows.append(_fmt_row(f"RS-{n}", n, n_sv, r, PAPER_RS.get(n, "-"), _rel_obj(E, blocks)))
    # Phase 2 on RS-25, RS-50 and RS-100 (Burges' global gradient descent).
    for n, paper in ((25, "4.7%"), (50, "-"), (100, "-")):
        if n not in keep:
            continue
        blocks, t_ref = _refine_blocks(E, keep[n][0])
        r = _thresholds(_blocks_to_expansion(E, blocks), Xtr, ytr, Xte, yte)
        rows.append(_fmt_row(f"RS2-{n}", n, n_sv, r, paper, _rel_obj(E, blocks)))
        notes.append(f"RS2-{n}: phase 2 (300 L-BFGS iterations per classifier) took {t_ref:.0f} s.")
    # Not in the papers: the orthogonal step (construct(..., step="orthogonal")).
    t1 = time.perf_counter()
    res_o = construct(E, n_max, shared=False, step="orthogonal", random_state=ctx.seed)
    t_o = time.perf_counter() - t1
    for n in (25, 50, 100):
        if n not in sizes:
            continue
        blocks = _prefix_blocks(E, res_o.expansion, n_max, n)
        r = _thresholds(_blocks_to_expansion(E, blocks), Xtr, ytr, Xte, yte)
        rows.append(_fmt_row(f"RS-{n}, orthogonal step", n, n_sv, r, "-", _rel_obj(E, blocks)))
        if n == 50:
            blocks, _ = _refine_blocks(E, blocks)
            r = _thresholds(_blocks_to_expansion(E, blocks), Xtr, ytr, Xte, yte)
            rows.append(_fmt_row(f"RS2-{n}, orthogonal step", n, n_sv, r, "-",
                                 _rel_obj(E, blocks)))
    notes.append(f"Orthogonal step (construct(..., step='orthogonal'), not in the papers): each "
                 "z maximises the exact Proposition-8 decrease; phase 1 up to "
                 f"RS-{n_max} for all ten classifiers took {t_o:.0f} s.")
    # Not in the papers: backfitting sweeps after phase 1 (construct(..., n_sweeps=k)).
    if not ctx.quick:
        for n, k, step in ((25, 1, "one-term"), (25, 3, "one-term"), (50, 3, "one-term"),
                           (25, 3, "orthogonal"), (50, 3, "orthogonal")):
            t1 = time.perf_counter()
            rs = construct(E, n, shared=False, n_sweeps=k, step=step, random_state=ctx.seed)
            t_sw = time.perf_counter() - t1
            R = rs.expansion
            r = _thresholds(R, Xtr, ytr, Xte, yte)
            name = f"RS-{n} + {k} sweep{'s' if k > 1 else ''}"
            name += ", orthogonal step" if step == "orthogonal" else ""
            rows.append(_fmt_row(name, n, n_sv, r, "-", float(np.mean(rs.relative_objective))))
            notes.append(f"{name}: phase 1 followed by backfitting sweeps (construct(..., "
                         f"n_sweeps={k}, step='{step}'), not in the papers); took {t_sw:.0f} s.")
    # Figure 11: the RS-20 vectors with their coefficients.
    figures = []
    if 20 in keep:
        blocks = keep[20][0]
        images = np.vstack([b[0] for b in blocks])
        titles = [f"{v:+.2f}" for b in blocks for v in b[1]]
        figures.append(image_grid(images, (16, 16), titles=titles, ncols=20,
                                  suptitle="RS-20 vectors of the ten one-vs-rest classifiers "
                                           "(rows: digits 0-9; titles: beta)",
                                  path=ctx.out_dir / "usps_rs20_vectors.png"))
    per_digit = _binary_errors(keep[25][1]["keep_expansion"], Xte, yte) if 25 in keep else None
    notes += [
        f"Baseline: ten one-vs-rest SVC(C=10, gamma=1/128), {n_sv:.1f} SVs per classifier on "
        f"average (paper: 254): our RS-25 is a {n_sv / 25:.0f}x reduction (paper: 10x); the "
        "paper's RS-25 corresponds to our RS-50 at equal reduction factor.",
        f"Phase 1 for all ten classifiers up to RS-{n_max} took {t_max:.0f} s; RS-n for smaller n "
        "is the first n vectors of that run (each classifier has its own random stream, so this "
        "is exactly what construct(E, n) returns), with beta re-fitted by Proposition 8.",
        "Thresholds: 'b kept' uses the SVM's intercepts; 'b~ per classifier' minimises each "
        "binary training error (the papers' choice); 'b~ joint' minimises the 10-class training "
        "error by coordinate descent over the ten thresholds.",
    ]
    if per_digit is not None:
        notes.append("RS-25 binary test errors per digit (b kept): "
                     + ", ".join(f"{d}: {e}" for d, e in enumerate(per_digit))
                     + " (paper: 21, 12, 38, 32, 31, 22, 12, 18, 33, 28).")
    if ctx.quick:
        notes.append("--quick: 2000 training / 1000 test samples; not comparable to the paper.")
    table = _HEADER + "\n" + "\n".join(rows)
    return Result("usps-rs-construct", "USPS reduced-set construction (Table 1 / Table IV)",
                  table, notes, figures)


# -- Table II: selection via kernel PCA ------------------------------------------------------
def _kpca_path(expansion, sizes):
    """Run the eq. 63-65 elimination once, recording the support at each requested size."""
    out = {}
    current = expansion
    for n in sorted(sizes, reverse=True):
        res = select_kpca(current, min(n, current.n_terms), refit=False)
        # Continue eliminating from the eq. 65 coefficients (as one long run would).
        current = res.expansion
        sel = res.expansion.vectors
        out[n] = (np.asarray(sel), optimal_coefficients(expansion, np.asarray(sel)))
    return out


@register("usps-rs-select-kpca", "USPS RS selection via kernel PCA, RSS-n (Table II)", slow=True)
def run_select_kpca(ctx):
    Xtr, ytr, Xte, yte = _load(ctx)
    ovr, E = usps_svm(Xtr, ytr)
    n_sv, base = _baseline_row(E, ovr, Xte, yte)
    paper = {75: "7.0%", 100: "5.5%", 125: "4.5%"}
    sizes = [250, 200, 150, 125, 100, 75] if not ctx.quick else [100, 50]
    t0 = time.perf_counter()
    paths = [_kpca_path(E.output(k).compress(), sizes) for k in range(E.n_outputs)]
    secs = time.perf_counter() - t0
    rows = [base]
    for n in sizes:
        blocks = [p[n] for p in paths]
        R = _blocks_to_expansion(E, blocks)
        r = _thresholds(R, Xtr, ytr, Xte, yte)
        rows.append(_fmt_row(f"RSS-{n}", n, n_sv, r, paper.get(n, "-"), _rel_obj(E, blocks)))
    # The exact greedy step (eq. 63 with Proposition 8 re-fits), via the inverse Gram matrix.
    t1 = time.perf_counter()
    back = []
    for k in range(E.n_outputs):
        cur, out = E.output(k).compress(), {}
        for n in sorted(sizes, reverse=True):
            # Continuing from the re-fitted expansion is exact: Psi - Psi' is orthogonal
            # to the span of the kept vectors (Pythagoras).
            cur = select_backward(cur, min(n, cur.n_terms)).expansion
            out[n] = (np.asarray(cur.vectors), np.asarray(cur.coef))
        back.append(out)
    secs_back = time.perf_counter() - t1
    for n in sizes:
        blocks = [p[n] for p in back]
        R = _blocks_to_expansion(E, blocks)
        r = _thresholds(R, Xtr, ytr, Xte, yte)
        rows.append(_fmt_row(f"RSS-{n} (exact greedy)", n, n_sv, r, paper.get(n, "-"),
                             _rel_obj(E, blocks)))
    notes = [
        "'exact greedy' rows: select_backward, the optimal greedy elimination the paper "
        "describes after eq. 64 (remove the vector whose removal, with Proposition 8 re-fits, "
        "costs least: beta_n^2 / [K^-1]_nn), computed with a down-dated inverse Gram matrix; "
        f"ten classifiers, all sizes: {secs_back:.0f} s.",
        f"Eq. 63-65: one vector removed per step using all eigenvectors of the remaining Gram "
        f"matrix, coefficients updated by eq. 65 and re-fitted by Proposition 8 at each reported "
        f"size. Ten classifiers took {secs:.0f} s.",
        "Equal reduction factors: the paper's RSS-75/100/125 of 254 SVs (3.4x/2.5x/2.0x) "
        "correspond to our RSS-150/200/250 of ~504.",
    ]
    return Result("usps-rs-select-kpca", "USPS RS selection via kernel PCA (Table II)",
                  _HEADER + "\n" + "\n".join(rows), notes)


# -- Table III: L1 selection -------------------------------------------------------------------
@register("usps-rs-select-l1", "USPS RS selection by L1 (Table III) and the multi-class "
          "l1/linf variant (eq. 70-73)", slow=True)
def run_select_l1(ctx):
    Xtr, ytr, Xte, yte = _load(ctx)
    ovr, E = usps_svm(Xtr, ytr)
    n_sv, base = _baseline_row(E, ovr, Xte, yte)
    paper = {101: "5.9%", 151: "4.5%"}
    sizes = [101, 151, 200, 300] if not ctx.quick else [50, 100]
    rows = [base]
    t0 = time.perf_counter()
    for n in sizes:
        blocks = []
        for k in range(E.n_outputs):
            res = select_l1(E.output(k).compress(), n_vectors=n, c="inverse")
            blocks.append((np.asarray(res.expansion.vectors), np.asarray(res.expansion.coef)))
        n_avg = float(np.mean([b[0].shape[0] for b in blocks]))
        R = _blocks_to_expansion(E, blocks)
        r = _thresholds(R, Xtr, ytr, Xte, yte)
        rows.append(_fmt_row(f"RSS2-{n} (target)", round(n_avg, 1), n_sv, r, paper.get(n, "-"),
                             _rel_obj(E, blocks)))
    secs_single = time.perf_counter() - t0
    # Multi-class: one shared selection, l1/linf penalty (eq. 70-73).
    Ec = E.compress()
    lams = [3.0, 1.0] if not ctx.quick else [3.0]
    B0 = None
    multi_rows = []
    t1 = time.perf_counter()
    for lam in lams:
        res = select_l1_multi(Ec, lam, c="inverse", B0=B0, max_iter=1000, tol=1e-6)
        B0 = res.info["B_l1"]
        r = _thresholds(res.expansion, Xtr, ytr, Xte, yte)
        n_sh = res.expansion.n_terms
        multi_rows.append(
            f"| RSS-multi lam={lam:g} | {n_sh} shared | {Ec.n_terms / n_sh:.1f}x (of {Ec.n_terms} "
            f"distinct SVs) | {r['keep']:.2f}% | {r['per']:.2f}% | {r['joint']:.2f}% | "
            f"~570 shared -> 5.5% | {float(np.mean(res.relative_objective)):.3f} |")
    secs_multi = time.perf_counter() - t1
    notes = [
        "Eq. 66-69 with c_i = mean|alpha| / |alpha_i| (RSS2), solved as a weighted Lasso "
        "(coordinate descent on K = R^T R); lambda walked down a log grid to the largest support "
        "not exceeding the target; the kept coefficients re-fitted by Proposition 8. "
        f"Ten classifiers x {len(sizes)} sizes took {secs_single:.0f} s.",
        "Equal reduction factors: the paper's RSS2-101/151 of 254 SVs (2.5x/1.7x) correspond to "
        "our ~200/300 of ~504.",
        "Multi-class rows: eq. 70-73 (l1/linf penalty: a vector used by one classifier is free "
        "for the others), FISTA with the exact l_inf prox, warm-started along lambda; vector "
        f"counts are for all ten classifiers together. Took {secs_multi:.0f} s.",
    ]
    table = _HEADER + "\n" + "\n".join(rows + multi_rows)
    return Result("usps-rs-select-l1", "USPS RS selection by L1 (Table III, eq. 70-73)", table,
                  notes)


# -- Section 5: shared vectors ---------------------------------------------------------------------
@register("usps-rs-shared", "USPS simultaneous RS approximation with one shared set (section 5, "
          "eq. 18-19)", slow=True)
def run_shared(ctx):
    Xtr, ytr, Xte, yte = _load(ctx)
    ovr, E = usps_svm(Xtr, ytr)
    n_sv, base = _baseline_row(E, ovr, Xte, yte)
    Ec = E.compress()
    sizes = [50, 100, 150, 250] if not ctx.quick else [50, 100]
    n_max = max(sizes)
    t0 = time.perf_counter()
    res = construct(Ec, n_max, shared=True, random_state=ctx.seed, progress=ctx.progress)
    secs = time.perf_counter() - t0
    rows = ["| system | shared vectors (total) | kernel evals / sample vs separate RS-n | ours, b "
            "kept | ours, b~ per classifier | ours, b~ joint | rel. sum ||Psi-Psi'||^2 |",
            "|---|---|---|---|---|---|---|",
            f"| SV (baseline) | {Ec.n_terms} distinct SVs | - | {_err(E, Xte, yte):.2f}% | - | - | 0 |"]
    norm2 = Ec.norm2()
    for n in sizes:
        Z = np.asarray(res.expansion.vectors[:n])
        B = optimal_coefficients(Ec, Z)
        R = KernelExpansion(Z, B, E.kernel, E.intercept)
        r = _thresholds(R, Xtr, ytr, Xte, yte)
        rel = float(np.sum(Ec.distance2(R)) / np.sum(norm2))
        rows.append(f"| RS-shared-{n} | {n} | = separate RS-{n // 10} | {r['keep']:.2f}% | "
                    f"{r['per']:.2f}% | {r['joint']:.2f}% | {rel:.3f} |")
    # Phase 2 on the shared set of 250 (all ten outputs jointly).
    notes = [
        "One first layer for all ten classifiers (eq. 18-19: each new z maximises "
        "sum_k (Psi_k . Phi(z))^2 / k(z, z), fixed-point iteration), each classifier keeping its "
        f"own beta (Proposition 8). Phase 1 up to {n_max} shared vectors took {secs:.0f} s; "
        "smaller sets are prefixes of that run.",
        "The paper proposes this but reports no number. Compare with usps-rs-construct at equal "
        "kernel evaluations per sample: shared-250 against separate RS-25 (10 x 25).",
    ]
    return Result("usps-rs-shared", "USPS simultaneous approximation with shared vectors "
                  "(section 5)", "\n".join(rows), notes)
