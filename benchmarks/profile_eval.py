"""Where the time of an RBF expansion evaluation goes (the profile behind docs/performance.md).

Two views of ``KernelExpansion.decision_function`` on the USPS-sized problem
(2007 x 256 inputs, 2640 expansion vectors, 10 outputs; synthetic data of the
same shape and range, so no data files are needed):

1. a pyinstrument call profile (if pyinstrument is installed), single-threaded
   so that every sample lands in the main thread;
2. a pass-by-pass breakdown of one row block (198 x 2640, the default block):
   CPU nanoseconds per kernel value for the GEMM and for each element-wise pass.

Writes ``benchmarks/results/profile_eval.json`` (and ``profile_eval.txt`` with the
call profile). Usage: ``python benchmarks/profile_eval.py [--repeat 20]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from sparsekm import KernelExpansion
from sparsekm.config import threads
from sparsekm.kernels import RBF

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
GAMMA = 1 / 128


def ns_per_entry(func, entries, repeat):
    func()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time_ns()
        func()
        best = min(best, time.process_time_ns() - t0)
    return best / entries


def breakdown(dtype, repeat, rng):
    rows, m, d, k = 198, 2640, 256, 10
    X = rng.uniform(-1, 1, size=(rows, d)).astype(dtype)
    Z = rng.uniform(-1, 1, size=(m, d)).astype(dtype)
    C = rng.standard_normal((m, k)).astype(dtype)
    x_sq, z_sq = np.einsum("ij,ij->i", X, X), np.einsum("ij,ij->i", Z, Z)
    D = X @ Z.T
    # exp and the product with coef get realistic inputs (-gamma r2 and kernel values);
    # the other passes only move D around, whatever its values.
    U = np.minimum(-GAMMA * (x_sq[:, None] + z_sq[None, :] - 2 * D), 0).astype(dtype)
    K, E = np.exp(U), np.empty_like(U)
    out = np.empty((rows, k), dtype)
    n = rows * m
    T = {
        "gemm X Z^T": lambda: np.matmul(X, Z.T, out=D),
        "scale (D *= c)": lambda: np.multiply(D, -2.0, out=D),
        "add row norms": lambda: np.add(D, x_sq[:, None], out=D),
        "add column norms": lambda: np.add(D, z_sq[None, :], out=D),
        "clip (maximum/minimum)": lambda: np.minimum(D, 0.0, out=D),
        "exp": lambda: np.exp(U, out=E),
        "K @ coef (10 outputs)": lambda: np.matmul(K, C, out=out),
    }
    per = {name: ns_per_entry(f, n, repeat) for name, f in T.items()}
    # Both engines: scale by -2, two norm additions, clip, scale by -gamma, exp, @ coef.
    total = (per["gemm X Z^T"] + 2 * per["scale (D *= c)"] + per["add row norms"]
             + per["add column norms"] + per["clip (maximum/minimum)"] + per["exp"]
             + per["K @ coef (10 outputs)"])
    return {"ns_per_kernel_value": per, "sum": total, "gemm_share": per["gemm X Z^T"] / total}


def call_profile(rng):
    try:
        from pyinstrument import Profiler
    except ImportError:
        return None
    X = rng.uniform(-1, 1, size=(2007, 256))
    psi = KernelExpansion(rng.uniform(-1, 1, size=(2640, 256)), rng.standard_normal((2640, 10)),
                          RBF(GAMMA))
    psi(X)
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for _ in range(10):
        psi.decision_function(X)
    profiler.stop()
    return profiler.output_text(unicode=False, show_all=False)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    with threads(1):
        out = {"benchmark": "profile_eval", "date": time.strftime("%Y-%m-%d %H:%M:%S"),
               "clock": "process_time, one thread",
               "block": {"rows": 198, "n_terms": 2640, "n_features": 256, "n_outputs": 10},
               "float64": breakdown(np.float64, args.repeat, rng),
               "float32": breakdown(np.float32, args.repeat, rng)}
        text = call_profile(rng)
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_results((RESULTS / "profile_eval.json"), out, indent=2)
    if text is not None:
        # the profile's provenance: the stamp just written to profile_eval.json
        commit = out["provenance"].get("commit")
        (RESULTS / "profile_eval.txt").write_text(
            f"# commit {commit}; provenance: profile_eval.json (same run)\n{text}")
        print(text)
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
