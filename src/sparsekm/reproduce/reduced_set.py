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

import json
import time
from pathlib import Path

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
from . import Result, Section, Target, published_cell, register


def _benchmark_targets():
    """Targets measured by ``benchmarks/bench_reduce.py`` (source checkout only)."""
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "reduce.json"
    if not path.exists():
        return [Target("RS-25 for ten classifiers < 2 min; >= 50x faster than sklearn",
                       "run `python benchmarks/bench_reduce.py`", "-", None)]
    b = json.loads(path.read_text())
    rs, rs2 = b["construct"]["RS-25"], b["construct"]["RS2-25"]
    # The papers' protocol: the threshold re-computed on the training set (not b kept).
    err = b["test_error_percent"]["RS2-25"]["b_refit_per_classifier"]
    speed = b["speedup_vs_sklearn_full"]
    load = b.get("machine", {}).get("load_average_1_5_15_min")
    where = f" at load {load[0]:.1f}" if load else ""
    return [
        Target("RS-25 for ten classifiers < 2 min (`bench_reduce.py`)",
               f"{rs['wall_seconds']:.1f} s wall ({rs['cpu_seconds']:.1f} s CPU){where}; "
               f"{rs2['wall_seconds']:.0f} s with phase 2", "-",
               rs["wall_seconds"] < 120),
        Target(">= 50x faster than sklearn's full OvR at <= 5.3 % (`bench_reduce.py`)",
               f"{speed:.0f}x (RS2-25, {err:.2f} % with b~ re-computed on the training set)", "-",
               speed >= 50 and err <= 5.3),
    ]


def _threshold_summary(records):
    """The "threshold choice" paragraph, from the (system, b kept, b~ per) rows."""
    rows = [r for rec in records.values() for r in rec.data.get("thresholds", [])
            if r[1] < 8.0]
    if not rows:
        return ""
    keep_better = sum(r[1] < r[2] - 1e-9 for r in rows)
    per_better = sum(r[2] < r[1] - 1e-9 for r in rows)
    d_per = float(np.mean([r[2] - r[1] for r in rows]))
    return (
        "**Threshold choice.** Every \"ours\" number in the tables above uses the papers' "
        "protocol: the threshold `b~` of each binary classifier re-computed on the training set "
        "(\"In all RS systems, the optimal SV threshold was re-computed on the training set\"; "
        "`refit_intercept`). The column \"b kept\" (the SVM's own `b`) is shown for "
        f"information only and chooses nothing: over the {len(rows)} reduced systems with an "
        f"error below 8 %, keeping `b` would have given a lower test error in {keep_better} and "
        f"a higher one in {per_better} (mean {d_per:+.2f} points for `b~` against `b` kept). "
        "Choosing it for that reason would be a choice made on the test set, so it is not used.")


def _sv_summary(records):
    """One place for the SV-count difference and the (C, gamma) grid tried on training data."""
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "usps_sv_grid.json"
    lines = ["**SV counts: ours against the papers'.** Our one-vs-rest SVMs "
             "(`SVC(C=10, gamma=1/128)`, the papers' kernel and C) keep 504.5 SVs per classifier "
             "on average against the papers' 254; the 3-vs-8 SVM of `usps-3-vs-8` keeps 237 "
             "against the paper's 116 (Wu et al. 2006, section 5.7). The papers' SVMs (1998-99 "
             "SV software, possibly other preprocessing and stopping rules) are not available. "
             "So every table above compares at equal n (the papers' rows) and, where it can, at "
             "equal reduction factor #SV / n (our n = the paper's n x 504.5 / 254)."]
    if path.exists():
        grid = json.loads(path.read_text())
        rows = grid.get("rows", [])
        lines += ["", "(C, gamma) grid tried to get closer to 254 SVs per classifier, training "
                  f"data only (`python benchmarks/{grid.get('script', 'bench_usps_sv_grid.py')}`;"
                  " mean #SV of the ten one-vs-rest SVMs, how many of them sit at the bound C, "
                  "and the 10-class training error; no test data):", "",
                  "| C | gamma | mean #SV per classifier | at the bound | training error |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['C']:g} | 1/{1 / r['gamma']:.0f} | {r['mean_n_sv']:.1f} | "
                  f"{r['mean_n_bound_sv']:.1f} | {r['training_error_percent']:.2f} % |"
                  for r in rows]
        if grid.get("conclusion"):
            lines += ["", grid["conclusion"]]
    else:
        lines += ["", "(Run `python benchmarks/bench_usps_sv_grid.py` for the (C, gamma) grid "
                  "tried on the training data.)"]
    return "\n".join(lines)


def _table_notes(records):
    """Scoreboard evidence for the USPS tables' much worse cells, from the records' cells."""
    cells = {(c["table"], c["cell"]): c for rec in records.values()
             for c in rec.data.get("cells", []) if isinstance(c, dict)}
    nsv = cells.get((T1998, "#SVs mean"))
    if nsv is None or nsv.get("ours") is None:
        return {}
    ours, paper = float(nsv["ours"]), float(nsv["paper"])
    d1 = cells.get((T1998, "#SVs digit 1"))
    text = (f"Our ten one-vs-rest SVMs (the papers' C = 10 and kernel) keep {ours:.1f} SVs per "
            f"classifier against the papers' {paper:g} ({ours / paper:.1f}x; see \"SV counts\" "
            f"below), and their binary test errors differ per digit already for the full SVM, so "
            f"at the paper's n our reduction factor #SV / n is {ours / paper:.1f}x larger")
    rs50, rs25 = cells.get((T1998, "RS-50 10-class %")), cells.get((T1998, "RS-25 10-class %"))
    if rs50 and rs25 and rs50.get("ours") is not None:
        text += (f" (RS-50, our {ours / 50:.1f}x: {rs50['ours']:.2f} % against the paper's "
                 f"RS-25 at {paper / 25:.1f}x: {rs25['paper']} %)")
    text += "."
    if d1 and d1.get("ours") is not None:
        text += (f" Digit 1 (our {d1['ours']} SVs, the paper's {d1['paper']}) has the fewest "
                 "errors, so a few errors more are a large relative excess.")
    return {T1998: text, T2: text, T3: text, T4: text}


def _outro(records):
    return "\n\n".join(t for t in (_sv_summary(records), _threshold_summary(records)) if t)


SECTION = Section(
    title="Reduced-set methods (issue 4)",
    order=4,
    intro="""\
*Fast approximation of support vector kernel expansions* (Schölkopf et al., DAGM 1998) and
*Input space vs. feature space in kernel-based methods* (IEEE TNN 1999), section V. Setting
(all four reproductions): USPS, 7291 training / 2007 test digits in [-1, 1], ten
one-vs-rest `SVC(C=10, gamma=1/128)` (`k = exp(-||x - y||^2 / 128)`, the papers' kernel).
Every "ours" cell follows the papers' protocol: the threshold of each binary classifier is
re-computed on the training set (`refit_intercept`); nothing is chosen on the test set. Each
cell shows ours / the paper's value: per-digit cells are numbers of binary test errors of the
one-vs-rest classifier, the last column the 10-class test error. Our SVMs keep about 504 SVs
per classifier (2640 distinct) against the papers' 254 (see "SV counts" below), so the
tables also give our error at equal *reduction factor* (#SV / n).""",
    outro=_outro,
    targets=_benchmark_targets,
    table_notes=_table_notes,
)

GAMMA = 1.0 / 128.0
C = 10.0
#: The papers' mean number of SVs per classifier (Table 1 / Table II).
PAPER_N_SV = 254

# The papers' tables: ten per-digit numbers of binary test errors, then the 10-class
# test error in %. Table 1 of the 1998 paper and Table IV of the 1999 paper hold the same
# rows (Table IV adds RSC-200); "#SVs" differs in digit 1 (92 vs 91).
PAPER_NSV_T1 = (219, 92, 316, 309, 288, 340, 213, 206, 304, 250, 254)
PAPER_NSV_T2 = (219, 91, 316, 309, 288, 340, 213, 206, 304, 250, 254)
PAPER_SV = (16, 13, 30, 17, 32, 22, 11, 12, 26, 17, 4.4)
PAPER_RS = {
    10: (26, 13, 45, 49, 35, 54, 22, 24, 39, 24, 7.1),
    15: (17, 16, 43, 50, 49, 37, 14, 18, 45, 35, 6.4),
    20: (27, 11, 38, 30, 35, 43, 12, 16, 30, 25, 5.6),
    25: (21, 12, 38, 32, 31, 22, 12, 18, 33, 28, 5.1),
    50: (18, 10, 33, 28, 32, 23, 12, 15, 35, 27, 5.0),
    100: (14, 13, 26, 22, 30, 26, 11, 14, 28, 23, 4.8),
    150: (13, 14, 28, 32, 27, 24, 12, 14, 29, 26, 4.7),
    200: (14, 13, 28, 28, 29, 24, 10, 15, 26, 26, 4.9),  # Table IV only
    250: (12, 13, 26, 26, 32, 25, 11, 14, 26, 24, 4.6),
}
PAPER_RS2 = (14, 14, 31, 22, 30, 23, 11, 14, 26, 17, 4.7)      # RS2-25 / RSC2-25
PAPER_RS2_GD = (16, 13, 32, 19, 31, 26, 11, 15, 25, 18, 5.0)   # RS2^old-25 / RSC2^gd-25
PAPER_RSS = {  # Table II (1999), kernel PCA selection
    10: (154, 262, 205, 162, 163, 161, 169, 96, 146, 177, 59.5),
    15: (171, 107, 200, 130, 153, 158, 173, 93, 143, 177, 47.7),
    20: (149, 82, 171, 111, 153, 160, 147, 116, 161, 177, 44.0),
    25: (120, 82, 143, 141, 188, 161, 143, 96, 152, 177, 45.0),
    50: (47, 18, 70, 52, 192, 95, 54, 38, 97, 157, 17.6),
    75: (23, 15, 36, 30, 65, 47, 21, 29, 56, 41, 7.0),
    100: (19, 15, 42, 22, 40, 29, 14, 18, 37, 27, 5.5),
    125: (15, 13, 29, 26, 32, 20, 15, 14, 32, 19, 4.5),
    150: (18, 12, 28, 21, 35, 32, 9, 15, 23, 14, 4.5),
    175: (17, 13, 28, 22, 31, 25, 12, 15, 23, 18, 4.5),
    200: (14, 13, 27, 25, 27, 26, 11, 13, 26, 21, 4.5),
    225: (15, 13, 26, 23, 30, 27, 11, 14, 25, 20, 4.2),
    250: (15, 13, 27, 24, 32, 28, 11, 14, 25, 18, 4.3),
}
PAPER_RSS2 = {  # Table III (1999), L1 selection with c_i = mean|alpha| / |alpha_i|: (lambda, row)
    30: (4.00, (319, 25, 198, 169, 161, 152, 116, 147, 95, 118, 51.5)),
    50: (3.34, (225, 24, 171, 146, 149, 124, 94, 147, 100, 101, 28.5)),
    74: (2.55, (113, 25, 100, 100, 120, 95, 40, 147, 83, 50, 10.8)),
    101: (1.73, (38, 21, 46, 64, 81, 54, 23, 143, 49, 37, 5.9)),
    126: (1.06, (21, 19, 35, 34, 47, 27, 15, 72, 41, 23, 5.3)),
    151: (0.62, (19, 20, 30, 24, 31, 30, 10, 27, 33, 18, 4.5)),
    174: (0.33, (16, 15, 24, 26, 31, 26, 10, 19, 30, 19, 4.3)),
    200: (0.13, (17, 15, 25, 27, 34, 27, 11, 14, 26, 22, 4.3)),
    224: (0.04, (16, 15, 26, 24, 32, 27, 11, 14, 28, 19, 4.3)),
    234: (0.02, (16, 14, 26, 24, 32, 28, 11, 14, 26, 19, 4.3)),
}
T1998 = "Schölkopf et al. 1998, Table 1"
T2 = "Schölkopf et al. 1999, Table II"
T3 = "Schölkopf et al. 1999, Table III"
T4 = "Schölkopf et al. 1999, Table IV"


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


def _binary_errors(F, y):
    return [int(np.count_nonzero((F[:, k] > 0) != (y == k))) for k in range(F.shape[1])]


def _evaluate(R, Xtr, ytr, Xte, yte, *, keep_b=False):
    """Test errors of a reduced system under the papers' protocol.

    The threshold of each one-vs-rest classifier is re-computed on the training set
    (``refit_intercept``, "b~"); ``per`` is the 10-class test error in %, ``digits``
    the ten binary test-error counts, both with ``b~``. ``keep`` (the SVM's own
    ``b``) is for information only. ``keep_b=True`` (the original SVM) uses its ``b``.
    """
    F = R.decision_function(Xte)
    if keep_b:
        Fp = F
    else:
        per = refit_intercept(R, Xtr, ytr)
        Fp = F + (np.asarray(per.intercept) - np.asarray(R.intercept))
    return {"per": 100.0 * float(np.mean(np.argmax(Fp, axis=1) != yte)),
            "keep": 100.0 * float(np.mean(np.argmax(F, axis=1) != yte)),
            "digits": _binary_errors(Fp, yte)}


def _blocks_to_expansion(E, blocks):
    """Multi-output expansion from per-classifier (Z, beta) blocks (block-diagonal)."""
    Z = np.vstack([b[0] for b in blocks])
    coef = np.zeros((Z.shape[0], len(blocks)))
    start = 0
    for k, (Zk, bk) in enumerate(blocks):
        coef[start:start + Zk.shape[0], k] = bk
        start += Zk.shape[0]
    return KernelExpansion(Z, coef, E.kernel, E.intercept)


def _phase1_uncapped(ek, n, seed):
    """Phase 1 of one classifier ``ek`` for ``n`` one-term steps, even when ``n >= N_SV``.

    :func:`~sparsekm.reduced_set.construct` returns an expansion with at most ``n``
    terms unchanged (an exact copy): its "RS-n" would be its SVs, and a prefix of it the
    first SVs, not constructed vectors. The papers' phase 1 (iterated one-term
    approximations of the residual, eq. 76-77) has no such stop: their digit 1 has 92 SVs
    and RS-100 ... RS-250 are constructions. Same solver and settings as ``construct``;
    the run stops early only when ``Psi`` is reproduced to rounding. Returns the vectors
    in construction order.
    """
    from threadpoolctl import threadpool_limits

    from ..reduced_set.construction import STEP_TOL, construct_block

    X = np.asarray(ek.vectors, dtype=np.float64)
    A = np.asarray(ek.coef, dtype=np.float64).reshape(-1, 1)
    with threadpool_limits(limits=1, user_api="blas"):
        Z = construct_block(ek.kernel, X, A, n, n_init=5, max_iter=200, tol_step=STEP_TOL,
                             tol=0.0, rng=np.random.default_rng(seed), Kxx=ek.kernel(X),
                             show_progress=False, desc="")[0]
    return np.asarray(Z)


def phase1_runs(E, n_max, seed, progress=False):
    """Phase 1 of every one-vs-rest classifier of ``E`` to ``n_max`` vectors.

    Returns one array per classifier: its constructed vectors in construction order, so
    that the first ``n`` rows are its RS-n (:func:`prefix_blocks`). A classifier with more
    than ``n_max`` SVs comes from ``construct(E, n_max, shared=False)`` (each classifier
    has its own random stream there, so its prefix is exactly ``construct(E, n)``'s
    block); one with ``N_SV <= n_max``, which ``construct`` would return unreduced, gets
    its own run of ``n_max`` one-term steps (:func:`_phase1_uncapped`, seed
    ``(seed, k)``), so every size is a construction and never a subset of its SVs.
    """
    res = construct(E, n_max, shared=False, random_state=seed, progress=progress)
    runs = _runs_of(E, res.expansion)
    for k in range(E.n_outputs):
        ek = E.output(k).merge_duplicates()
        if ek.n_terms <= n_max:
            runs[k] = _phase1_uncapped(ek, n_max, (seed, k))
    return runs


def _runs_of(E, R):
    """The per-classifier vector blocks of a block-diagonal ``construct(..., shared=False)``
    result (each classifier's rows found from its coefficient column)."""
    coef = np.asarray(R.coef)
    runs = []
    for k in range(E.n_outputs):
        rows = np.flatnonzero(coef[:, k] != 0)
        runs.append(np.asarray(R.vectors[int(rows[0]):int(rows[-1]) + 1]))
    return runs


def prefix_blocks(E, runs, n):
    """RS-n from :func:`phase1_runs`: the first n vectors of each run, beta by Prop. 8."""
    blocks = []
    for k, Zrun in enumerate(runs):
        Zk = Zrun[:n]
        blocks.append((Zk, optimal_coefficients(E.output(k).merge_duplicates(), Zk)))
    return blocks


def _refine_blocks(E, blocks, max_iter=300):
    """Phase 2 for each classifier's (Z, beta) block; returns the blocks and the time."""
    t0 = time.perf_counter()
    out = []
    for k, (Zk, bk) in enumerate(blocks):
        res = refine(E.output(k).merge_duplicates(), KernelExpansion(Zk, bk, E.kernel), max_iter=max_iter)
        out.append((np.asarray(res.expansion.vectors), np.asarray(res.expansion.coef)))
    return out, time.perf_counter() - t0


def _traditional_blocks(E, n, seed, max_iter=300):
    """The traditional RS method (Burges 1996) as a baseline: n SVs of each classifier,
    drawn at random, as starting vectors, beta by Proposition 8, then the global gradient
    descent in all (z, beta) (phase 2). One start per classifier (Burges restarts)."""
    rng = np.random.default_rng(seed)
    blocks = []
    for k in range(E.n_outputs):
        ek = E.output(k).merge_duplicates()
        idx = np.sort(rng.choice(ek.n_terms, min(n, ek.n_terms), replace=False))
        Zk = np.asarray(ek.vectors)[idx]
        blocks.append((Zk, optimal_coefficients(ek, Zk)))
    return _refine_blocks(E, blocks, max_iter)


def _rel_obj(E, blocks):
    vals = []
    for k, (Zk, bk) in enumerate(blocks):
        ek = E.output(k).merge_duplicates()
        vals.append(ek.distance2(KernelExpansion(Zk, bk, E.kernel)) / ek.norm2())
    return float(np.mean(vals))


def _n_sv(ovr):
    return [int(est.support_vectors_.shape[0]) for est in ovr.estimators_]


def _header(first="system"):
    digits = " | ".join(str(d) for d in range(10))
    return (f"| {first} | n / classifier | reduction | {digits} | 10-class | b kept (info) | "
            "rel. ‖Ψ−Ψ'‖² |\n|---|---|---|" + "---|" * 10 + "---|---|---|")


def _row(name, n_avg, n_sv, ev, paper=None, rel=None, *, cells=None, tables=(), thr=None):
    """One table row "ours / paper" per cell; registers the published cells."""
    digits = [f"{o} / {p}" if paper is not None else f"{o}"
              for o, p in zip(ev["digits"], paper or [None] * 10, strict=False)]
    ten = f"{ev['per']:.2f}%" + (f" / {paper[10]}%" if paper is not None else "")
    if thr is not None:
        thr.append((name, float(ev["keep"]), float(ev["per"])))
    if cells is not None and paper is not None:
        for table in tables:
            cells += [published_cell(table, f"{name} digit {d}", ev["digits"][d], paper[d])
                      for d in range(10)]
            cells.append(published_cell(table, f"{name} 10-class %", round(ev["per"], 2),
                                        paper[10]))
    factor = n_sv / n_avg if n_avg else float("nan")
    rel_s = f"{rel:.3f}" if rel is not None else "-"
    n_txt = f"{n_avg:.1f}" if n_avg != int(n_avg) else f"{int(n_avg)}"
    return (f"| {name} | {n_txt} | {factor:.1f}x | " + " | ".join(digits)
            + f" | {ten} | {ev['keep']:.2f}% | {rel_s} |")


def _baseline_rows(E, ovr, Xte, yte, nsv_paper, *, cells=None, tables=(), sv_tables=()):
    """#SV row and the original SVM's row (its own b), ours / paper."""
    nsv = _n_sv(ovr)
    n_sv = float(np.mean(nsv))
    ev = _evaluate(E, None, None, Xte, yte, keep_b=True)
    sv_row = ("| #SVs | - | - | " + " | ".join(f"{o} / {p}" for o, p in zip(nsv, nsv_paper,
                                                                            strict=False))
              + f" | {n_sv:.1f} / {nsv_paper[10]} (mean) | - | - |")
    if cells is not None:
        for table in sv_tables:
            cells += [published_cell(table, f"#SVs digit {d}", nsv[d], nsv_paper[d])
                      for d in range(10)]
            cells.append(published_cell(table, "#SVs mean", round(n_sv, 1), nsv_paper[10]))
    row = _row("SV (original SVM; paper SV-254)", n_sv, n_sv, ev, PAPER_SV, 0.0, cells=cells,
               tables=tables)
    return n_sv, [sv_row, row]


def _not_run(cells, tables, name, paper, reason="not in this run (--quick)"):
    """Published cells of a row this run does not compute."""
    for table in tables:
        cells += [published_cell(table, f"{name} digit {d}", None, paper[d], reason)
                  for d in range(10)]
        cells.append(published_cell(table, f"{name} 10-class %", None, paper[10], reason))


def _eq_factor(n, n_sv):
    """Our n at the paper's reduction factor 254 / n."""
    return int(round(n * n_sv / PAPER_N_SV))


def _pairs_table(pairs):
    """Equal n beside equal reduction factor: (label, paper %, (n, ours %), (n', ours %))."""
    lines = ["| paper system (reduction) | paper 10-class | ours at equal n | ours at equal "
             "reduction factor |", "|---|---|---|---|"]
    for label, paper, eq_n, eq_f in pairs:
        a = f"{eq_n[1]:.2f}% (n = {eq_n[0]})" if eq_n is not None else "-"
        b = f"{eq_f[1]:.2f}% (n = {eq_f[0]})" if eq_f is not None else "- (not run)"
        lines.append(f"| {label} | {paper}% | {a} | {b} |")
    return "\n".join(lines)


def _lower_is_better_choice(options):
    """The option with the lowest training objective (rel. ||Psi - Psi'||^2): no test data."""
    return min(options, key=lambda o: o[1])


# -- Table 1 (1998) / Table IV (1999) ----------------------------------------------------
@register("usps-rs-construct", "USPS RS construction RS-10..250, RS2-25, traditional RS2-25 "
          "(1998 Table 1 / 1999 Table IV, Fig. 11)", slow=True)
def run_construct(ctx):
    from ..plotting import error_vs_n_vectors, image_grid

    Xtr, ytr, Xte, yte = _load(ctx)
    ovr, E = usps_svm(Xtr, ytr)
    cells, thr, notes = [], [], []
    n_sv, base = _baseline_rows(E, ovr, Xte, yte, PAPER_NSV_T1, cells=cells,
                                tables=(T1998, T4), sv_tables=(T1998,))
    paper_ns = [10, 20, 25, 50] if ctx.quick else [10, 15, 20, 25, 50, 100, 150, 200, 250]
    eq_limit = 60 if ctx.quick else 250  # phase 1 runs to n_max: equal factors up to it
    eq_ns = {n: _eq_factor(n, n_sv) for n in paper_ns if _eq_factor(n, n_sv) <= eq_limit}
    n_max = max(paper_ns + list(eq_ns.values()))
    t0 = time.perf_counter()
    runs = phase1_runs(E, n_max, ctx.seed, progress=ctx.progress)
    t_max = time.perf_counter() - t0
    few = [k for k, n_k in enumerate(_n_sv(ovr)) if n_k <= n_max]
    rows, ev, rel, blocks_of = list(base), {}, {}, {}
    for n in sorted(set(paper_ns) | set(eq_ns.values())):
        blocks = prefix_blocks(E, runs, n)
        R = _blocks_to_expansion(E, blocks)
        ev[n], rel[n], blocks_of[n] = _evaluate(R, Xtr, ytr, Xte, yte), _rel_obj(E, blocks), blocks
    for n in PAPER_RS:
        tables = (T4,) if n == 200 else (T1998, T4)
        if n not in paper_ns:
            _not_run(cells, tables, f"RS-{n}", PAPER_RS[n])
            continue
        rows.append(_row(f"RS-{n}", n, n_sv, ev[n], PAPER_RS[n], rel[n], cells=cells,
                         tables=tables, thr=thr))
    # Phase 2 (RS2-25) and the traditional RS method (RS2^gd-25), at the paper's n.
    n2 = 25 if 25 in ev else paper_ns[0]
    ev2, rel2, t_ref = {}, {}, {}
    for n in sorted({n2, eq_ns.get(n2, n2)}):
        blocks, t_ref[n] = _refine_blocks(E, blocks_of[n])
        ev2[n] = _evaluate(_blocks_to_expansion(E, blocks), Xtr, ytr, Xte, yte)
        rel2[n] = _rel_obj(E, blocks)
    rows.append(_row(f"RS2-{n2}", n2, n_sv, ev2[n2], PAPER_RS2, rel2[n2], cells=cells,
                     tables=(T1998, T4), thr=thr))
    gd_blocks, t_gd = _traditional_blocks(E, n2, ctx.seed)
    ev_gd, rel_gd = (_evaluate(_blocks_to_expansion(E, gd_blocks), Xtr, ytr, Xte, yte),
                     _rel_obj(E, gd_blocks))
    rows.append(_row(f"RS2^gd-{n2} (traditional)", n2, n_sv, ev_gd, PAPER_RS2_GD, rel_gd,
                     cells=cells, tables=(T1998, T4), thr=thr))
    # Equal n beside equal reduction factor.
    pairs = [(f"RS-{n} ({PAPER_N_SV / n:.1f}x)", PAPER_RS[n][10], (n, ev[n]["per"]),
              (eq_ns[n], ev[eq_ns[n]]["per"]) if n in eq_ns else None) for n in paper_ns]
    if eq_ns.get(n2) in ev2:
        pairs.append((f"RS2-{n2} ({PAPER_N_SV / n2:.1f}x)", PAPER_RS2[10],
                      (n2, ev2[n2]["per"]), (eq_ns[n2], ev2[eq_ns[n2]]["per"])))
    # Extras (not in the papers): the orthogonal step and backfitting sweeps. A variant
    # is preferred only by the training objective rel. ||Psi - Psi'||^2, never by test error.
    extra_rows, extras = [], {}
    n_o = 50 if 50 in paper_ns else max(paper_ns)
    t1 = time.perf_counter()
    res_o = construct(E, n_o, shared=False, step="orthogonal", random_state=ctx.seed)
    t_o = time.perf_counter() - t1
    runs_o = _runs_of(E, res_o.expansion)
    for n in (n2, n_o):
        blocks = prefix_blocks(E, runs_o, n)
        extras["orthogonal", n] = (_evaluate(_blocks_to_expansion(E, blocks), Xtr, ytr, Xte,
                                             yte), _rel_obj(E, blocks))
        extra_rows.append(_row(f"RS-{n}, orthogonal step", n, n_sv,
                               extras["orthogonal", n][0], None, extras["orthogonal", n][1],
                               thr=thr))
    t_sw = None
    if not ctx.quick:
        t1 = time.perf_counter()
        rs = construct(E, n2, shared=False, n_sweeps=3, random_state=ctx.seed)
        t_sw = time.perf_counter() - t1
        extras["sweeps", n2] = (_evaluate(rs.expansion, Xtr, ytr, Xte, yte),
                                float(np.mean(rs.relative_objective)))
        extra_rows.append(_row(f"RS-{n2} + 3 sweeps", n2, n_sv, extras["sweeps", n2][0], None,
                               extras["sweeps", n2][1], thr=thr))
    # Figure 11: the RS-20 vectors with their coefficients.
    figures = []
    if 20 in blocks_of:
        blocks = blocks_of[20]
        images = np.vstack([b[0] for b in blocks])
        titles = [f"{v:+.2f}" for b in blocks for v in b[1]]
        figures.append(image_grid(images, (16, 16), titles=titles, ncols=20,
                                  row_labels=[f"digit {d}" for d in range(len(blocks))],
                                  suptitle="RS-20 vectors of the ten one-vs-rest classifiers "
                                           "(fig. 11; titles: coefficient beta)",
                                  path=ctx.out_dir / "usps_rs20_vectors.png"))
    full_err = _err(E, Xte, yte)
    curves = {"RS-n, phase 1 (ours)": ([n_sv / n for n in sorted(ev)],
                                       [ev[n]["per"] for n in sorted(ev)])}
    curves["RS2-n, phase 2 (ours)"] = ([n_sv / n for n in sorted(ev2)],
                                       [ev2[n]["per"] for n in sorted(ev2)])
    paper_rs = {n: v[10] for n, v in PAPER_RS.items()}
    figures.append(error_vs_n_vectors(
        curves, paper={"RS-n (paper, Table 1 / IV)": ([PAPER_N_SV / n for n in paper_rs],
                                                      list(paper_rs.values())),
                       "RS2-25 (paper)": ([PAPER_N_SV / 25], [4.7])},
        baselines={f"full SVM, ours ({full_err:.2f} %)": full_err, "full SVM, paper (4.4 %)": 4.4},
        xlabel="reduction factor (#SV / n, log scale)",
        ylabel="10-class test error (%, threshold re-computed on the training set)",
        title="USPS reduced-set construction: error vs reduction factor",
        path=ctx.out_dir / "usps_rs_error_vs_reduction.png"))
    notes += [
        "Table 1 of the 1998 paper and Table IV of the 1999 paper print the same numbers "
        "(Table IV adds RSC-200 and calls RS-n RSC-n); one run fills both, and the scoreboard "
        "counts each table's cells.",
        f"Phase 1 for all ten classifiers up to RS-{n_max} took {t_max:.0f} s; RS-n for smaller "
        "n is the first n vectors of that run (each classifier has its own random stream, so "
        "this is exactly what construct(E, n) returns), beta re-fitted by Proposition 8."
        + ("" if not few else " " + "; ".join(
            f"digit {k} has {_n_sv(ovr)[k]} SVs, at most {n_max}: construct would return it "
            f"unreduced, so it gets its own run of {n_max} one-term steps ({runs[k].shape[0]} "
            "vectors constructed), and every RS-n of it is a construction, not its first "
            "n SVs" for k in few) + "."),
        f"RS2-{n2}: phase 2 (Burges' global gradient descent, 300 L-BFGS iterations per "
        f"classifier) after RS-{n2}; took {t_ref[n2]:.0f} s.",
        f"RS2^gd-{n2} (traditional RS, Burges 1996): {n2} SVs per classifier drawn at random "
        f"(seed {ctx.seed}) as starting vectors, beta by Proposition 8, then the same global "
        f"gradient descent; one start per classifier where Burges restarts phase 2 many times; "
        f"took {t_gd:.0f} s.",
        f"Extras, not in the papers: the orthogonal step (construct(..., step='orthogonal'), "
        f"{t_o:.0f} s up to RS-{n_o})"
        + (f" and 3 backfitting sweeps after RS-{n2} ({t_sw:.0f} s)" if t_sw is not None else "")
        + ". Same protocol (b~ on the training set); a variant is preferred only by its "
        "training objective rel. ||Psi - Psi'||^2.",
    ]
    if rel2:
        notes.append("Phase 2 lowered ||Psi - Psi'||^2 by "
                     + ", ".join(f"{rel[n] / rel2[n]:.1f}x (RS-{n})" for n in sorted(rel2))
                     + " (paper: 2-3x).")
    if ctx.quick:
        notes.append("--quick: 2000 training / 1000 test samples; not comparable to the paper.")
    notes.append("Seed variation (separate runs, seeds 0-3, b kept, before this protocol; not "
                 "re-computed by this command): at equal objective the 10-class error moved by "
                 "up to 0.65 points between seeds.")
    err = {n: e["per"] for n, e in ev.items()}

    def target(goal, n, limit, paper, phase2=False):
        ours = (ev2 if phase2 else ev).get(n)
        if ours is None:
            return None
        text = (f"{ours['per']:.2f} % with the papers' "
                + ("phase 2" if phase2 else "phase 1") + " and threshold")
        met = ours["per"] <= limit
        if not phase2:
            # An extra may count only if the training objective prefers it.
            opts = [("phase 1", rel[n], ours["per"])] + [
                (f"the {kind} variant", extras[kind, n][1], extras[kind, n][0]["per"])
                for kind in ("orthogonal", "sweeps") if (kind, n) in extras]
            best = _lower_is_better_choice(opts)
            if best[0] != "phase 1":
                text += (f"; {best[2]:.2f} % with {best[0]} (lowest training objective, "
                         f"{best[1]:.3f} vs {rel[n]:.3f})")
                if not met and best[2] <= limit:
                    met = "yes with an option not in the papers, chosen on training data"
        return Target(goal, text, paper, met)

    eq25, eq50 = _eq_factor(25, n_sv), _eq_factor(50, n_sv)
    targets = [t for t in (
        target(f"RS-{eq25} <= 5.0 % (equal reduction factor to the paper's RS-25)", eq25, 5.0,
               "5.1 % at 10x (RS-25)"),
        target(f"RS2-{eq25} <= 4.7 % (equal factor to RS2-25)", eq25, 4.7,
               "4.7 % at 10x (RS2-25)", phase2=True),
        target("RS-25 <= 5.3 %", 25, 5.3, "5.1 % (10x)"),
        target("RS2-25 <= 5.0 %", 25, 5.0, "4.7 % (10x)", phase2=True),
        target(f"RS-{eq50} <= 4.6 % (equal factor to the paper's RS-50)", eq50, 4.6,
               "5.0 % at 5x (RS-50)"),
    ) if t is not None]
    table = "\n\n".join([
        "Table 1 (1998) / Table IV (1999), at the paper's n:",
        _header() + "\n" + "\n".join(rows),
        "Equal n beside equal reduction factor (our n = the paper's n x "
        f"{n_sv:.1f} / {PAPER_N_SV}; 10-class error, threshold re-computed on the training set):",
        _pairs_table(pairs),
        "Extras, not in the papers (same protocol):",
        _header() + "\n" + "\n".join(extra_rows)])
    return Result("usps-rs-construct", "USPS reduced-set construction (1998 Table 1 / 1999 "
                  "Table IV)", table, notes, figures, targets=targets,
                  data={"thresholds": thr, "cells": cells,
                        "errors": {str(n): e for n, e in err.items()}})


# -- Table II: selection via kernel PCA ------------------------------------------------------
def _fraction_sizes(nsv, n, n_ref):
    """Equal fractions removed from each classifier so that on average about n are left:
    classifier k keeps round(n * nsv_k / n_ref) (at most nsv_k, at least 1)."""
    return [int(min(max(1, round(n * m / n_ref)), m)) for m in nsv]


def _kpca_path(expansion, sizes):
    """Run the eq. 63-65 elimination once, recording the support at each requested size."""
    out = {}
    current = expansion
    for n in sorted(set(sizes), reverse=True):
        if n >= current.n_terms:  # nothing to remove (all SVs kept)
            out[n] = (np.asarray(current.vectors), np.asarray(current.coef))
            continue
        res = select_kpca(current, n, refit=False)
        # Continue eliminating from the eq. 65 coefficients (as one long run would).
        current = res.expansion
        sel = np.asarray(res.expansion.vectors)
        out[n] = (sel, optimal_coefficients(expansion, sel))
    return out


def _backward_path(expansion, sizes):
    """The exact greedy elimination (select_backward) along the same sizes."""
    cur, out = expansion, {}
    for n in sorted(set(sizes), reverse=True):
        # Continuing from the re-fitted expansion is exact: Psi - Psi' is orthogonal
        # to the span of the kept vectors (Pythagoras).
        if n < cur.n_terms:
            cur = select_backward(cur, n).expansion
        out[n] = (np.asarray(cur.vectors), np.asarray(cur.coef))
    return out


@register("usps-rs-select-kpca", "USPS RS selection via kernel PCA, RSS-10..250 (1999 Table II)",
          slow=True)
def run_select_kpca(ctx):
    Xtr, ytr, Xte, yte = _load(ctx)
    ovr, E = usps_svm(Xtr, ytr)
    cells, thr = [], []
    n_sv, base = _baseline_rows(E, ovr, Xte, yte, PAPER_NSV_T2, cells=cells, tables=(T2,),
                                sv_tables=(T2,))
    nsv = _n_sv(ovr)
    paper_ns = [25, 50, 100] if ctx.quick else sorted(PAPER_RSS)
    exact_ns = [50, 100] if ctx.quick else [50, 100, 150, 200, 250]
    # Per classifier: the sizes at equal n (fraction n / our mean) and at equal reduction
    # factor (fraction n / 254, the paper's fraction).
    size_n = {n: _fraction_sizes(nsv, n, n_sv) for n in paper_ns}
    size_f = {n: _fraction_sizes(nsv, n, PAPER_N_SV) for n in paper_ns}
    t0 = time.perf_counter()
    paths = [_kpca_path(E.output(k).merge_duplicates(),
                        [size_n[n][k] for n in paper_ns] + [size_f[n][k] for n in paper_ns])
             for k in range(E.n_outputs)]
    secs = time.perf_counter() - t0
    rows, pairs, errs = list(base), [], {}

    def system(sizes, path):
        blocks = [path[k][sizes[k]] for k in range(E.n_outputs)]
        return (_evaluate(_blocks_to_expansion(E, blocks), Xtr, ytr, Xte, yte),
                _rel_obj(E, blocks), float(np.mean(sizes)))

    for n in PAPER_RSS:
        if n not in paper_ns:
            _not_run(cells, (T2,), f"RSS-{n}", PAPER_RSS[n])
    for n in paper_ns:
        ev, rel, n_avg = system(size_n[n], paths)
        errs["eq64", n] = (ev["per"], rel)
        rows.append(_row(f"RSS-{n}", n_avg, n_sv, ev, PAPER_RSS[n], rel, cells=cells,
                         tables=(T2,), thr=thr))
        if size_f[n] == size_n[n]:
            ev_f, n_f = ev, n_avg
        else:
            ev_f, _, n_f = system(size_f[n], paths)
        pairs.append((f"RSS-{n} ({PAPER_N_SV / n:.1f}x)", PAPER_RSS[n][10],
                      (f"{n_avg:g}", ev["per"]), (f"{n_f:g}", ev_f["per"])))
        errs["eq64f", n] = ev_f["per"]
    # Extra: the exact greedy step (eq. 63 with Proposition 8 re-fits), at equal n and at
    # the equal-factor size of RSS-125 (the target). Preferred only by the training objective.
    t1 = time.perf_counter()
    want = {n: size_n[n] for n in exact_ns if n in size_n}
    if 125 in size_f:
        want["f125"] = size_f[125]
    back = [_backward_path(E.output(k).merge_duplicates(), [v[k] for v in want.values()])
            for k in range(E.n_outputs)]
    secs_back = time.perf_counter() - t1
    extra_rows = []
    for key, sizes in want.items():
        ev, rel, n_avg = system(sizes, back)
        label = (f"RSS-{key} (exact greedy)" if key != "f125" else
                 f"RSS-{n_avg:g} (exact greedy; equal factor to RSS-125)")
        errs["exact", key] = (ev["per"], rel)
        extra_rows.append(_row(label, n_avg, n_sv, ev, None, rel, thr=thr))
    notes = [
        "RSS-n as in the paper: equal fractions of SVs removed from each classifier so that "
        "on average n are left (classifier k keeps round(n x #SV_k / mean #SV)); the equal "
        "reduction factor uses the paper's fraction n / 254.",
        f"Eq. 63-65: one vector removed per step using all eigenvectors of the remaining Gram "
        f"matrix, coefficients updated by eq. 65 and re-fitted by Proposition 8 at each reported "
        f"size. Ten classifiers, all sizes: {secs:.0f} s.",
        "Extra 'exact greedy' rows (not in the paper's table): select_backward, the optimal "
        "greedy elimination the paper describes after eq. 64 (remove the vector whose removal, "
        "with Proposition 8 re-fits, costs least: beta_n^2 / [K^-1]_nn); "
        f"{secs_back:.0f} s. It lowers ||Psi - Psi'||^2 against eq. 64 by "
        + ", ".join(f"{100 * (1 - errs['exact', n][1] / errs['eq64', n][1]):.0f} % (n = {n})"
                    for n in exact_ns if ("exact", n) in errs and ("eq64", n) in errs) + ".",
    ]
    targets = []
    if 125 in paper_ns and ("exact", "f125") in errs:
        ours, ex = errs["eq64f", 125], errs["exact", "f125"][0]
        met = ours <= 4.5 or ("yes with the exact greedy step (lower training objective)"
                              if ex <= 4.5 else False)
        targets.append(Target(
            f"RSS-{np.mean(size_f[125]):g} <= 4.5 % (equal reduction factor to the paper's "
            "RSS-125)", f"{ours:.2f} % with eq. 64 and b~ (the papers' protocol); {ex:.2f} % "
            "with the exact greedy step", "4.5 % at 2x (RSS-125)", met))
    if ctx.quick:
        notes.append("--quick: 2000 training / 1000 test samples; not comparable to the paper.")
    table = "\n\n".join([
        "Table II (1999), at the paper's n:", _header() + "\n" + "\n".join(rows),
        "Equal n beside equal reduction factor:", _pairs_table(pairs),
        "Extras, not in the paper (same protocol):", _header() + "\n" + "\n".join(extra_rows)])
    return Result("usps-rs-select-kpca", "USPS RS selection via kernel PCA (1999 Table II)",
                  table, notes, targets=targets, data={"thresholds": thr, "cells": cells})


# -- Table III: L1 selection -------------------------------------------------------------------
class _L1Counts:
    """Support sizes of the eq. 66 Lasso for one classifier, as a function of lambda."""

    def __init__(self, expansion):
        from ..reduced_set.selection import cholesky_factor, l1_weights, prepare_expansion

        expansion, X, A = prepare_expansion(expansion, "select_l1")
        w = l1_weights("inverse", A, "select_l1")
        self.usable = np.flatnonzero(np.isfinite(w))
        R = cholesky_factor(expansion.kernel(X))
        self.design = np.asfortranarray(R[:, self.usable] / w[self.usable][None, :])
        self.target = R @ A[:, 0]
        self.N = X.shape[0]

    def count(self, lam):
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import Lasso

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            coef = Lasso(alpha=lam / (2.0 * self.N), fit_intercept=False, tol=1e-6,
                         max_iter=10_000, selection="cyclic").fit(self.design, self.target).coef_
        return int(np.count_nonzero(coef))


def _search_lambda(counters, n_target, memo, lo=1e-4, hi=1e2, steps=12):
    """One lambda for all classifiers such that the average support size is n_target.

    Bisection on log(lambda) (the average count falls as lambda grows), started from
    the closest bracket among the lambdas already tried (``memo``: lambda -> average
    count, shared between targets); returns the lambda whose average count is closest
    to ``n_target`` (exact when reachable; ties: the larger lambda) and that average.
    Uses only the expansions, no labels.
    """
    def avg(lam):
        if lam not in memo:
            memo[lam] = float(np.mean([c.count(lam) for c in counters]))
        return memo[lam]

    for lam in (lo, hi):
        avg(lam)
    for _ in range(steps):
        above = [v for v in memo if memo[v] > n_target]   # too many vectors: lambda too small
        below = [v for v in memo if memo[v] < n_target]
        if any(memo[v] == n_target for v in memo) or not above or not below:
            break
        a, b = max(above), min(below)
        if b <= a:
            break
        avg(float(np.exp(0.5 * (np.log(a) + np.log(b)))))
    lam = min(memo, key=lambda v: (abs(memo[v] - n_target), -v))
    return lam, memo[lam]


@register("usps-rs-select-l1", "USPS RS selection by L1, RSS2-30..234 (1999 Table III) and the "
          "multi-class l1/linf variant (eq. 70-73)", slow=True)
def run_select_l1(ctx):
    Xtr, ytr, Xte, yte = _load(ctx)
    ovr, E = usps_svm(Xtr, ytr)
    cells, thr = [], []
    n_sv, base = _baseline_rows(E, ovr, Xte, yte, PAPER_NSV_T2, cells=cells, tables=(T3,))
    base = base[1:]  # Table III has no #SVs row
    paper_ns = [50, 101] if ctx.quick else sorted(PAPER_RSS2)
    rows, pairs = list(base), []
    t0 = time.perf_counter()
    outs = [E.output(k).merge_duplicates() for k in range(E.n_outputs)]
    counters = [_L1Counts(e) for e in outs]

    memo = {}
    for lam in np.logspace(-3, 1, 9):  # a coarse common bracket first
        memo[float(lam)] = float(np.mean([c.count(float(lam)) for c in counters]))

    def system(n_target):
        lam, n_avg = _search_lambda(counters, n_target, memo, steps=8 if ctx.quick else 10)
        blocks = []
        for e in outs:
            res = select_l1(e, lam, c="inverse")
            blocks.append((np.asarray(res.expansion.vectors), np.asarray(res.expansion.coef)))
        n_avg = float(np.mean([b[0].shape[0] for b in blocks]))
        ev = _evaluate(_blocks_to_expansion(E, blocks), Xtr, ytr, Xte, yte)
        return lam, n_avg, ev, _rel_obj(E, blocks)

    lams = {}
    for n in PAPER_RSS2:
        if n not in paper_ns:
            _not_run(cells, (T3,), f"RSS2-{n}", PAPER_RSS2[n][1])
    for n in paper_ns:
        lam, n_avg, ev, rel = system(n)
        lams[n] = (lam, n_avg)
        paper_lam, paper_row = PAPER_RSS2[n]
        rows.append(_row(f"RSS2-{n} (λ = {lam:.3g}; paper {paper_lam:.2f})", n_avg, n_sv, ev,
                         paper_row, rel, cells=None, thr=thr))
        cells += [published_cell(T3, f"RSS2-{n} digit {d}", ev["digits"][d], paper_row[d])
                  for d in range(10)]
        cells.append(published_cell(T3, f"RSS2-{n} 10-class %", round(ev["per"], 2),
                                    paper_row[10]))
        n_f = _eq_factor(n, n_sv)
        lam_f, n_avg_f, ev_f, _ = system(n_f)
        pairs.append((f"RSS2-{n} ({PAPER_N_SV / n:.1f}x)", paper_row[10],
                      (f"{n_avg:g}", ev["per"]), (f"{n_avg_f:g} (λ = {lam_f:.3g})", ev_f["per"])))
    secs_single = time.perf_counter() - t0
    # Multi-class: one shared selection, l1/linf penalty (eq. 70-73). Extras.
    Ec = E.merge_duplicates()
    multi_lams = [3.0, 1.0] if not ctx.quick else [3.0]
    B0 = None
    multi_rows = ["| system | vectors | reduction | 10-class, b~ | b kept (info) | paper | "
                  "rel. Σ‖Ψ−Ψ'‖² |", "|---|---|---|---|---|---|---|"]
    t1 = time.perf_counter()
    for lam in multi_lams:
        res = select_l1_multi(Ec, lam, c="inverse", B0=B0, max_iter=1000, tol=1e-6)
        B0 = res.info["B_l1"]
        ev = _evaluate(res.expansion, Xtr, ytr, Xte, yte)
        n_sh = res.expansion.n_terms
        thr.append((f"RSS-multi lam={lam:g}", float(ev["keep"]), float(ev["per"])))
        multi_rows.append(
            f"| RSS-multi λ={lam:g} | {n_sh} shared | {Ec.n_terms / n_sh:.1f}x (of {Ec.n_terms} "
            f"distinct SVs) | {ev['per']:.2f}% | {ev['keep']:.2f}% | ~570 shared -> 5.5% | "
            f"{float(np.mean(res.relative_objective)):.3f} |")
    secs_multi = time.perf_counter() - t1
    notes = [
        "Eq. 66-69 with c_i = mean|alpha| / |alpha_i| (RSS2), solved as a weighted Lasso "
        "(coordinate descent on K = R^T R); as in the paper, one lambda for all ten "
        "classifiers, found by bisection on log(lambda) until the average number of kept "
        "vectors equals the paper's n (or is as close as a single lambda allows); the kept "
        "coefficients re-fitted by Proposition 8. The search uses only the expansions. "
        "Our lambda differs from the paper's (its scale depends on the SVM's alpha). "
        f"Ten classifiers, {2 * len(paper_ns)} systems: {secs_single:.0f} s.",
        "Multi-class rows (extras): eq. 70-73 (l1/linf penalty: a vector used by one classifier "
        "is free for the others), FISTA with the exact l_inf prox, warm-started along lambda; "
        f"vector counts are for all ten classifiers together. Took {secs_multi:.0f} s.",
    ]
    if ctx.quick:
        notes.append("--quick: 2000 training / 1000 test samples; not comparable to the paper.")
    table = "\n\n".join([
        "Table III (1999), at the paper's n:", _header() + "\n" + "\n".join(rows),
        "Equal n beside equal reduction factor:", _pairs_table(pairs),
        "Multi-class selection (eq. 70-73; extras, not in Table III):", "\n".join(multi_rows)])
    return Result("usps-rs-select-l1", "USPS RS selection by L1 (1999 Table III, eq. 70-73)",
                  table, notes, data={"thresholds": thr, "cells": cells,
                                      "lambda": {str(n): v for n, v in lams.items()}})


# -- Section 5: shared vectors ---------------------------------------------------------------------
@register("usps-rs-shared", "USPS simultaneous RS approximation with one shared set (section 5, "
          "eq. 18-19)", slow=True)
def run_shared(ctx):
    Xtr, ytr, Xte, yte = _load(ctx)
    ovr, E = usps_svm(Xtr, ytr)
    Ec = E.merge_duplicates()
    sizes = [50, 100, 150, 250] if not ctx.quick else [50, 100]
    n_max = max(sizes)
    t0 = time.perf_counter()
    res = construct(Ec, n_max, shared=True, random_state=ctx.seed, progress=ctx.progress)
    secs = time.perf_counter() - t0
    rows = ["| system | shared vectors (total) | kernel evals / sample vs separate RS-n | "
            "10-class, b~ | b kept (info) | rel. Σ‖Ψ−Ψ'‖² |",
            "|---|---|---|---|---|---|",
            f"| SV (baseline) | {Ec.n_terms} distinct SVs | - | - | {_err(E, Xte, yte):.2f}% | 0 |"]
    norm2 = Ec.norm2()
    thr = []
    for n in sizes:
        Z = np.asarray(res.expansion.vectors[:n])
        B = optimal_coefficients(Ec, Z)
        R = KernelExpansion(Z, B, E.kernel, E.intercept)
        ev = _evaluate(R, Xtr, ytr, Xte, yte)
        rel = float(np.sum(Ec.distance2(R)) / np.sum(norm2))
        thr.append((f"RS-shared-{n}", float(ev["keep"]), float(ev["per"])))
        rows.append(f"| RS-shared-{n} | {n} | = separate RS-{n // 10} | {ev['per']:.2f}% | "
                    f"{ev['keep']:.2f}% | {rel:.3f} |")
    notes = [
        "One first layer for all ten classifiers (eq. 18-19: each new z maximises "
        "sum_k (Psi_k . Phi(z))^2 / k(z, z), fixed-point iteration), each classifier keeping its "
        f"own beta (Proposition 8). Phase 1 up to {n_max} shared vectors took {secs:.0f} s; "
        "smaller sets are prefixes of that run. Thresholds re-computed on the training set.",
        "The paper proposes this but reports no number. Compare with usps-rs-construct at equal "
        "kernel evaluations per sample: shared-250 against separate RS-25 (10 x 25).",
    ]
    return Result("usps-rs-shared", "USPS simultaneous approximation with shared vectors "
                  "(section 5)", "\n".join(rows), notes, data={"thresholds": thr})
