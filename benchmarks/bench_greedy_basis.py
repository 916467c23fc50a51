"""GreedyBasis (pivoted incomplete Cholesky) vs scikit-learn's Nystroem at the same m.

Synthetic clusters, n = 100,000 training points in d = 50, m = 1000 basis vectors,
RBF kernel (scikit-learn's gamma="scale"), on two data sets: clusters of Zipf-distributed
sizes with low intrinsic dimension (the setting the greedy rule is made for) and equally
likely full-dimensional Gaussian clusters (where uniform landmarks are hard to beat on
the *mean* residual). Measures, for each method in the same run:

* wall time of ``fit`` and of ``fit_transform`` (features of all training points);
* peak memory of ``fit_transform`` (``tracemalloc``: numpy registers its buffers);
* the mean residual ``se(x) = k(x, x) - ||phi(x)||^2`` on held-out points (both
  feature maps are projections onto the span of their landmarks, so this is the
  squared feature-space distance to that span).

Targets (issue 5): greedy residual below Nystroem's; greedy time < 60 s on the
2-core development machine; peak memory O(n m).

Usage::

    python benchmarks/bench_greedy_basis.py            # full size, writes JSON
    python benchmarks/bench_greedy_basis.py --n 20000 --m 300 --out /tmp/x.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import Nystroem
from threadpoolctl import threadpool_limits

from sparsekm.approx import GreedyBasis
from sparsekm.kernels import RBF

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402

DATASETS = {
    "clusters-lowdim-zipf": "50 clusters with Zipf sizes (p_k ~ 1/k), each a 5-dim Gaussian on a "
                            "random affine subspace of R^d plus N(0, 0.01 I) noise; centres N(0, 9 I)",
    "clusters-lowdim-zipf-bounded": "as clusters-lowdim-zipf but uniform in a 5-dim box "
                                    "[-1.7, 1.7]^5 (bounded support, no Gaussian tails)",
    "clusters-isotropic": "50 equally likely full-dimensional Gaussian clusters, centres N(0, 9 I), "
                          "widths U(0.5, 1.5)",
}


def make_clusters(kind, n, d, rng, n_centers=50, intrinsic_dim=5):
    centers = rng.normal(scale=3.0, size=(n_centers, d))
    if kind == "clusters-isotropic":
        scales = rng.uniform(0.5, 1.5, size=n_centers)
        labels = rng.integers(n_centers, size=n)
        return centers[labels] + scales[labels, None] * rng.normal(size=(n, d))
    if kind in ("clusters-lowdim-zipf", "clusters-lowdim-zipf-bounded"):
        bases = rng.normal(size=(n_centers, d, intrinsic_dim)) / np.sqrt(intrinsic_dim)
        p = 1.0 / np.arange(1, n_centers + 1)
        labels = rng.choice(n_centers, size=n, p=p / p.sum())
        if kind.endswith("bounded"):
            Z = rng.uniform(-1.7, 1.7, size=(n, intrinsic_dim))
        else:
            Z = rng.normal(size=(n, intrinsic_dim))
        X = centers[labels] + 0.1 * rng.normal(size=(n, d))
        for k in range(n_centers):  # per cluster to keep memory O(n d)
            idx = np.flatnonzero(labels == k)
            X[idx] += Z[idx] @ bases[k].T
        return X
    raise ValueError(f"unknown data set {kind!r}; choose from {list(DATASETS)}")


def measure(fn, *args):
    """(result, wall seconds, process CPU seconds, peak traced bytes)."""
    gc.collect()
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, seconds, cpu, peak


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=50)
    parser.add_argument("--m", type=int, default=1000)
    parser.add_argument("--n-test", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads for both methods (default 1: on the shared, loaded "
                             "2-core machine threaded BLAS mostly spins)")
    parser.add_argument("--data", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "greedy_basis.json"))
    args = parser.parse_args(argv)

    results = {"n": args.n, "d": args.d, "m": args.m, "n_test": args.n_test,
               "blas_threads": args.threads,
               "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                           "load_average_at_start": os.getloadavg()},
               "note": ("shared 2-core machine under load from other jobs: wall times are "
                        "noisy, process CPU times are given beside them"),
               "datasets": {}}
    for kind in args.data:
        with threadpool_limits(args.threads):
            results["datasets"][kind] = run_one(kind, args)
    results["machine"]["load_average_at_end"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_results(out, results, indent=2)
    print(f"wrote {out}")


def run_one(kind, args):
    rng = np.random.default_rng(args.seed)
    X_all = make_clusters(kind, args.n + args.n_test, args.d, rng)
    X, X_test = X_all[:args.n], X_all[args.n:]
    gamma = 1.0 / (args.d * X.var())  # scikit-learn's gamma="scale"
    kernel = RBF(gamma)
    res = {"description": DATASETS[kind], "gamma": gamma}

    # -- GreedyBasis: Algorithm 1 (greedy pivots) and randomly pivoted Cholesky -----------
    for key, pivoting in (("greedy", "greedy"), ("greedy_random_pivoting", "random")):
        gb = GreedyBasis(n_basis=args.m, tol=0.0, kernel=kernel, pivoting=pivoting,
                         random_state=args.seed)
        Gamma, t_fit, cpu, peak = measure(gb.fit_transform, X)
        del Gamma
        r = gb.approximation_error(X_test)
        res[key] = {
            "pivoting": pivoting,
            # fit yields Gamma of the training set as a by-product: fit == fit_transform
            "fit_transform_seconds": t_fit,
            "fit_transform_cpu_seconds": cpu,
            "peak_memory_bytes": peak,
            "peak_memory_over_n_m_float64": peak / (8 * args.n * args.m),
            "heldout_mean_residual": float(r.mean()),
            "heldout_max_residual": float(r.max()),
            "train_mean_residual": gb.mse_,
            "n_basis": gb.n_basis_,
            "n_kernel_evaluations": gb.n_kernel_evaluations_,
        }
        print(kind, key, json.dumps(res[key], indent=1), flush=True)
        del gb
        gc.collect()

    # -- Nystroem (uniform landmarks) ---------------------------------------------------
    ny = Nystroem(kernel="rbf", gamma=gamma, n_components=args.m, random_state=args.seed)
    _, t_fit_only, cpu_fit_only, _ = measure(ny.fit, X)
    ny = Nystroem(kernel="rbf", gamma=gamma, n_components=args.m, random_state=args.seed)
    F, t_ft, cpu, peak = measure(ny.fit_transform, X)
    del F
    Ft = ny.transform(X_test)
    r = np.maximum(1.0 - np.einsum("ij,ij->i", Ft, Ft), 0.0)
    res["nystroem"] = {
        "fit_transform_seconds": t_ft,
        "fit_transform_cpu_seconds": cpu,
        "fit_seconds": t_fit_only,
        "fit_cpu_seconds": cpu_fit_only,
        "peak_memory_bytes": peak,
        "peak_memory_over_n_m_float64": peak / (8 * args.n * args.m),
        "heldout_mean_residual": float(r.mean()),
        "heldout_max_residual": float(r.max()),
        "n_kernel_evaluations": args.n * args.m,
    }
    print(kind, "nystroem", json.dumps(res["nystroem"], indent=1), flush=True)
    g, ny_r = res["greedy"], res["nystroem"]
    res["targets"] = {
        "greedy_mean_residual_lower_than_nystroem":
            g["heldout_mean_residual"] < ny_r["heldout_mean_residual"],
        "mean_residual_ratio_greedy_over_nystroem":
            g["heldout_mean_residual"] / ny_r["heldout_mean_residual"],
        "max_residual_ratio_greedy_over_nystroem":
            g["heldout_max_residual"] / ny_r["heldout_max_residual"],
        "greedy_time_under_60s": g["fit_transform_seconds"] < 60.0,
        "greedy_cpu_time_under_60s": g["fit_transform_cpu_seconds"] < 60.0,
        "random_pivoting_mean_residual_ratio_over_nystroem":
            res["greedy_random_pivoting"]["heldout_mean_residual"] / ny_r["heldout_mean_residual"],
    }
    print(kind, json.dumps(res["targets"], indent=1), flush=True)
    return res


if __name__ == "__main__":
    main()
