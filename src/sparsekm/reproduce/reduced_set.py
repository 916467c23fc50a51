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
from . import Result, Section, Target, register


def _benchmark_targets():
    """Targets measured by ``benchmarks/bench_reduce.py`` (source checkout only)."""
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "reduce.json"
    if not path.exists():
        return [Target("RS-25 for ten classifiers < 2 min; >= 50x faster than sklearn",
                       "run `python benchmarks/bench_reduce.py`", "-", None)]
    b = json.loads(path.read_text())
    rs, rs2 = b["construct"]["RS-25"], b["construct"]["RS2-25"]
    err = b["test_error_percent"]["RS2-25"]["b_kept"]
    speed = b["speedup_vs_sklearn_full"]
    load = b.get("machine", {}).get("load_average_1_5_15_min")
    where = f" at load {load[0]:.1f}" if load else ""
    return [
        Target("RS-25 for ten classifiers < 2 min (`bench_reduce.py`)",
               f"{rs['wall_seconds']:.1f} s wall ({rs['cpu_seconds']:.1f} s CPU){where}; "
               f"{rs2['wall_seconds']:.0f} s with phase 2", "-",
               rs["wall_seconds"] < 120),
        Target(">= 50x faster than sklearn's full OvR at <= 5.3 % (`bench_reduce.py`)",
               f"{speed:.0f}x (RS2-25, {err:.2f} %)", "-", speed >= 50 and err <= 5.3),
    ]


def _threshold_summary(records):
    """The "threshold choice" paragraph, from the (system, b kept, b~ per, b~ joint) rows."""
    rows = [r for rec in records.values() for r in rec.data.get("thresholds", [])
            if r[1] < 8.0]
    if not rows:
        return ""
    best = {"keep": 0, "per": 0, "joint": 0}
    for _, keep, per, joint in rows:
        low = min(keep, per, joint)
        for k, v in (("keep", keep), ("per", per), ("joint", joint)):
            best[k] += abs(v - low) < 1e-9
    d_per = float(np.mean([r[2] - r[1] for r in rows]))
    d_joint = float(np.mean([r[3] - r[1] for r in rows]))
    return (
        "**Threshold choice.** Over the "
        f"{len(rows)} reduced systems above with a working approximation (error below 8 % "
        f"with `b` kept), keeping the SVM's `b` gave the lowest test error in {best['keep']} "
        f"(ties counted for each), the per-classifier training-error `b~` (the papers' "
        f"choice) in {best['per']} and the joint `b~` in {best['joint']}; on average the "
        f"per-classifier `b~` was {d_per:+.2f} and the joint `b~` {d_joint:+.2f} points "
        "against keeping `b`. The SVM has almost no training errors, so the training-error "
        "optimal interval is wide and its middle is a noisy estimate. "
        "`ReducedSetClassifier(refit_intercept=True | \"joint\" | False)` offers all three; "
        "the default follows the papers (`True`).")


SECTION = Section(
    title="Reduced-set methods (issue 4)",
    order=4,
    intro="""\
*Fast approximation of support vector kernel expansions* (Schölkopf et al., DAGM 1998) and
*Input space vs. feature space in kernel-based methods* (IEEE TNN 1999), section V. Setting
(all four reproductions): USPS, 7291 training / 2007 test digits in [-1, 1], ten
one-vs-rest `SVC(C=10, gamma=1/128)` (`k = exp(-||x - y||^2 / 128)`, the papers' kernel).
Our SVMs keep about 504 SVs per classifier (2640 distinct) against the papers' 254, so our
RS-n is a 504/n reduction where the paper's is 254/n: **the paper's RS-25 (10x) corresponds
to our RS-50**, its RS-50 (5x) to our RS-100. Every table gives the test error with three
thresholds: the SVM's `b` kept, the per-classifier training-error optimal `b~` (what the
papers do) and a jointly re-fitted `b~` for the 10-class argmax.""",
    outro=_threshold_summary,
    targets=_benchmark_targets,
)

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


def _fmt_row(name, n_avg, n_sv, r, paper, rel=None, collect=None):
    if collect is not None:
        collect.append((name, float(r["keep"]), float(r["per"]), float(r["joint"])))
    factor = n_sv / n_avg if n_avg else float("nan")
    rel_s = f"{rel:.3f}" if rel is not None else "-"
    return (f"| {name} | {n_avg:g} | {factor:.1f}x | {r['keep']:.2f}% | {r['per']:.2f}% | "
            f"{r['joint']:.2f}% | {paper} | {rel_s} |")


_HEADER = ("| system | vectors / classifier | reduction | ours, b kept | ours, b~ per classifier "
           "| ours, b~ joint | paper | rel. ‖Ψ−Ψ'‖² |\n|---|---|---|---|---|---|---|---|")


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
    rows, notes, keep, thr, rel1, rel2, sweeps = [base], [], {}, [], {}, {}, {}
    for n in sizes:
        blocks = _prefix_blocks(E, res.expansion, n_max, n)
        R = _blocks_to_expansion(E, blocks)
        r = _thresholds(R, Xtr, ytr, Xte, yte)
        keep[n] = (blocks, r)
        rel1[n] = _rel_obj(E, blocks)
        rows.append(_fmt_row(f"RS-{n}", n, n_sv, r, PAPER_RS.get(n, "-"), rel1[n], thr))
    # Phase 2 on RS-25, RS-50 and RS-100 (Burges' global gradient descent).
    refined = {}
    for n, paper in ((25, "4.7%"), (50, "-"), (100, "-")):
        if n not in keep:
            continue
        blocks, t_ref = _refine_blocks(E, keep[n][0])
        r = _thresholds(_blocks_to_expansion(E, blocks), Xtr, ytr, Xte, yte)
        refined[n] = r
        rel2[n] = _rel_obj(E, blocks)
        rows.append(_fmt_row(f"RS2-{n}", n, n_sv, r, paper, rel2[n], thr))
        notes.append(f"RS2-{n}: phase 2 (300 L-BFGS iterations per classifier) took {t_ref:.0f} s.")
    # Not in the papers: the orthogonal step (construct(..., step="orthogonal")).
    t1 = time.perf_counter()
    res_o = construct(E, n_max, shared=False, step="orthogonal", random_state=ctx.seed)
    t_o = time.perf_counter() - t1
    ortho, ortho2 = {}, {}
    for n in (25, 50, 100):
        if n not in sizes:
            continue
        blocks = _prefix_blocks(E, res_o.expansion, n_max, n)
        ortho[n] = _thresholds(_blocks_to_expansion(E, blocks), Xtr, ytr, Xte, yte)
        rows.append(_fmt_row(f"RS-{n}, orthogonal step", n, n_sv, ortho[n], "-",
                             _rel_obj(E, blocks), thr))
        if n == 50:
            blocks, _ = _refine_blocks(E, blocks)
            ortho2[n] = _thresholds(_blocks_to_expansion(E, blocks), Xtr, ytr, Xte, yte)
            rows.append(_fmt_row(f"RS2-{n}, orthogonal step", n, n_sv, ortho2[n], "-",
                                 _rel_obj(E, blocks), thr))
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
            r = _thresholds(rs.expansion, Xtr, ytr, Xte, yte)
            if step == "one-term":
                sweeps[n, k] = r
            name = f"RS-{n} + {k} sweep{'s' if k > 1 else ''}"
            name += ", orthogonal step" if step == "orthogonal" else ""
            rows.append(_fmt_row(name, n, n_sv, r, "-", float(np.mean(rs.relative_objective)),
                                 thr))
            notes.append(f"{name}: phase 1 followed by backfitting sweeps (construct(..., "
                         f"n_sweeps={k}, step='{step}'), not in the papers); took {t_sw:.0f} s.")
    # Figure 11: the RS-20 vectors with their coefficients.
    figures = []
    if 20 in keep:
        blocks = keep[20][0]
        images = np.vstack([b[0] for b in blocks])
        titles = [f"{v:+.2f}" for b in blocks for v in b[1]]
        figures.append(image_grid(images, (16, 16), titles=titles, ncols=20,
                                  row_labels=[f"digit {d}" for d in range(len(blocks))],
                                  suptitle="RS-20 vectors of the ten one-vs-rest classifiers "
                                           "(fig. 11; titles: coefficient beta)",
                                  path=ctx.out_dir / "usps_rs20_vectors.png"))
    # Error against the reduction factor, the papers' points overlaid (254 SVs per classifier).
    from ..plotting import error_vs_n_vectors

    curves = {"RS-n, phase 1 (ours)": ([n_sv / n for n in sizes],
                                       [keep[n][1]["keep"] for n in sizes])}
    if refined:
        curves["RS2-n, phase 2 (ours)"] = ([n_sv / n for n in refined],
                                           [r["keep"] for r in refined.values()])
    with_sweeps = {n: r for (n, k), r in sweeps.items() if k == 3}
    if with_sweeps:
        curves["RS-n + 3 sweeps (ours)"] = ([n_sv / n for n in with_sweeps],
                                            [r["keep"] for r in with_sweeps.values()])
    paper_rs = {n: float(v.rstrip("%")) for n, v in PAPER_RS.items() if v != "-"}
    figures.append(error_vs_n_vectors(
        curves, paper={"RS-n (paper, Table 1)": ([254 / n for n in paper_rs],
                                                 list(paper_rs.values())),
                       "RS2-25 (paper)": ([254 / 25], [4.7])},
        baselines={f"full SVM, ours ({_err(E, Xte, yte):.2f} %)": _err(E, Xte, yte),
                   "full SVM, paper (4.4 %)": 4.4},
        xlabel="reduction factor (#SV / n, log scale)", ylabel="10-class test error (%)",
        title="USPS reduced-set construction: error vs reduction factor (b kept)",
        path=ctx.out_dir / "usps_rs_error_vs_reduction.png"))
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
    err = {n: keep[n][1]["keep"] for n in keep}
    err2 = {n: r["keep"] for n, r in refined.items()}
    pairs = [(f"RS-{a} ({n_sv / a:.0f}x) {err[a]:.2f} %", f"RS-{b} ({254 / b:.0f}x) {p}")
             for a, b, p in ((50, 25, "5.1 %"), (100, 50, "5.0 %")) if a in err]
    if 50 in err2:
        pairs.append((f"RS2-50 {err2[50]:.2f} %", "RS2-25 4.7 %"))
    if pairs:
        notes.append("At equal reduction factors (ours vs the paper's): "
                     + "; ".join(f"{a} vs {b}" for a, b in pairs) + ".")
    if rel2:
        notes.append("Phase 2 lowered ||Psi - Psi'||^2 by "
                     + ", ".join(f"{rel1[n] / rel2[n]:.1f}x (RS-{n})" for n in rel2)
                     + " (paper: 2-3x).")

    def target(goal, n, limit, paper, with_sweeps=None, phase2=False):
        ours = (err2 if phase2 else err).get(n)
        if ours is None:
            return None
        text = f"{ours:.2f} % with the papers' " + ("phase 2" if phase2 else "phase 1")
        met = ours <= limit
        options = []  # (description, error) of the options that are not in the papers
        if with_sweeps is not None and with_sweeps in sweeps:
            options.append((f"{with_sweeps[1]} backfitting sweep(s) (`n_sweeps`)",
                            sweeps[with_sweeps]["keep"]))
        alt = (ortho2 if phase2 else ortho).get(n)
        if alt is not None:
            options.append(("the orthogonal step (`step='orthogonal'`)", alt["keep"]))
        for desc, e in options:
            text += f"; {e:.2f} % with {desc}"
        if not met and any(e <= limit for _, e in options):
            met = "yes with an option not in the papers, no with the papers' algorithm"
        if n == 100 and not phase2 and 100 in err2:
            text += f"; RS2-100 (phase 2, reported apart) {err2[100]:.2f} %"
        return Target(goal, text, paper, met)

    targets = [t for t in (
        target("RS-50 <= 5.0 %", 50, 5.0, "5.1 % at 10x (RS-25)", (50, 3)),
        target("RS2-50 <= 4.7 %", 50, 4.7, "4.7 % at 10x (RS2-25)", phase2=True),
        target("RS-25 <= 5.3 %", 25, 5.3, "5.1 % (10x)", (25, 3)),
        target("RS2-25 <= 5.0 %", 25, 5.0, "4.7 % (10x)", phase2=True),
        target("RS-100 <= 4.6 %", 100, 4.6, "5.0 % at 5x (RS-50)"),
    ) if t is not None]
    notes.append("Seed variation (separate runs, seeds 0-3, b kept; not re-computed by this "
                 "command): at equal objective the 10-class error moves by up to 0.65 points "
                 "between seeds. Means: RS-25 5.93 %, RS-25 + 3 sweeps 5.28 %, RS-50 5.08 %, "
                 "RS-50 orthogonal 4.92 %, RS2-50 4.78 %, RS2-50 orthogonal 4.77 %, "
                 "RS-100 4.92 %, RS-100 orthogonal 4.78 %, RS2-100 4.39 %. RS2-25 variants "
                 "at seed 0 (phase 2 after them): 3 sweeps 4.98 %, orthogonal step 5.08 %, "
                 "orthogonal + 3 sweeps 5.03 % - the RS2-25 <= 5.0 % target sits inside this "
                 "noise.")
    table = _HEADER + "\n" + "\n".join(rows)
    return Result("usps-rs-construct", "USPS reduced-set construction (Table 1 / Table IV)",
                  table, notes, figures, targets=targets, data={"thresholds": thr})


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
    rows, thr, errs, rels = [base], [], {}, {}
    for n in sizes:
        blocks = [p[n] for p in paths]
        R = _blocks_to_expansion(E, blocks)
        r = _thresholds(R, Xtr, ytr, Xte, yte)
        errs["eq64", n], rels["eq64", n] = r["keep"], _rel_obj(E, blocks)
        rows.append(_fmt_row(f"RSS-{n}", n, n_sv, r, paper.get(n, "-"), rels["eq64", n], thr))
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
        errs["exact", n], rels["exact", n] = r["keep"], _rel_obj(E, blocks)
        rows.append(_fmt_row(f"RSS-{n} (exact greedy)", n, n_sv, r, paper.get(n, "-"),
                             rels["exact", n], thr))
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
        "The exact greedy step lowers ||Psi - Psi'||^2 against eq. 64 by "
        + ", ".join(f"{100 * (1 - rels['exact', n] / rels['eq64', n]):.0f} % (n = {n})"
                    for n in sizes) + ".",
    ]
    targets = []
    if 250 in sizes:
        targets.append(Target(
            "RSS-250 <= 4.5 %", f"{errs['exact', 250]:.2f} % exact greedy selection "
            f"(`select_backward`); {errs['eq64', 250]:.2f} % with eq. 64",
            "4.5 % at 2x (RSS-125)",
            True if errs["eq64", 250] <= 4.5 else
            ("yes (exact greedy)" if errs["exact", 250] <= 4.5 else False)))
    return Result("usps-rs-select-kpca", "USPS RS selection via kernel PCA (Table II)",
                  _HEADER + "\n" + "\n".join(rows), notes, targets=targets,
                  data={"thresholds": thr})


# -- Table III: L1 selection -------------------------------------------------------------------
@register("usps-rs-select-l1", "USPS RS selection by L1 (Table III) and the multi-class "
          "l1/linf variant (eq. 70-73)", slow=True)
def run_select_l1(ctx):
    Xtr, ytr, Xte, yte = _load(ctx)
    ovr, E = usps_svm(Xtr, ytr)
    n_sv, base = _baseline_row(E, ovr, Xte, yte)
    paper = {101: "5.9%", 151: "4.5%"}
    sizes = [101, 151, 200, 300] if not ctx.quick else [50, 100]
    rows, thr = [base], []
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
                             _rel_obj(E, blocks), thr))
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
        thr.append((f"RSS-multi lam={lam:g}", float(r["keep"]), float(r["per"]),
                    float(r["joint"])))
        multi_rows.append(
            f"| RSS-multi lam={lam:g} | {n_sh} shared | {Ec.n_terms / n_sh:.1f}x (of {Ec.n_terms} "
            f"distinct SVs) | {r['keep']:.2f}% | {r['per']:.2f}% | {r['joint']:.2f}% | "
            f"~570 shared -> 5.5% | {float(np.mean(res.relative_objective)):.3f} |")
    secs_multi = time.perf_counter() - t1
    notes = [
        "Eq. 66-69 with c_i = mean|alpha| / |alpha_i| (RSS2), solved as a weighted Lasso "
        "(coordinate descent on K = R^T R); lambda followed down a continuation path (bisected "
        "where the path skips the count) to exactly the target number of vectors per "
        "classifier; the kept coefficients re-fitted by Proposition 8. "
        f"Ten classifiers x {len(sizes)} sizes took {secs_single:.0f} s.",
        "Equal reduction factors: the paper's RSS2-101/151 of 254 SVs (2.5x/1.7x) correspond to "
        "our ~200/300 of ~504.",
        "Multi-class rows: eq. 70-73 (l1/linf penalty: a vector used by one classifier is free "
        "for the others), FISTA with the exact l_inf prox, warm-started along lambda; vector "
        f"counts are for all ten classifiers together. Took {secs_multi:.0f} s.",
    ]
    table = _HEADER + "\n" + "\n".join(rows + multi_rows)
    return Result("usps-rs-select-l1", "USPS RS selection by L1 (Table III, eq. 70-73)", table,
                  notes, data={"thresholds": thr})


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
            "kept | ours, b~ per classifier | ours, b~ joint | rel. Σ‖Ψ−Ψ'‖² |",
            "|---|---|---|---|---|---|---|",
            f"| SV (baseline) | {Ec.n_terms} distinct SVs | - | {_err(E, Xte, yte):.2f}% | - | - | 0 |"]
    norm2 = Ec.norm2()
    thr = []
    for n in sizes:
        Z = np.asarray(res.expansion.vectors[:n])
        B = optimal_coefficients(Ec, Z)
        R = KernelExpansion(Z, B, E.kernel, E.intercept)
        r = _thresholds(R, Xtr, ytr, Xte, yte)
        rel = float(np.sum(Ec.distance2(R)) / np.sum(norm2))
        thr.append((f"RS-shared-{n}", float(r["keep"]), float(r["per"]), float(r["joint"])))
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
                  "(section 5)", "\n".join(rows), notes, data={"thresholds": thr})
