"""A dask ApproxSVC fit against the in-memory fit, and a worker killed mid-fit (issue 38).

Item 10: ``ApproxSVC(n_basis=40, kernel=RBF(gamma=0.2), C=1, solver="lbfgs",
random_state=0)`` on 20,000 x 10 rows (standard normal features, label
``sin(x0) + x1 x2 + 0.3 noise > 0``, seed 0), fitted on the numpy array and on dask
arrays of several partitionings, each with every partition's ``Gamma`` kept in worker
memory (``sparsekm.cache-bytes = 1e12``) and with none kept (``0``), on a
``LocalCluster`` of 2 worker processes x 1 thread. Recorded: the largest difference of
the decision values on 2,000 fresh rows, relative to their largest magnitude.

Item 9 (``--kill-runs N``): the same fit on 4 partitions, every partition kept, with a
worker process SIGKILLed ``--kill-after`` seconds after ``fit`` starts (during the
greedy steps); recorded per run: the seconds to a result or an error, the partitions
recomputed after the loss, and the relative difference to the in-memory fit. A run
that has neither after ``--deadline`` seconds is recorded as a hang.

Public API only, so the same script measures an older checkout (``PYTHONPATH=<old>/src
... --label before --kill-runs 0``). Writes/updates ``benchmarks/results/dask_equality.json``
(one entry per ``--label``), with the commit, package versions, BLAS library and kernel,
numpy's CPU features, threads and load. Usage (2 cores shared)::

    OMP_NUM_THREADS=1 python benchmarks/bench_dask_equality.py --label after --kill-runs 3
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402

OUT = Path(__file__).parent / "results" / "dask_equality.json"
PARAMS = dict(n_basis=40, C=1.0, solver="lbfgs", random_state=0)
CHUNKINGS = {"4 x 5000": (5000,) * 4, "7 (2858 x 6 + 2852)": (2858,) * 6 + (2852,),
             "uneven 9000/1/6000/4999": (9000, 1, 6000, 4999)}


def data(n=20000, n_test=2000):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 10))
    y = np.where(np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=n) > 0, 1, 0)
    return X, y, rng.normal(size=(n_test, 10))


def environment():
    """Commit, versions, BLAS, numpy CPU features, threads, load of the code under test
    (also for a ``git archive`` of an older commit, which has no
    ``sparsekm._provenance``; the file's own stamp comes from ``write_results``)."""
    import dask
    import distributed
    import scipy
    from threadpoolctl import threadpool_info

    import sparsekm

    root = Path(sparsekm.__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                     "src"], capture_output=True, text=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = None, None
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as feats
    return {
        "sparsekm_source": str(root), "commit": commit, "src_modified": dirty,
        "versions": {"python": sys.version.split()[0], "numpy": np.__version__,
                     "scipy": scipy.__version__, "dask": dask.__version__,
                     "distributed": distributed.__version__},
        "blas": [{k: p.get(k) for k in ("internal_api", "version", "architecture",
                                         "num_threads")}
                 for p in threadpool_info() if p.get("user_api") == "blas"],
        "numpy_cpu_features": sorted(k for k, v in feats.items() if v),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
        "cpus": os.cpu_count(),
        "load_average_1_5_15_min": [round(v, 2) for v in os.getloadavg()],
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def relative(f, f_ref):
    return float(np.abs(f - f_ref).max() / np.abs(f_ref).max())


def within(seconds, fn):
    """``fn()`` in a thread: ``("ok", value)``, ``("error", exc)`` or ``("hang", None)``."""
    box = {}

    def run():
        try:
            box["ok"] = fn()
        except Exception as exc:  # noqa: BLE001 - recorded
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        return "hang", None
    return ("ok", box["ok"]) if "ok" in box else ("error", box["error"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--kill-runs", type=int, default=3)
    parser.add_argument("--kill-after", type=float, default=1.5)
    parser.add_argument("--deadline", type=float, default=180.0)
    parser.add_argument("--commit", default=None,
                        help="commit of a source tree outside git (e.g. a git archive)")
    args = parser.parse_args(argv)

    import dask
    import dask.array as da
    import distributed

    from sparsekm.kernels import RBF
    from sparsekm.models import ApproxSVC

    before = environment()
    if args.commit:
        before["commit"] = args.commit
    X, y, Xt = data()
    t0 = time.perf_counter()
    ref = ApproxSVC(kernel=RBF(gamma=0.2), **PARAMS).fit(X, y)
    entry = {"in_memory": {"seconds": time.perf_counter() - t0, "n_iter": int(ref.n_iter_)},
             "equality": [], "worker_killed": []}
    f_ref = ref.decision_function(Xt)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0",
                                  silence_logs=logging.CRITICAL) as cluster, \
            distributed.Client(cluster) as client:
        for name, chunks in CHUNKINGS.items():
            for mode, budget in (("kept", 1e12), ("recomputed", 0)):
                with dask.config.set({"sparsekm.cache-bytes": budget}):
                    t0 = time.perf_counter()
                    clf = ApproxSVC(kernel=RBF(gamma=0.2), **PARAMS).fit(
                        da.from_array(X, chunks=(chunks, 10)), y)
                row = {"partitions": name, "caching": mode,
                       "seconds": time.perf_counter() - t0, "n_iter": int(clf.n_iter_),
                       "newton_steps": clf.dask_info_.get("n_newton_steps"),
                       "max_rel_diff_decision": relative(clf.decision_function(Xt), f_ref)}
                entry["equality"].append(row)
                print(json.dumps(row), flush=True)
        for run in range(args.kill_runs):
            client.wait_for_workers(2, timeout=120)
            victim = sorted(client.run(os.getpid).items())[0][1]
            timer = threading.Timer(args.kill_after, os.kill, (victim, signal.SIGKILL))

            def fit():
                with dask.config.set({"sparsekm.cache-bytes": 1e12}):
                    return ApproxSVC(kernel=RBF(gamma=0.2), **PARAMS).fit(
                        da.from_array(X, chunks=(5000, 10)), y)
            t0 = time.perf_counter()
            timer.start()
            status, value = within(args.deadline, fit)
            row = {"run": run, "kill_after_s": args.kill_after, "outcome": status,
                   "seconds": time.perf_counter() - t0}
            if status == "ok":
                row.update(partitions_lost=value.dask_info_.get("partitions_lost"),
                           max_rel_diff_decision=relative(value.decision_function(Xt), f_ref))
            elif status == "error":
                row["error"] = f"{type(value).__name__}: {value}"[:300]
            entry["worker_killed"].append(row)
            print(json.dumps(row), flush=True)
            if status == "hang":
                break
    entry["environment_before"] = before
    entry["load_average_after"] = [round(v, 2) for v in os.getloadavg()]
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    results[args.label] = entry
    write_results(OUT, results)
    if any(r["outcome"] == "hang" for r in entry["worker_killed"]):
        os._exit(0)  # a hung fit's thread would keep the cluster from closing


if __name__ == "__main__":
    main()
