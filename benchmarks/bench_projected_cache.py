"""ProjectedKernel: evaluating an expansion with and without the cached projection of
its vectors (issue 26).

``KernelExpansion(Z, beta, ProjectedKernel(RBF, RandomProjection(d, s)))`` evaluates
``k(x P, z P)``. Before the cache, every ``decision_function`` call re-projected all
``N_z`` vectors (``O(N_z d s)``); now ``Z P`` is computed once per expansion and kept.
"Before" is measured on the very code path it had: the kernel's ``mmv`` given a
writable copy of the vectors, which is never cached. Both give identical outputs
(checked). Times are the least process-CPU seconds of interleaved repeats with one
BLAS thread.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_projected_cache.py [--quick] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import machine, timed_interleaved, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results" / "projected_cache.json"


def run_case(n_vectors, n_rows, d, s, repeat, rng):
    from sparsekm import KernelExpansion
    from sparsekm.kernels import RBF, ProjectedKernel, RandomProjection

    kernel = ProjectedKernel(RBF(1.0 / d), RandomProjection(d, s, random_state=0))
    psi = KernelExpansion(rng.normal(size=(n_vectors, d)), rng.normal(size=n_vectors), kernel)
    X = rng.normal(size=(n_rows, d))
    writable = np.array(psi.vectors)  # the uncached path: projected on every call
    before = kernel.mmv(X, writable, psi.coef)
    after = psi.decision_function(X)
    np.testing.assert_array_equal(after, before)
    _, cpu = timed_interleaved({"before": lambda: kernel.mmv(X, writable, psi.coef),
                                "after": lambda: psi.decision_function(X)}, repeat)
    return {"n_vectors": n_vectors, "rows_per_call": n_rows, "d": d, "s": s,
            "before_ms": 1e3 * cpu["before"], "after_ms": 1e3 * cpu["after"],
            "speedup": cpu["before"] / cpu["after"], "outputs_identical": True}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    cases = ([(200, 10)] if args.quick else
             [(500, 1), (500, 100), (2000, 1), (2000, 100), (2000, 1000)])
    d, s = (784, 200) if args.quick else (784, 1000)
    with threadpool_limits(limits=1):
        rows = [run_case(n, m, d, s, 3 if args.quick else 9, rng) for n, m in cases]
    for r in rows:
        print(f"N_z={r['n_vectors']:5d} rows={r['rows_per_call']:5d}: before "
              f"{r['before_ms']:8.2f} ms, after {r['after_ms']:8.2f} ms ({r['speedup']:.1f}x)")
    result = {"benchmark": "ProjectedKernel cached projection of the expansion vectors",
              "timing": "least process-CPU time of interleaved repeats, one BLAS thread",
              "machine": machine(), "cases": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_results(Path(args.out), result, indent=1)
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
