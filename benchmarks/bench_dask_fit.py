"""ApproxSVC fitted on a dask.distributed LocalCluster beyond the workers' memory.

Franc & Hlaváč's training-set approximation (Algorithm 1, greedy basis of ``m``
vectors) and the linear SVM on it (squared-hinge primal, L-BFGS), run over the row
partitions of a ``dask.array`` on a ``LocalCluster`` of 2 worker processes x 1
thread with a 1 GiB memory limit each (``sparsekm.approx.dask_fits``).

Data: ringnorm's generator (Breiman 1996) with 20 features: class +1 ~ N(0, 4 I),
class -1 ~ N(a, I), a = 2 / sqrt(20), equal priors. Each chunk of rows (and its
labels) is generated ON the workers from its own seed (``default_rng([seed,
chunk])``), so 10^7 x 20 float64 (1.6 GB, more than the 2 GiB cluster holds beside
the factor) never exists in one place. Sizes 10^5, 10^6, 10^7 rows; the same fit
in memory (``ApproxSVC(solver="lbfgs")`` on numpy arrays, this process) at the
largest size that fits the in-memory budget (``--in-memory-max``), compared on the
test set (relative difference of the decision values).

Recorded per size: wall time, the mode chosen (per-partition factor kept in worker
memory or recomputed from the partitions each step), seconds per pivot and per
L-BFGS iteration/evaluation, peak RSS of every worker process (sampled every
0.2 s), worker restarts (addresses seen beyond the initial workers; must be 0),
test error on 10^5 fresh rows.

Writes ``benchmarks/results/dask_fit.json``. Usage (2 cores shared with others)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_dask_fit.py \
        [--sizes 100000 1000000 10000000] [--n-basis 50] [--max-iter -1]

``--cache-modes off partial full`` (issue 25, item 3) instead fits each size once per
caching mode, each on a fresh cluster in this one process, and writes
``benchmarks/results/dask_fit_partial_cache.json``: ``off`` keeps no partition's state
(``sparsekm.cache-bytes = 0``, the old recomputed mode), ``partial`` runs the default
budget (1/3 of each worker's memory limit) on workers of ``--partial-worker-gib`` so
that only part of the state fits, ``full`` the default budget on
``--worker-memory-gib`` workers (everything fits at 10^6), ``partial-headroom`` the
partial budget on ``--worker-memory-gib`` workers (no spilling). Recorded beside the wall
times: the partitions kept, the CPU seconds of the worker processes (sampled, so
robust to the other jobs on the machine), per pivot and per L-BFGS evaluation, and
whether every mode selected the same basis and decision values as ``full``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from sparsekm.kernels import RBF
from sparsekm.models import ApproxSVC

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import PeriodicSampler, write_results  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
GiB = 2**30
D = 20
A = 2.0 / np.sqrt(D)


def ringnorm_chunk(seed, chunk, n_rows):
    """Rows and labels of one chunk (the same for the same ``(seed, chunk)``)."""
    rng = np.random.default_rng([seed, chunk])
    y = rng.integers(0, 2, size=n_rows)
    X = rng.standard_normal((n_rows, D))
    X[y == 1] *= 2.0  # class +1: N(0, 4 I)
    X[y == 0] += A  # class -1: N(a, I)
    return X, y


def _chunk_X(seed, chunk, n_rows):
    return ringnorm_chunk(seed, chunk, n_rows)[0]


def _chunk_y(seed, chunk, n_rows):
    return ringnorm_chunk(seed, chunk, n_rows)[1]


def dask_ringnorm(n, chunk_rows, seed):
    import dask
    import dask.array as da

    sizes = [chunk_rows] * (n // chunk_rows) + ([n % chunk_rows] if n % chunk_rows else [])
    X = da.concatenate([da.from_delayed(dask.delayed(_chunk_X)(seed, k, s), shape=(s, D),
                                        dtype=np.float64) for k, s in enumerate(sizes)])
    y = da.concatenate([da.from_delayed(dask.delayed(_chunk_y)(seed, k, s), shape=(s,),
                                        dtype=np.int64) for k, s in enumerate(sizes)])
    return X, y


def numpy_ringnorm(n, chunk_rows, seed):
    sizes = [chunk_rows] * (n // chunk_rows) + ([n % chunk_rows] if n % chunk_rows else [])
    parts = [ringnorm_chunk(seed, k, s) for k, s in enumerate(sizes)]
    return np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


class ClusterMonitor(PeriodicSampler):
    """Peak RSS and CPU seconds of every cluster process, and every worker address seen."""

    def __init__(self, client, interval=0.2):
        import psutil

        super().__init__(interval)
        self.client, self.psutil = client, psutil
        self.peak = {}
        self.cpu = {}  # pid -> latest user + system CPU seconds
        self.cpu_trace = []  # (perf_counter, CPU seconds of all cluster processes)
        self.addresses = set(client.scheduler_info()["workers"])
        self.initial = set(self.addresses)

    def _sample(self):
        me = self.psutil.Process(os.getpid())
        for p in me.children(recursive=True):
            try:
                self.peak[p.pid] = max(self.peak.get(p.pid, 0), p.memory_info().rss)
                t = p.cpu_times()
                self.cpu[p.pid] = t.user + t.system
            except self.psutil.Error:
                continue
        self.cpu_trace.append((time.perf_counter(), sum(self.cpu.values())))
        try:
            self.addresses |= set(self.client.scheduler_info()["workers"])
        except Exception:  # noqa: BLE001 - sampling only
            pass

    @property
    def restarts(self):
        return len(self.addresses - self.initial)

    def cpu_between(self, t0, t1):
        """Cluster CPU seconds between two ``perf_counter`` times (nearest samples)."""
        ts = np.array([t for t, _ in self.cpu_trace])
        cs = np.array([c for _, c in self.cpu_trace])
        return float(np.interp(t1, ts, cs) - np.interp(t0, ts, cs))


def _worker_pids():
    return os.getpid()


def _cache_run(args, n, mode, worker_gib, params, X_test, y_test, ref):
    """One fit of ``n`` rows on a fresh cluster of ``worker_gib`` workers in caching ``mode``."""
    import dask
    import distributed

    budget = {"off": 0.0, "partial-headroom": args.partial_worker_gib / 3.0}.get(
        mode, worker_gib / 3.0)  # GiB per worker; the default rule is 1/3 of the limit
    cfg = {"sparsekm.cache-bytes": budget * GiB} if mode in ("off", "partial-headroom") else {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit=f"{worker_gib}GiB", dashboard_address=":0",
                                  silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client, dask.config.set(cfg):
        client.run(_worker_pids)  # warm the workers
        X, y = dask_ringnorm(n, args.chunk_rows, seed=0)
        clf = ApproxSVC(**params)
        with ClusterMonitor(client) as mon:
            cpu_main0 = time.process_time()
            t0 = time.perf_counter()
            clf.fit(X, y)
            wall = time.perf_counter() - t0
            cpu_main = time.process_time() - cpu_main0
        info = clf.dask_info_
        t_basis_end = t0 + info["basis_seconds"]
        cpu_all = mon.cpu_between(t0, t0 + wall)
        cpu_basis = mon.cpu_between(t0, t_basis_end)
        restarts = mon.restarts
        peak = max(mon.peak.values()) / GiB
    f_test = clf.decision_function(X_test)
    err = float(np.mean(clf.classes_[(f_test > 0).astype(int)] != y_test))
    steps = np.asarray(info["step_seconds"])
    evals = np.asarray(info["evaluation_seconds"])
    m = int(clf.basis_.n_basis_)
    run = {"rows": n, "mode": mode, "worker_memory_limit_gib": worker_gib,
           "cache_budget_per_worker_gib": budget,
           "n_partitions": info["n_partitions"],
           "factor_partitions_kept": info["factor_partitions_kept"],
           "features_partitions_kept": info["features_partitions_kept"],
           "fit_seconds": wall, "basis_seconds": info["basis_seconds"], "n_basis": m,
           "seconds_per_pivot_mean": float(steps.mean()),
           "seconds_per_pivot_last": float(steps[-1]),
           "svm_seconds": info["svm_seconds"], "lbfgs_iterations": int(clf.n_iter_),
           "lbfgs_evaluations": int(info["n_evaluations"]),
           "seconds_per_evaluation_mean": float(evals.mean()),
           "worker_cpu_seconds_fit": cpu_all, "worker_cpu_seconds_basis": cpu_basis,
           "worker_cpu_seconds_per_pivot": cpu_basis / max(m, 1),
           "worker_cpu_seconds_per_evaluation": (cpu_all - cpu_basis)
           / max(int(info["n_evaluations"]), 1),
           "client_process_cpu_seconds_fit": cpu_main,
           "test_error": err, "peak_rss_largest_cluster_process_gib": peak,
           "worker_restarts": restarts, "load_average_after": os.getloadavg()}
    if ref is not None:
        run["same_basis_as_first_mode"] = bool(np.array_equal(
            ref["indices"], clf.basis_.basis_indices_))
        run["max_rel_diff_decision_values_vs_first_mode"] = float(
            np.max(np.abs(ref["f"] - f_test)) / np.max(np.abs(ref["f"])))
    return run, {"indices": clf.basis_.basis_indices_.copy(), "f": f_test}


def cache_comparison(args, params, kernel, X_test, y_test):
    """Side-by-side fits per caching mode (``--cache-modes``), each on a fresh cluster."""
    import dask
    import distributed

    out = {"benchmark": "dask_fit_partial_cache",
           "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.platform(),
           "cpu_count": os.cpu_count(), "load_average_at_start": os.getloadavg(),
           "dask_version": dask.__version__, "distributed_version": distributed.__version__,
           "data": "ringnorm generator, 20 features: +1 ~ N(0, 4I), -1 ~ N(2/sqrt(20), I)",
           "kernel": repr(kernel), "n_basis": args.n_basis, "C": args.C,
           "lbfgs_max_iter": args.max_iter, "chunk_rows": args.chunk_rows,
           "workers": 2, "threads_per_worker": 1, "test_rows": args.test_rows,
           "modes": {"off": "sparsekm.cache-bytes = 0: every partition recomputed per step",
                     "partial": f"default budget (1/3 of the limit) on "
                                f"{args.partial_worker_gib} GiB workers",
                     "partial-headroom": f"the partial mode's budget "
                                         f"({args.partial_worker_gib} / 3 GiB per worker, "
                                         f"sparsekm.cache-bytes) on "
                                         f"{args.worker_memory_gib} GiB workers",
                     "full": f"default budget on {args.worker_memory_gib} GiB workers"},
           "runs": []}

    def save():
        RESULTS.mkdir(parents=True, exist_ok=True)
        write_results(Path(args.out), out, indent=2)

    for n in args.sizes:
        ref = None
        for mode in args.cache_modes:
            gib = args.partial_worker_gib if mode == "partial" else args.worker_memory_gib
            run, fit = _cache_run(args, n, mode, gib, params, X_test, y_test, ref)
            ref = ref or fit
            print(json.dumps(run), flush=True)
            out["runs"].append(run)
            save()
    out["load_average_at_end"] = os.getloadavg()
    save()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--n-basis", type=int, default=50)
    parser.add_argument("--max-iter", type=int, default=-1,
                        help="L-BFGS iterations; -1 (default): stop on the relative change "
                             "of the objective (1e-6, three iterations in a row). The "
                             "figures of 2026-11-23 used a fixed 15, which left the SVM "
                             "unconverged (benchmarks/results/lbfgs_stopping.json)")
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--worker-memory-gib", type=float, default=1.0)
    parser.add_argument("--in-memory-max", type=int, default=1_000_000)
    parser.add_argument("--test-rows", type=int, default=100_000)
    parser.add_argument("--cache-modes", nargs="+",
                        choices=["off", "partial", "partial-headroom", "full"],
                        help="compare caching modes side by side (see the module notes)")
    parser.add_argument("--partial-worker-gib", type=float, default=0.5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = str(RESULTS / ("dask_fit_partial_cache.json" if args.cache_modes
                                  else "dask_fit.json"))

    import dask
    import distributed

    kernel = RBF(1.0 / (2 * D))  # ~ 1 / (n_features * var): the data's overall variance ~ 2.5
    X_test, y_test = numpy_ringnorm(args.test_rows, args.test_rows, seed=999)
    out = {"benchmark": "dask_fit", "date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "machine": platform.platform(), "cpu_count": os.cpu_count(),
           "load_average_at_start": os.getloadavg(),
           "dask_version": dask.__version__, "distributed_version": distributed.__version__,
           "data": "ringnorm generator, 20 features: +1 ~ N(0, 4I), -1 ~ N(2/sqrt(20), I)",
           "kernel": repr(kernel), "n_basis": args.n_basis, "C": args.C,
           "lbfgs_max_iter": args.max_iter, "chunk_rows": args.chunk_rows,
           "workers": 2, "threads_per_worker": 1,
           "worker_memory_limit_gib": args.worker_memory_gib, "test_rows": args.test_rows,
           "runs": []}
    params = dict(C=args.C, n_basis=args.n_basis, tol=0.0, kernel=kernel, solver="lbfgs",
                  max_iter=args.max_iter, random_state=0)
    if args.cache_modes:
        return cache_comparison(args, params, kernel, X_test, y_test)

    def save():
        RESULTS.mkdir(parents=True, exist_ok=True)
        write_results(Path(args.out), out, indent=2)

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit=f"{args.worker_memory_gib}GiB",
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client:
        client.run(_worker_pids)  # warm the workers
        for n in args.sizes:
            X, y = dask_ringnorm(n, args.chunk_rows, seed=0)
            clf = ApproxSVC(**params)
            with ClusterMonitor(client) as mon:
                t0 = time.perf_counter()
                clf.fit(X, y)
                wall = time.perf_counter() - t0
            info = clf.dask_info_
            f_test = clf.decision_function(X_test)
            err = float(np.mean(clf.classes_[(f_test > 0).astype(int)] != y_test))
            steps = np.asarray(info["step_seconds"])
            evals = np.asarray(info["evaluation_seconds"])
            run = {"rows": n, "gb_float64": n * D * 8 / 1e9, "n_partitions": int(X.numblocks[0]),
                   "fit_seconds": wall, "basis_seconds": info["basis_seconds"],
                   "n_basis": int(clf.basis_.n_basis_),
                   "factor_kept_in_worker_memory": info["keep_factor"],
                   "features_kept_in_worker_memory": info["keep_features"],
                   "seconds_per_pivot_mean": float(steps.mean()),
                   "seconds_per_pivot_last": float(steps[-1]),
                   "svm_seconds": info["svm_seconds"], "lbfgs_iterations": int(clf.n_iter_),
                   "lbfgs_evaluations": int(info["n_evaluations"]),
                   "seconds_per_lbfgs_iteration": info["svm_seconds"] / max(clf.n_iter_, 1),
                   "seconds_per_evaluation_mean": float(evals.mean()),
                   "test_error": err,
                   "peak_rss_largest_cluster_process_gib": max(mon.peak.values()) / GiB,
                   "worker_restarts": mon.restarts,
                   "load_average_after": os.getloadavg()}
            print(json.dumps(run), flush=True)
            if n <= args.in_memory_max:
                Xn, yn = numpy_ringnorm(n, args.chunk_rows, seed=0)
                t0 = time.perf_counter()
                mem = ApproxSVC(**params).fit(Xn, yn)
                t_mem = time.perf_counter() - t0
                del Xn, yn
                f_mem = mem.decision_function(X_test)
                run["in_memory"] = {
                    "fit_seconds": t_mem,
                    "same_basis": bool(np.array_equal(mem.basis_.basis_indices_,
                                                      clf.basis_.basis_indices_)),
                    "max_rel_diff_decision_values": float(
                        np.max(np.abs(f_mem - f_test)) / np.max(np.abs(f_mem))),
                    "test_error": float(np.mean(mem.predict(X_test) != y_test))}
                print(json.dumps(run["in_memory"]), flush=True)
            out["runs"].append(run)
            save()
    out["load_average_at_end"] = os.getloadavg()
    out["worker_restarts_total"] = sum(r["worker_restarts"] for r in out["runs"])
    ns = [r["rows"] for r in out["runs"]]
    if len(ns) > 1:
        out["scaling_fit_seconds_per_million_rows"] = {
            str(r["rows"]): r["fit_seconds"] / (r["rows"] / 1e6) for r in out["runs"]}
    save()
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
