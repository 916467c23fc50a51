"""Scaling of GreedyBasis, reduced-set construction and SLMC against their expected complexity.

Each method is timed along two axes, every other size held fixed, and the measured
times are fitted (a) by a power law ``t = c x^p`` (least squares in log-log space: the
measured exponent ``p``) and (b) by the expected complexity read from the code,
``t = sum_k c_k term_k`` with non-negative constants (relative least squares). Figures
overlay both on the measurements, one per method.

Expected costs (``d`` = input dimension; derivations in ``docs/performance.md``):

* **GreedyBasis** (pivoted incomplete Cholesky, Franc & Hlavac Algorithm 1), ``n``
  points, ``m`` basis vectors: per pivot one kernel column (``O(n d)``), the
  projection on the current basis (``O(n j)`` for the ``j``-th pivot; blocked as a
  GEMM over 64 pivots) and ``O(n)`` residual updates, so
  ``T = a n m^2 + b n m d`` (the ``O(n m)`` passes folded into ``b`` at fixed ``d``):
  linear in ``n``, quadratic in ``m`` once ``m >> d``. (The paper's own algorithm with
  Sherman-Woodbury inverses is ``O(n m^3)``.)
* **RS construction** (``reduced_set.construct``, phase 1, one output), input expansion
  of ``N`` terms, ``N_z`` reduced vectors, ``n_init = 5`` starts per step and ``T_j``
  fixed-point iterations in step ``j`` (``I = sum_j T_j``, measured): the Gram matrix
  of the input vectors once (``O(N^2 d)``), then per step ``O(T_j n_init (N + j) d)``
  for the fixed-point iterations (eq. 10/12: two GEMMs over the ``N + j`` vectors of
  the residual expansion), ``O(N j d)`` to score the start candidates, ``O(j^3)`` for
  Proposition 8's ``beta`` and a per-step overhead:
  ``T = c1 I N + c2 N N_z^2 + c3 N^2 + c4 N_z`` at fixed ``d``. Each fixed-point
  iteration costs ``O(n_init N d)``: linear in ``N``, independent of ``N_z``.
* **SLMC** (``sparse_learning.slmc_optimize``), ``N`` training points, ``N_z`` expansion vectors:
  per evaluation of ``W(Z)`` and its gradient (eq. 44, 46) ``K(Z, X)`` in
  ``O(N N_z d)``, the whitening eigendecomposition ``O(N_z^3)``, the whitened
  features ``O(N N_z^2)``, the inner linear SVM (interior point: Newton steps of
  ``O(N N_z^2)`` plus ~40 length-``N`` vector operations; active-set warm start) and
  the gradient ``O((n_SV + N_z) N_z d)``:
  ``T = c0 + c1 N + c2 N N_z d + c3 N N_z^2 + c4 N_z^3`` per evaluation (the paper's
  ``O(N N_z d + T_SVM(N, N_z) + N_z^3 + N_z^2 d)`` per iteration, section 5.8).
  Measured per function evaluation of a 10-iteration L-BFGS run.

The constants of each model are fitted once to both curves of its method.

Times are process CPU seconds (best of repeats, one BLAS thread recommended:
``OMP_NUM_THREADS=1``), robust on the shared, loaded machine; wall seconds are kept
beside them in the JSON. Writes ``benchmarks/results/scaling.json`` and
``docs/figures/scaling_{greedy_basis,rs_construct,slmc}.png``.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_scaling.py [--only greedy rs slmc]
    python benchmarks/bench_scaling.py --quick --out /tmp/s.json --fig-dir /tmp
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import (  # noqa: E402
    digits_data,
    machine,
    model_fit,
    plain_log_ticks,
    power_fit,
    r_squared,
    timed,
    write_results,
)

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results" / "scaling.json"
FIG_DIR = ROOT.parent / "docs" / "figures"

GRIDS = {
    "full": {
        "greedy": {"n": [8192, 16384, 32768, 65536, 131072], "m_fixed": 256,
                   "m": [128, 256, 512, 1024, 1536], "n_fixed": 32768, "d": 50},
        "rs": {"N": [250, 500, 1000, 2000, 4000], "Nz_fixed": 10,
               "Nz": [5, 10, 20, 40, 80], "N_fixed": 1000},
        "slmc": {"N": [500, 1000, 2000, 4000, 7291], "Nz_fixed": 20,
                 "Nz": [5, 10, 20, 40, 80, 160], "N_fixed": 2000, "max_iter": 10},
    },
    "quick": {
        "greedy": {"n": [2048, 4096, 8192], "m_fixed": 32,
                   "m": [16, 32, 64], "n_fixed": 4096, "d": 20},
        "rs": {"N": [100, 200, 400], "Nz_fixed": 3, "Nz": [2, 4, 8], "N_fixed": 200},
        "slmc": {"N": [200, 400, 800], "Nz_fixed": 5, "Nz": [3, 6, 12], "N_fixed": 400,
                 "max_iter": 3},
    },
}


def _curve(x_name, xs, seconds_cpu, seconds_wall, expected_exponent, terms, names, fixed,
           extra=None):
    """One scaling curve: measurements, log-log fit and fit of the expected model."""
    xs = np.asarray(xs, float)
    t = np.asarray(seconds_cpu, float)
    half = len(xs) // 2
    out = {
        "x": x_name, "values": [float(v) for v in xs], "fixed": fixed,
        "seconds_cpu": [float(v) for v in t], "seconds_wall": [float(v) for v in seconds_wall],
        "expected_exponent": expected_exponent,
        "loglog_fit": power_fit(xs, t),
        "loglog_fit_upper_half": power_fit(xs[half:], t[half:]),
        "model_terms": {n: [float(v) for v in col] for n, col in zip(names, terms, strict=True)},
    }
    if extra:
        out.update(extra)
    return out


def _joint_model(res):
    """Fit the expected complexity to both curves of a method at once (shared constants)."""
    curves = [v for k, v in res.items() if k.startswith("vs_")]
    names = list(curves[0]["model_terms"])
    F = np.vstack([np.column_stack([c["model_terms"][n] for n in names]) for c in curves])
    t = np.concatenate([c["seconds_cpu"] for c in curves])
    fit = model_fit(F, t, names)
    pred = np.asarray(fit.pop("predicted_seconds"))
    start = 0
    for c in curves:
        k = len(c["values"])
        c["model_predicted_seconds"] = [float(v) for v in pred[start:start + k]]
        c["model_r2_loglog"] = r_squared(np.log(c["seconds_cpu"]), np.log(pred[start:start + k]))
        c["model_max_relative_error"] = float(np.max(np.abs(pred[start:start + k]
                                                            / c["seconds_cpu"] - 1)))
        start += k
    res["model_fit"] = fit
    return res


# -- GreedyBasis -----------------------------------------------------------------------
def bench_greedy(grid, repeat, seed):
    from sparsekm.approx import GreedyBasis
    from sparsekm.kernels import RBF

    d = grid["d"]
    rng = np.random.default_rng(seed)
    n_max = max(max(grid["n"]), grid["n_fixed"])
    # 20 Gaussian clusters of full dimension: the residuals stay far above rounding,
    # so every run selects exactly m pivots (tol=0).
    centers = rng.normal(scale=2.0, size=(20, d))
    X_all = centers[rng.integers(20, size=n_max)] + rng.normal(size=(n_max, d))
    kernel = RBF(1.0 / (d * X_all.var()))

    def run(n, m):
        X = X_all[:n]
        gb, w, c = timed(lambda: GreedyBasis(n_basis=m, tol=0.0, kernel=kernel,
                                             random_state=seed).fit(X), repeat)
        assert gb.n_basis_ == m, (gb.n_basis_, m)
        return w, c

    res = {"expected": ("T = a n m^2 + b n m d (+ c n m, absorbed in b at fixed d): pivoted "
                        "Cholesky, projections blocked by 64 pivots"),
           "kernel": repr(kernel), "d": d,
           "data": "20 Gaussian clusters (centres N(0, 4 I)), unit width, full dimension"}
    for axis, xs, fixed in (("n", grid["n"], {"m": grid["m_fixed"], "d": d}),
                            ("m", grid["m"], {"n": grid["n_fixed"], "d": d})):
        walls, cpus = [], []
        for x in xs:
            n, m = (x, grid["m_fixed"]) if axis == "n" else (grid["n_fixed"], x)
            w, c = run(n, m)
            walls.append(w)
            cpus.append(c)
            print(f"greedy {axis}={x}: {c:.3f} CPU s", flush=True)
        n_arr = np.asarray(xs if axis == "n" else [grid["n_fixed"]] * len(xs), float)
        m_arr = np.asarray([grid["m_fixed"]] * len(xs) if axis == "n" else xs, float)
        res[f"vs_{axis}"] = _curve(
            axis, xs, cpus, walls, [1, 1] if axis == "n" else [1, 2],
            [n_arr * m_arr**2, n_arr * m_arr * d], ["n m^2", "n m d"], fixed)
    res["memory_probe"] = _greedy_probe(X_all, kernel, grid["n"])
    return _joint_model(res)


def _greedy_probe(X_all, kernel, ns, n_rep=50):
    """CPU ns per row of the two O(n) inner operations of one pivot, at each n.

    One kernel column ``k(X, x_p)`` (streams the n x d inputs) and one in-block
    projection ``L[b:j, p] @ L[b:j]`` over 32 rows of the factor (streams 32 x n):
    constant per row while the arrays fit in the last-level cache, larger beyond.
    """
    rng = np.random.default_rng(0)
    out = {"n": list(map(int, ns)), "kernel_column_ns_per_row": [],
           "block_projection_32_rows_ns_per_row": [],
           "bytes_inputs": [], "bytes_32_factor_rows": []}
    for n in ns:
        X = X_all[:n]
        x_sq = kernel._sqnorms(X)
        L = rng.standard_normal((32, n))
        v = rng.standard_normal(32)
        c = time.process_time()
        for p in range(n_rep):
            kernel._block(X, X[p:p + 1], x_sq, None if x_sq is None else x_sq[p:p + 1])
        out["kernel_column_ns_per_row"].append((time.process_time() - c) / n_rep / n * 1e9)
        c = time.process_time()
        for _ in range(n_rep):
            v @ L
        out["block_projection_32_rows_ns_per_row"].append(
            (time.process_time() - c) / n_rep / n * 1e9)
        out["bytes_inputs"].append(int(X.nbytes))
        out["bytes_32_factor_rows"].append(int(L.nbytes))
    return out


# -- reduced-set construction -------------------------------------------------------------
def _rs_expansion(N, seed, data):
    """SVM-like single-output expansion on N USPS training digits: alpha_i = y_i u_i."""
    from sparsekm import KernelExpansion
    from sparsekm.kernels import RBF

    X, y, gamma = data
    rng = np.random.default_rng(seed)
    idx = rng.choice(X.shape[0], N, replace=False)
    coef = np.where(y[idx] == 0, 1.0, -1.0) * rng.uniform(0.1, 1.0, N)
    return KernelExpansion(X[idx], coef, RBF(gamma))


def bench_rs(grid, repeat, seed, data):
    from sparsekm.reduced_set import construct

    d = data[0].shape[1]
    n_init = 5
    res = {"expected": ("T = c1 I N + c2 N N_z^2 + c3 N_z N^2 + c4 N^2 + c5 N_z at fixed d, "
                        "I = sum_j T_j the fixed-point iterations (measured). Per one-term "
                        "step j: T_j iterations of O(n_init (N + j) d), O(N j d) to score the "
                        "start candidates and to update ||Psi_j||^2, O(j^3) for beta and a "
                        "per-step overhead; once: the Gram matrix of the input vectors "
                        "O(N^2 d). c3 (an N_z N^2 term) should fit to ~0 since "
                        "||Psi_j||^2 is no longer recomputed per step."),
           "n_init": n_init, "d": d,
           "data": "first-class-vs-rest SVM-like expansions on N random USPS training digits, "
                   "alpha_i = y_i u_i, u_i ~ U(0.1, 1); RBF gamma as the SVMs"}
    for axis, xs, fixed in (("N", grid["N"], {"N_z": grid["Nz_fixed"], "d": d}),
                            ("N_z", grid["Nz"], {"N": grid["N_fixed"], "d": d})):
        walls, cpus, iters = [], [], []
        for x in xs:
            N, nz = (x, grid["Nz_fixed"]) if axis == "N" else (grid["N_fixed"], x)
            psi = _rs_expansion(N, seed, data)
            r, w, c = timed(lambda psi=psi, nz=nz: construct(psi, nz, n_init=n_init,
                                                             random_state=seed), repeat)
            assert r.expansion.n_terms == nz
            walls.append(w)
            cpus.append(c)
            iters.append(int(r.n_iter))
            print(f"rs {axis}={x}: {c:.3f} CPU s, {r.n_iter} fixed-point iterations",
                  flush=True)
        N_arr = np.asarray(xs if axis == "N" else [grid["N_fixed"]] * len(xs), float)
        z_arr = np.asarray([grid["Nz_fixed"]] * len(xs) if axis == "N" else xs, float)
        per_iter = [c / max(i, 1) for c, i in zip(cpus, iters, strict=True)]
        res[f"vs_{axis}"] = _curve(
            axis, xs, cpus, walls, [1, 2],
            [np.asarray(iters, float) * N_arr, N_arr * z_arr**2, z_arr * N_arr**2, N_arr**2,
             z_arr],
            ["I N", "N N_z^2", "N_z N^2", "N^2", "N_z"], fixed,
            extra={"fixed_point_iterations": iters,
                   "cpu_seconds_per_fixed_point_iteration": per_iter,
                   "loglog_fit_per_fixed_point_iteration": power_fit(xs, per_iter)})
    return _joint_model(res)


# -- SLMC ---------------------------------------------------------------------------------
def bench_slmc(grid, repeat, seed, data):
    from sparsekm import sparse_learning
    from sparsekm.kernels import RBF

    X_all, y_all, gamma = data
    d = X_all.shape[1]
    kernel = RBF(gamma)
    C = 10.0
    res = {"expected": ("T per evaluation of W(Z) and its gradient = c0 + c1 N + c2 N N_z d "
                        "+ c3 N N_z^2 + c4 N_z^3: K(Z, X) and the gradient (N N_z d); whitened "
                        "features and the interior-point Newton steps (N N_z^2 for H^T D H, "
                        "plus ~40 length-N vector operations per Newton step: the N term); "
                        "eigendecomposition (N_z^3); a per-call overhead (c0)"),
           "C": C, "d": d, "max_iter": grid["max_iter"],
           "data": "USPS training digits, class 0 vs rest, first N (shuffled once)"}
    rng = np.random.default_rng(seed)
    perm = rng.permutation(X_all.shape[0])
    X_all, y_all = X_all[perm], np.where(y_all[perm] == 0, 1.0, -1.0)
    for axis, xs, fixed in (("N", grid["N"], {"N_z": grid["Nz_fixed"], "d": d}),
                            ("N_z", grid["Nz"], {"N": grid["N_fixed"], "d": d})):
        walls, cpus, evals, iters, inner, inner_methods = [], [], [], [], [], []
        for x in xs:
            N, nz = (x, grid["Nz_fixed"]) if axis == "N" else (grid["N_fixed"], x)
            X, y = X_all[:N], y_all[:N]
            Z0 = X[np.sort(np.random.default_rng(seed).choice(N, nz, replace=False))]
            r, w, c = timed(lambda X=X, y=y, Z0=Z0: sparse_learning.slmc_optimize(
                X, y, Z0, kernel, C, max_iter=grid["max_iter"], tol=0.0), repeat)
            walls.append(w / r.n_evals)
            cpus.append(c / r.n_evals)
            evals.append(int(r.n_evals))
            iters.append(int(r.n_iter))
            svm_s, methods = _inner_svm_share(X, y, Z0, kernel, C, grid["max_iter"])
            inner.append(svm_s)
            inner_methods.append(methods)
            print(f"slmc {axis}={x}: {c / r.n_evals * 1e3:.2f} CPU ms per evaluation "
                  f"({r.n_evals} evaluations; inner SVM {svm_s * 1e3:.2f} ms)", flush=True)
        N_arr = np.asarray(xs if axis == "N" else [grid["N_fixed"]] * len(xs), float)
        z_arr = np.asarray([grid["Nz_fixed"]] * len(xs) if axis == "N" else xs, float)
        res[f"vs_{axis}"] = _curve(
            axis, xs, cpus, walls, [1, 1] if axis == "N" else [1, 2],
            [np.ones_like(N_arr), N_arr, N_arr * z_arr * d, N_arr * z_arr**2, z_arr**3],
            ["1", "N", "N N_z d", "N N_z^2", "N_z^3"],
            fixed, extra={"n_evaluations": evals, "n_iterations": iters,
                          "inner_svm_cpu_seconds_per_evaluation": inner,
                          "inner_svm_fraction": [a / b for a, b in zip(inner, cpus, strict=True)],
                          "inner_svm_methods": inner_methods,
                          "ipm_newton_steps_per_evaluation": [
                              m["newton_steps_per_evaluation"] for m in inner_methods],
                          "loglog_fit_inner_svm": power_fit(xs, inner),
                          "seconds_are": "per evaluation of W(Z) and its gradient"})
    return _joint_model(res)


def _inner_svm_share(X, y, Z0, kernel, C, max_iter):
    """CPU seconds per evaluation spent in the inner SVM (``sparse_learning.fixed_z_svm``).

    A separate, instrumented run (the wrappers are removed afterwards); also counts
    which solver path each inner solve took (interior point, warm active set, ...)
    and the interior-point Newton steps (one Cholesky factorisation each).
    """
    from sparsekm.sparse_learning import fixed_z, svm_marginal

    original, original_linalg = svm_marginal.fixed_z_svm, fixed_z.linalg
    spent, methods = [0.0], {}

    class CountingLinalg:
        n_cholesky = 0

        def __getattr__(self, name):
            return getattr(original_linalg, name)

        def cho_factor(self, *args, **kwargs):
            CountingLinalg.n_cholesky += 1
            return original_linalg.cho_factor(*args, **kwargs)

    def wrapped(*args, **kwargs):
        c = time.process_time()
        sol = original(*args, **kwargs)
        spent[0] += time.process_time() - c
        methods[sol.extra["method"]] = methods.get(sol.extra["method"], 0) + 1
        return sol

    svm_marginal.fixed_z_svm, fixed_z.linalg = wrapped, CountingLinalg()
    try:
        r = svm_marginal.slmc_optimize(X, y, Z0, kernel, C, max_iter=max_iter, tol=0.0)
    finally:
        svm_marginal.fixed_z_svm, fixed_z.linalg = original, original_linalg
    methods["newton_steps_per_evaluation"] = CountingLinalg.n_cholesky / r.n_evals
    return spent[0] / r.n_evals, methods


# -- figures ------------------------------------------------------------------------------
TITLES = {"greedy_basis": "GreedyBasis (pivoted Cholesky)",
          "rs_construct": "RS construction (phase 1)",
          "slmc": "SLMC: one evaluation of W(Z) and gradient"}
SYMBOL = {"n": "n", "m": "m", "N": "N", "N_z": "N$_z$"}


def figure(name, res, path, dpi=110):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = [v for k, v in res.items() if k.startswith("vs_")]
    per_iter = "cpu_seconds_per_fixed_point_iteration" in curves[0]
    fig, axes = plt.subplots(2 if per_iter else 1, len(curves),
                             figsize=(6 * len(curves), 8.6 if per_iter else 4.4), squeeze=False)
    if per_iter:
        for ax, cur in zip(axes[1], curves, strict=True):
            x = np.asarray(cur["values"])
            t = np.asarray(cur["cpu_seconds_per_fixed_point_iteration"]) * 1e3
            fit = cur["loglog_fit_per_fixed_point_iteration"]
            ax.loglog(x, t, "s", color="C2", label="CPU ms per fixed-point iteration "
                                                   "(total / iterations)")
            xx = np.geomspace(x.min(), x.max(), 50)
            ax.loglog(xx, 1e3 * fit["coefficient"] * xx ** fit["exponent"], "-", color="C2",
                      lw=1, label=f"power-law fit: exponent {fit['exponent']:.2f}")
            p = 1 if cur["x"] == "N" else 0
            ax.loglog(xx, t[-1] * (xx / x[-1]) ** p, ":", color="k", lw=1,
                      label=f"expected O({SYMBOL[cur['x']]}$^{p}$) (n_init (N + j) d per "
                            "iteration)")
            ax.set_xlabel(cur["x"])
            ax.set_ylabel("ms per fixed-point iteration")
            ax.set_title(f"iterations: {cur['fixed_point_iterations'][0]} ... "
                         f"{cur['fixed_point_iterations'][-1]} (summed over steps)", fontsize=9)
            ax.legend(fontsize=7)
    for ax, cur in zip(axes[0], curves, strict=True):
        x = np.asarray(cur["values"])
        t = np.asarray(cur["seconds_cpu"])
        fit, mf = cur["loglog_fit"], res["model_fit"]
        ax.loglog(x, t, "o", color="C0", label="measured (CPU s, best of repeats)")
        xx = np.geomspace(x.min(), x.max(), 50)
        ax.loglog(xx, fit["coefficient"] * xx ** fit["exponent"], "-", color="C0", lw=1,
                  label=f"power-law fit: exponent {fit['exponent']:.2f}")
        if "inner_svm_cpu_seconds_per_evaluation" in cur:
            f2 = cur["loglog_fit_inner_svm"]
            ax.loglog(x, cur["inner_svm_cpu_seconds_per_evaluation"], "s", color="C1", ms=4,
                      label=f"of which the inner SVM (exponent {f2['exponent']:.2f})")
        ax.loglog(x, cur["model_predicted_seconds"], "--", color="C3",
                  label="expected: " + " + ".join(
                      f"c{i}·{n}" for i, n in enumerate(mf["terms"], 1))
                  + f", joint fit (R$^2_{{log}}$ {cur['model_r2_loglog']:.3f})")
        for p, style in zip(sorted(set(cur["expected_exponent"])), (":", "-."), strict=False):
            ax.loglog(xx, t[-1] * (xx / x[-1]) ** p, style, color="k", lw=1,
                      label=f"O({SYMBOL[cur['x']]}$^{p}$) through the largest point")
        fixed = ", ".join(f"{k} = {v}" for k, v in cur["fixed"].items())
        ax.set_xlabel(cur["x"])
        ax.set_ylabel("seconds" + (" per evaluation" if name == "slmc" else ""))
        ax.set_title(f"{TITLES[name]}: time vs {cur['x']} ({fixed})", fontsize=9)
        ax.legend(fontsize=7)
    for ax in axes.ravel():
        plain_log_ticks(ax)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return str(path)


def _usps_like():
    name, gamma, X, y, _, _ = digits_data()
    return (X, y, gamma), name


def _relative(path):
    """``path`` relative to the repository root when it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to(ROOT.parent))
    except ValueError:
        return str(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="+", choices=["greedy", "rs", "slmc"],
                        default=["greedy", "rs", "slmc"])
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--fig-dir", default=str(FIG_DIR))
    args = parser.parse_args(argv)
    grids = GRIDS["quick" if args.quick else "full"]
    repeat = 1 if args.quick else args.repeat
    data, data_name = _usps_like()
    if not args.quick and data_name != "usps":
        raise SystemExit("bench_scaling.py needs the USPS files for a full run (RS and SLMC "
                         "curves go up to 7291 points): download them with `sparsekm data fetch "
                         "usps`, or set SPARSEKM_DATA to a folder holding them, or use --quick.")
    t0 = time.perf_counter()
    out_path = Path(args.out)
    # --only re-runs some methods and keeps the others from an existing file
    result = json.loads(out_path.read_text()) if out_path.exists() and len(args.only) < 3 \
        else {}
    result.update({"benchmark": "scaling", "quick": args.quick, "repeat": repeat,
                   "machine": machine(), "data": data_name})
    todo = {"greedy": ("greedy_basis", lambda: bench_greedy(grids["greedy"], repeat, args.seed)),
            "rs": ("rs_construct", lambda: bench_rs(grids["rs"], repeat, args.seed, data)),
            "slmc": ("slmc", lambda: bench_slmc(grids["slmc"], repeat, args.seed, data))}
    figures = result.get("figures", {})
    for key in args.only:
        name, fn = todo[key]
        t1, load0 = time.perf_counter(), [round(v, 2) for v in os.getloadavg()]
        result[name] = fn()
        result[name]["seconds_total"] = time.perf_counter() - t1
        result[name]["run"] = {"date": time.strftime("%Y-%m-%d %H:%M:%S"),
                               "load_average_at_start": load0,
                               "load_average_at_end": [round(v, 2) for v in os.getloadavg()]}
        figures[name] = _relative(figure(name, result[name],
                                         Path(args.fig_dir) / f"scaling_{name}.png",
                                         dpi=50 if args.quick else 110))
    result["figures"] = figures
    result["seconds_total_this_run"] = time.perf_counter() - t0
    result["machine"]["load_average_at_end"] = [round(v, 2) for v in os.getloadavg()]
    out_path.parent.mkdir(parents=True, exist_ok=True)
    write_results(out_path, result, indent=2)
    for name in ("greedy_basis", "rs_construct", "slmc"):
        if name in result:
            print(name, {k: (v["loglog_fit"]["exponent"], v["expected_exponent"])
                         for k, v in result[name].items() if k.startswith("vs_")})
    print(f"wrote {out_path} in {result['seconds_total_this_run']:.1f} s")
    return result


if __name__ == "__main__":
    main()
