"""compress's construct+refine row, built once or twice (issue 36), side by side.

Since 57090f6 ``compress`` of a regressor refines the ``construct`` candidate's set for
the ``construct+refine`` candidate instead of constructing it a second time. This runs,
in one process and alternately, the ``method="auto"`` call (the new row) and
``method=["construct+refine"]`` alone (a construction from scratch, as the row was built
before), on friedman1 (5,000 rows, noise 1, standardised; a ``KernelRidge(alpha=0.01,
gamma=0.03)`` on 3,000 training rows, 1,000 validation rows, 150 vectors), and records
the seconds and validation RMSEs of both.

Usage: ``python benchmarks/bench_regression_refine_reuse.py [--repeats R] [--out F]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import machine, write_results  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "regression_refine_reuse.json"


def run(repeats, n=5000, n_vectors=150):
    from sklearn.datasets import make_friedman1
    from sklearn.kernel_ridge import KernelRidge

    from sparsekm.compression import compress

    X, y = make_friedman1(n_samples=n, noise=1.0, random_state=0)
    a, b = int(0.6 * n), int(0.8 * n)
    X = (X - X[:a].mean(0)) / X[:a].std(0)
    y = (y - y[:a].mean()) / y[:a].std()
    krr = KernelRidge(alpha=0.01, kernel="rbf", gamma=0.03).fit(X[:a], y[:a])
    kw = dict(n_vectors=n_vectors, X_train=X[:a], y_train=y[:a], random_state=0, timing=True)
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        new = compress(krr, X[a:b], y[a:b], **kw)
        t_new = time.perf_counter() - t0
        old = compress(krr, X[a:b], y[a:b], method=["construct+refine"], **kw)
        rows = {r["method"]: r for r in new.compress_report_["rows"]}
        scratch = old.compress_report_["rows"][0]
        runs.append({"auto_call_seconds": t_new,
                     "construct_seconds": rows["construct"]["seconds"],
                     "construct_refine_reused_seconds": rows["construct+refine"]["seconds"],
                     "construct_refine_reused_val_rmse": rows["construct+refine"]["val_error"],
                     "construct_refine_scratch_seconds": scratch["seconds"],
                     "construct_refine_scratch_val_rmse": scratch["val_error"]})
        print(runs[-1], flush=True)
    return {"machine": machine(), "n_train": a, "n_vectors": n_vectors, "runs": runs}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    write_results(args.out, run(args.repeats))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
