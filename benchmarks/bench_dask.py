"""Predicting 2 million rows through a dask LocalCluster under a memory ceiling.

An RBF expansion (1000 terms, d = 256, float64) is evaluated on 2,000,000 x 256
synthetic rows (uniform in [-1, 1], 4.1 GB as float64) that never exist in one
place: ``dask.array`` generates them chunk by chunk (50,000 rows, 102 MB) inside
a ``LocalCluster`` of 2 worker processes x 1 thread, each with a 1 GiB memory
limit, and ``KernelExpansion.decision_function`` maps over the row chunks with
the expansion sent to each worker once. Only the 2,000,000 predictions (16 MB)
come back.

Beside it, the in-memory path (``decision_function`` on a numpy array, default
threads) on the first 200,000 rows, in this process. Reported: rows/s of each
(and rows per CPU-second, which is robust when other jobs share the cores; the
workers' CPU time includes generating the random rows),
the peak resident memory (RSS) of this process and of every cluster process
(sampled every 50 ms), and the largest difference between the two paths on the
shared rows.

Writes ``benchmarks/results/dask.json``. Usage::

    python benchmarks/bench_dask.py [--rows 2000000] [--chunk-rows 50000]
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
import psutil

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import PeriodicSampler, write_results  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def _cpu_seconds():
    """CPU time of the calling process (run on every worker through ``client.run``)."""
    return time.process_time()
GiB = 2**30


class RSSMonitor(PeriodicSampler):
    """Peak RSS of this process, and of this process plus all its descendants."""

    def __init__(self, interval=0.05):
        super().__init__(interval)
        self.peak_self = 0
        self.peak_tree = 0
        self.peak_per_process = {}

    def _sample(self):
        me = psutil.Process(os.getpid())
        procs = [me]
        try:
            procs += me.children(recursive=True)
        except psutil.Error:
            pass
        total = 0
        for p in procs:
            try:
                rss = p.memory_info().rss
            except psutil.Error:
                continue
            total += rss
            self.peak_per_process[p.pid] = max(self.peak_per_process.get(p.pid, 0), rss)
        self.peak_self = max(self.peak_self, me.memory_info().rss)
        self.peak_tree = max(self.peak_tree, total)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--n-terms", type=int, default=1000)
    parser.add_argument("--chunk-rows", type=int, default=50_000)
    parser.add_argument("--subset-rows", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory-gib", type=float, default=1.0)
    args = parser.parse_args(argv)

    import dask
    import dask.array as da
    import distributed

    rng = np.random.default_rng(0)
    d = args.features
    psi = KernelExpansion(rng.uniform(-1, 1, size=(args.n_terms, d)),
                          rng.standard_normal(args.n_terms), RBF(1 / 128), intercept=0.1)
    X = da.random.default_rng(1).uniform(-1, 1, size=(args.rows, d),
                                         chunks=(args.chunk_rows, d))
    subset = min(args.subset_rows, args.rows)
    out = {"benchmark": "dask", "date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "machine": platform.platform(), "cpu_count": os.cpu_count(),
           "load_average_at_start": os.getloadavg(),
           "dask_version": dask.__version__, "distributed_version": distributed.__version__,
           "rows": args.rows, "n_features": d, "n_terms": args.n_terms,
           "kernel": repr(psi.kernel), "dtype": "float64",
           "input_gb_if_materialised": args.rows * d * 8 / 1e9,
           "chunk_rows": args.chunk_rows, "chunk_mb": args.chunk_rows * d * 8 / 1e6,
           "workers": args.workers, "threads_per_worker": 1,
           "memory_ceiling": {"per_worker_gib": args.worker_memory_gib,
                              "cluster_gib": args.workers * args.worker_memory_gib}}

    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  processes=True, memory_limit=f"{args.worker_memory_gib}GiB",
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client:
        # Warm the workers (imports) before timing.
        client.compute(psi.decision_function(X[:10])).result()
        cpu0 = client.run(_cpu_seconds)
        with RSSMonitor() as mon:
            t0 = time.perf_counter()
            y = client.compute(psi.decision_function(X)).result()
            t_dask = time.perf_counter() - t0
        cpu1 = client.run(_cpu_seconds)
        cpu_dask = sum(cpu1[w] - cpu0[w] for w in cpu0)
        X_sub = client.compute(X[:subset]).result()
    out["dask"] = {"seconds": t_dask, "rows_per_s": args.rows / t_dask,
                   "worker_cpu_seconds": cpu_dask, "rows_per_cpu_second": args.rows / cpu_dask,
                   "peak_rss_all_processes_gib": mon.peak_tree / GiB,
                   "peak_rss_client_gib": mon.peak_self / GiB,
                   "peak_rss_largest_worker_gib": max(
                       (v for pid, v in mon.peak_per_process.items() if pid != os.getpid()),
                       default=0) / GiB,
                   "n_chunks": int(X.numblocks[0])}

    psi(X_sub[:10])
    with RSSMonitor() as mon:
        t0, c0 = time.perf_counter(), time.process_time()
        y_mem = psi.decision_function(X_sub)
        t_mem, cpu_mem = time.perf_counter() - t0, time.process_time() - c0
    out["in_memory_subset"] = {"rows": subset, "seconds": t_mem, "rows_per_s": subset / t_mem,
                               "cpu_seconds": cpu_mem, "rows_per_cpu_second": subset / cpu_mem,
                               "peak_rss_gib": mon.peak_self / GiB,
                               "input_gb": X_sub.nbytes / 1e9}
    out["max_abs_diff_dask_vs_in_memory"] = float(np.max(np.abs(y[:subset] - y_mem)))
    out["load_average_at_end"] = os.getloadavg()
    out["workers_within_memory_ceiling"] = (out["dask"]["peak_rss_largest_worker_gib"]
                                            <= args.worker_memory_gib)
    out["note"] = ("Ceiling: each worker process's peak RSS <= its memory_limit. The client "
                   "process (which also runs the scheduler) holds the predictions "
                   f"({args.rows * 8 / 1e6:.0f} MB).")
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_results((RESULTS / "dask.json"), out, indent=2)
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
