"""Benchmark: the solvers whose kernel sums run through the engine, before vs after.

Times the workloads of ``bench_preimage.py --quick`` and ``bench_reduce.py --quick``
that call ``Kernel.weighted_sums`` / ``gradient_sum`` (USPS, RBF ``gamma = 1/128``):

* ``denoise``: ``KernelPCA(256).fit(X).denoise(X_noisy)`` on 1000 training / 100 test
  digits (fixed-point pre-images, eq. 50, all at once);
* ``construct_rs10``, ``construct_rs10_refine``: RS-10 per classifier of the
  one-vs-rest ``SVC(C=10)`` on the first 2000 training digits (phase 1: fixed-point
  one-term steps; phase 2: ``gradient_sum``);
* ``construct_shared10``: ten shared vectors for all ten classifiers (eq. 18-19,
  ``reduced_set._one_term``);
* ``gradient_poly``: gradient pre-images of a 3-output polynomial-kernel expansion.

Each is timed in two modes: ``cpu1`` (one thread, CPU seconds: the figure that
survives a loaded machine) and ``wall`` (default threads, wall clock); best of
``--repeat``. To compare two versions of the library side by side, run the script
with each one on ``PYTHONPATH``, alternating::

    git archive a744aca src | tar -x -C /tmp/before
    for v in /tmp/before/src src /tmp/before/src src; do
        PYTHONPATH=$v python benchmarks/bench_solver_sums.py --tag $v
    done

Writes (appends a run to) ``benchmarks/results/solver_sums.json``.
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
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402


def _workloads():
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from sparsekm import KernelExpansion
    from sparsekm.datasets import load_usps
    from sparsekm.kernels import RBF, Polynomial
    from sparsekm.models import KernelPCA
    from sparsekm.preimage import gradient
    from sparsekm.reduced_set import construct

    Xtr, ytr, Xte, yte = load_usps()
    rng = np.random.default_rng(0)
    tr = np.concatenate([rng.choice(np.flatnonzero(ytr == d), 100, replace=False)
                         for d in range(10)])
    te = np.concatenate([rng.choice(np.flatnonzero(yte == d), 10, replace=False)
                         for d in range(10)])
    X, T = Xtr[tr], Xte[te]
    N = T + 0.5 * rng.normal(size=T.shape)
    ovr = OneVsRestClassifier(SVC(C=10, gamma=1 / 128)).fit(Xtr[:2000], ytr[:2000])
    E = KernelExpansion.from_estimator(ovr)
    psi = KernelExpansion(Xtr[:1000], np.abs(rng.normal(size=(1000, 3))),
                          Polynomial(3, 1.0, 1 / 256))

    def denoise():
        kp = KernelPCA(n_components=256, kernel=RBF(1 / 128), random_state=0).fit(X)
        return kp.denoise(N, tol=1e-5).z

    return {
        "denoise": denoise,
        "construct_rs10": lambda: construct(E, 10, shared=False, random_state=0).objective,
        "construct_rs10_refine": lambda: construct(E, 10, shared=False, refine=True,
                                                   refine_max_iter=30,
                                                   random_state=0).objective,
        "construct_shared10": lambda: construct(E, 10, shared=True, random_state=0).objective,
        "gradient_poly": lambda: gradient(psi, n_init=2, max_iter=30, random_state=0).z,
    }


def _best(func, repeat, clock):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = clock()
        out = func()
        best = min(best, clock() - t0)
    return best, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tag", default="")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                             "solver_sums.json"))
    args = parser.parse_args(argv)

    import sparsekm

    run = {"tag": args.tag, "sparsekm": sparsekm.__file__, "cpu1": {}, "wall": {},
           "checksum": {}}
    for name, func in _workloads().items():
        with threadpool_limits(1), sparsekm.config.config_context(n_threads=1):
            run["cpu1"][name], out = _best(func, args.repeat, time.process_time)
        run["wall"][name], _ = _best(func, args.repeat, time.perf_counter)
        run["checksum"][name] = float(np.sum(np.abs(out)))
    run["environment"] = {"numpy": np.__version__, "python": platform.python_version(),
                          "cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
                          "note": "shared, loaded machine; compare cpu1 figures"}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = json.loads(out.read_text()) if out.exists() else []
    runs.append(run)
    write_results(out, runs, indent=2)
    print(json.dumps(run, indent=2))
    return run


if __name__ == "__main__":
    main()
