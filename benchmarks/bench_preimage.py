"""Benchmark: USPS denoising with 256 kernel PCA components, sparsekm vs scikit-learn.

Denoises the 500 USPS test digits (50 per class, additive Gaussian noise sigma = 0.5)
with kernel PCA trained on 3000 clean training digits (300 per class), kernel
exp(-||x - y||^2 / 128), 256 components:

* sparsekm: ``KernelPCA(256).fit(X).denoise(X_noisy)`` — fixed-point pre-images
  (eq. 50) of the projections P_256 Phi(x), all 500 at once;
* scikit-learn: ``KernelPCA(256, fit_inverse_transform=True)`` — its learned
  pre-image map (kernel ridge regression from features to inputs, ``alpha=1``),
  ``inverse_transform(transform(X_noisy))``.

Both use the same eigen-solver choice ("auto": randomized for 256 of 3000). Times
include fitting; each side is run ``--repeat`` times and the fastest run is kept.
For context, scikit-learn's MSE is also reported for a small grid of its ridge
``alpha`` chosen on the test set itself (an optimistic baseline, not timed).

Usage::

    SPARSEKM_DATA=/path/to/data python benchmarks/bench_preimage.py [--repeat 3] [--quick]

Writes ``benchmarks/results/preimage.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import sklearn
from sklearn.decomposition import KernelPCA as SklearnKernelPCA

import sparsekm
from sparsekm.datasets import load_usps
from sparsekm.kernels import RBF
from sparsekm.models import KernelPCA, linear_pca_denoise

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402


def _msd(Z, T):
    return float(np.mean(np.sum((Z - T) ** 2, axis=1)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100/10 digits per class")
    parser.add_argument("--n-components", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "preimage.json"))
    args = parser.parse_args(argv)

    per_train, per_test = (100, 10) if args.quick else (300, 50)
    Xtr, ytr, Xte, yte = load_usps()
    rng = np.random.default_rng(args.seed)
    tr = np.concatenate([rng.choice(np.flatnonzero(ytr == d), per_train, replace=False)
                         for d in range(10)])
    te = np.concatenate([rng.choice(np.flatnonzero(yte == d), per_test, replace=False)
                         for d in range(10)])
    X, T = Xtr[tr], Xte[te]
    N = T + 0.5 * rng.normal(size=T.shape)
    n = args.n_components
    gamma = 1.0 / 128.0

    def ours():
        kp = KernelPCA(n_components=n, kernel=RBF(gamma), random_state=args.seed).fit(X)
        return kp.denoise(N, tol=1e-5).z

    def theirs(alpha=1.0):
        kp = SklearnKernelPCA(n_components=n, kernel="rbf", gamma=gamma,
                              fit_inverse_transform=True, alpha=alpha,
                              random_state=args.seed).fit(X)
        return kp.inverse_transform(kp.transform(N))

    def timed(func):
        best, out = float("inf"), None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = func()
            best = min(best, time.perf_counter() - t0)
        return best, out

    t_sk, Z_sk = timed(theirs)
    t_ours, Z_ours = timed(ours)
    alphas = [1e-3, 1e-2, 1e-1, 1.0]
    sk_grid = {str(a): _msd(theirs(a), T) for a in alphas}
    lin = {str(k): _msd(linear_pca_denoise(X, N, k), T) for k in (16, 32, 64, 128)}
    result = {
        "benchmark": "preimage",
        "task": f"denoise {len(T)} USPS test digits (Gaussian noise 0.5) with {n} kernel PCA "
                f"components trained on {len(X)} digits, k = exp(-||x-y||^2/128)",
        "mse_noisy": _msd(N, T),
        "sparsekm": {"mse": _msd(Z_ours, T), "seconds": t_ours,
                     "method": "KernelPCA.denoise (fixed-point pre-image, eq. 50)"},
        "sklearn": {"mse": _msd(Z_sk, T), "seconds": t_sk,
                    "method": "KernelPCA(fit_inverse_transform=True, alpha=1.0)"},
        "sklearn_mse_by_alpha_tuned_on_test": sk_grid,
        "linear_pca_mse_by_n": lin,
        "mse_ratio_sklearn_over_ours": _msd(Z_sk, T) / _msd(Z_ours, T),
        "time_ratio_ours_over_sklearn": t_ours / t_sk,
        "targets": {"mse_lower_than_sklearn": _msd(Z_ours, T) < _msd(Z_sk, T),
                    "time_at_most_2x_sklearn": t_ours <= 2.0 * t_sk},
        "repeat": args.repeat,
        "environment": {
            "sparsekm": sparsekm.__version__, "sklearn": sklearn.__version__,
            "numpy": np.__version__, "python": platform.python_version(),
            "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
            "note": "timings on a shared, loaded machine (several jobs in parallel)",
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_results(out, result, indent=2)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
