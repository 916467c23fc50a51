"""Compressing a KernelRidge and a GaussianProcessRegressor against the peers (issue 36).

For each data set (shipped by a package, never downloaded): a 60/20/20 split (train /
validation / test, seeded), X standardised and y standardised with the training rows'
statistics (RMSE reported in y's units). The originals, fitted the usual way on the
training rows:

* ``KernelRidge(kernel="rbf")`` with ``alpha`` and ``gamma`` by 3-fold grid search;
* ``GaussianProcessRegressor(C * RBF + White, normalize_y=True)``, hyperparameters by
  maximising the marginal likelihood (scikit-learn's optimiser, no restarts), on at most
  ``--gp-rows`` training rows (its cost is cubic).

At budgets of 1 %, 2 % and 5 % of the training rows, each gets
``sparsekm.compress(model, X_val, y_val, n_vectors=b, X_train, y_train)`` and the peers a
user would pick at the same kernel evaluations per prediction: Nyström landmarks (uniform,
k-means) + ridge with ``lam`` chosen on the validation rows (scikit-learn's
``Nystroem`` + ``Ridge``, written as an expansion). Reported: test RMSE with a bootstrap
standard error (200 resamples of the test rows), build seconds, and the originals'.
Nothing is chosen on the test rows. The sparse variational GP peer (GPyTorch, optional
extra ``sparsekm[bench]``) is ``bench_regression_svgp.py``; its ``--merge`` adds it to
this JSON's cells. The larger sets are ``bench_regression_large.py``.

Usage: ``python benchmarks/bench_regression.py [--quick] [--friedman-n N] [--out F]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import (
    machine,  # noqa: E402
    write_results,  # noqa: E402
)

BUDGETS = (0.01, 0.02, 0.05)
OUT = Path(__file__).resolve().parent / "results" / "regression.json"
FIG = Path(__file__).resolve().parents[1] / "docs" / "figures" / "regression_budget.png"


def _environment():
    """Commit, versions, BLAS kernel and numpy's CPU features (docs: honesty rules)."""
    import subprocess

    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    import sparsekm

    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parent, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, check=True,
                                    cwd=Path(__file__).resolve().parent).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = None, None
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
        cpu = sorted(k for k, v in feats.items() if v)
    except ImportError:  # pragma: no cover - older numpy
        cpu = None
    return {"commit": commit, "uncommitted_changes": dirty,
            "versions": {"numpy": np.__version__, "scipy": scipy.__version__,
                         "scikit-learn": sklearn.__version__,
                         "sparsekm": getattr(sparsekm, "__version__", None)},
            "blas_kernels": sorted({f"{i.get('internal_api')} {i.get('architecture')}"
                                    for i in threadpool_info() if i.get("user_api") == "blas"}),
            "numpy_cpu_features": cpu}


def _datasets(friedman_n):
    from sklearn.datasets import load_diabetes, make_friedman1

    X, y = load_diabetes(return_X_y=True)
    yield "diabetes (sklearn, 442 rows)", X, y
    X, y = make_friedman1(n_samples=friedman_n, noise=1.0, random_state=0)
    yield f"friedman1 ({friedman_n} rows, noise 1)", X, y


def _split(X, y, seed=0):
    rng = np.random.default_rng(seed)
    idx = rng.permutation(X.shape[0])
    a, b = int(0.6 * len(idx)), int(0.8 * len(idx))
    tr, va, te = idx[:a], idx[a:b], idx[b:]
    mu, sd = X[tr].mean(0), X[tr].std(0)
    sd[sd == 0] = 1.0
    ym, ys = y[tr].mean(), y[tr].std()
    Xs = (X - mu) / sd
    ysd = (y - ym) / ys
    return (Xs[tr], ysd[tr], Xs[va], ysd[va], Xs[te], ysd[te]), ys


def _rmse_se(pred, y, scale, n_boot=200, seed=0):
    err = (pred - y) ** 2
    rng = np.random.default_rng(seed)
    boots = [np.sqrt(err[rng.integers(0, err.size, err.size)].mean()) for _ in range(n_boot)]
    return float(np.sqrt(err.mean()) * scale), float(np.std(boots) * scale)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _originals(Xtr, ytr, gp_rows):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process import kernels as gpk
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV

    d = Xtr.shape[1]
    grid = {"alpha": [1e-3, 1e-2, 1e-1, 1.0],
            "gamma": [g / d for g in (0.03, 0.1, 0.3, 1.0, 3.0)]}
    krr, t_krr = _timed(lambda: GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=3,
                                             scoring="neg_mean_squared_error")
                        .fit(Xtr, ytr).best_estimator_)
    m = min(gp_rows, Xtr.shape[0])
    kernel = gpk.ConstantKernel(1.0) * gpk.RBF(np.sqrt(d)) + gpk.WhiteKernel(0.1)
    gpr, t_gp = _timed(lambda: GaussianProcessRegressor(kernel, normalize_y=True,
                                                        random_state=0).fit(Xtr[:m], ytr[:m]))
    return {"KernelRidge": (krr, t_krr, Xtr.shape[0]), "GaussianProcessRegressor": (gpr, t_gp, m)}


def _peer(kernel, Xtr, ytr, Xva, yva, b, how):
    from sparsekm.approx import nystroem_ridge
    from sparsekm.compression._any import LAM_GRID

    return nystroem_ridge(kernel, Xtr, ytr, b, method=how, lam=LAM_GRID, X_val=Xva, y_val=yva,
                          random_state=0).expansion


def run(friedman_n, gp_rows, quick=False):
    from sparsekm import KernelExpansion
    from sparsekm.compression import compress

    results = {"machine": machine(), "environment": _environment(),
               "budgets_fraction_of_train": list(BUDGETS),
               "svgp": "not run here: bench_regression_svgp.py --merge adds it",
               "datasets": []}
    for name, X, y in _datasets(friedman_n):
        (Xtr, ytr, Xva, yva, Xte, yte), scale = _split(X, y)
        entry = {"name": name, "n_train": int(Xtr.shape[0]), "n_val": int(Xva.shape[0]),
                 "n_test": int(Xte.shape[0]), "models": {}}
        for mname, (model, t_fit, n_fit) in _originals(Xtr, ytr, gp_rows).items():
            rmse, se = _rmse_se(model.predict(Xte), yte, scale)
            kernel = KernelExpansion.from_estimator(model).kernel
            rows = []
            for frac in BUDGETS[:1] if quick else BUDGETS:
                b = max(2, int(round(frac * Xtr.shape[0])))
                Xf, yf = Xtr[:n_fit], ytr[:n_fit]
                small, t_c = _timed(partial(compress, model, Xva, yva, n_vectors=b, X_train=Xf,
                                            y_train=yf, random_state=0, timing=True))
                rep = small.compress_report_
                row = {"budget_fraction": frac, "n_vectors": b,
                       "compress": dict(zip(("rmse", "se"), _rmse_se(small.predict(Xte), yte,
                                                                       scale)),
                                        seconds=t_c, chosen=rep["rows"][rep["chosen"]]["method"],
                                        n_vectors=int(small.n_vectors_))}
                for how in ("uniform", "kmeans"):
                    psi, t_p = _timed(partial(_peer, kernel, Xf, yf, Xva, yva, b, how))
                    row[f"nystroem_{how}"] = dict(zip(("rmse", "se"), _rmse_se(
                        psi(Xte), yte, scale)), seconds=t_p)
                best_peer = min((row["nystroem_uniform"], row["nystroem_kmeans"]),
                                key=lambda r: r["rmse"])
                row["target_rmse_le_best_peer_plus_se"] = bool(
                    row["compress"]["rmse"] <= best_peer["rmse"] + row["compress"]["se"])
                row["target_time_le_max(3 peer, 30 s)"] = bool(
                    t_c <= max(3 * max(row["nystroem_uniform"]["seconds"],
                                       row["nystroem_kmeans"]["seconds"]), 30.0))
                if frac == 0.05:
                    row["target_within_2pct_of_original"] = bool(
                        row["compress"]["rmse"] <= 1.02 * rmse)
                rows.append(row)
                print(f"{name} {mname} b={b}: compress {row['compress']['rmse']:.4g} "
                      f"({row['compress']['chosen']}, {t_c:.2f} s), uniform "
                      f"{row['nystroem_uniform']['rmse']:.4g}, kmeans "
                      f"{row['nystroem_kmeans']['rmse']:.4g}, original {rmse:.4g}", flush=True)
            entry["models"][mname] = {"fit_seconds": t_fit, "fit_rows": n_fit,
                                      "test_rmse": rmse, "test_rmse_se": se, "budgets": rows}
        results["datasets"].append(entry)
    return results


def figure(res, path):
    """Test RMSE against kernel evaluations per prediction, one panel per data set and model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(d, m) for d in res["datasets"] for m in d["models"]]
    ncols = min(4, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (d, m) in zip(axes.flat, panels):
        rows = d["models"][m]["budgets"]
        b = [r["n_vectors"] for r in rows]
        for key, style in (("compress", "o-"), ("nystroem_uniform", "s--"),
                           ("nystroem_kmeans", "^--"), ("svgp", "d-.")):
            if not all(key in r for r in rows):
                continue
            ax.errorbar(b, [r[key]["rmse"] for r in rows], [r[key]["se"] for r in rows],
                        fmt=style, ms=4, capsize=2, label=key.replace("_", " "))
        ax.axhline(d["models"][m]["test_rmse"], color="0.3", ls=":", label="original")
        size = d["name"].split(" (")[1].split(" rows")[0].split(", ")[-1]
        ax.set_title(f"{d['name'].split(' (')[0]} {size}: {m.replace('Regressor', '')}",
                     fontsize=8)
        ax.set_xlabel("kernel evaluations per prediction", fontsize=7)
        ax.set_ylabel("test RMSE", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, one budget")
    p.add_argument("--friedman-n", type=int, default=None)
    p.add_argument("--gp-rows", type=int, default=1500)
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--fig", default=None, help=f"figure (default {FIG} unless --quick)")
    args = p.parse_args(argv)
    n = args.friedman_n or (600 if args.quick else 5000)
    res = run(n, min(args.gp_rows, 300) if args.quick else args.gp_rows, quick=args.quick)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_results(args.out, res)
    print(f"wrote {args.out}")
    fig = args.fig or (None if args.quick else str(FIG))
    if fig:
        figure(res, fig)
        print(f"wrote {fig}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
