"""ONNX deployment: onnxruntime against sparsekm (numpy) against scikit-learn's full SVC.

One run, on USPS (or the embedded digits when USPS is absent), measures side by side:

* single-row latency (median and 99th percentile over many one-row calls) and batch
  throughput (rows/s on the whole test set, median of repeats) of
  - scikit-learn's full one-vs-rest ``SVC(C=10, gamma=1/128)`` (``predict``),
  - the full machine as one sparsekm ``KernelExpansion`` (numpy) and in onnxruntime,
  - the reduced machine (``ReducedSetClassifier``, RS-25 per class) in sparsekm and in
    onnxruntime (float32 and float64 graphs);
* parity: label agreement and the largest score difference (relative to the largest
  score) of each ONNX graph against sparsekm.

Every contender runs round-robin in the same process (``timed`` medians), pinned to one
BLAS/onnxruntime thread so that ratios are comparable on a shared machine.
Writes ``benchmarks/results/onnx.json``.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_onnx.py [--quick] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import digits_data, machine, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results" / "onnx.json"


def _session(proto):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(proto.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def _latency(fn, rows, n_calls):
    """Median and p99 seconds of ``fn(row)`` over ``n_calls`` one-row calls."""
    times = np.empty(n_calls)
    for i in range(n_calls):
        r = rows[i % len(rows)]
        t = time.perf_counter()
        fn(r)
        times[i] = time.perf_counter() - t
    return float(np.median(times)), float(np.percentile(times, 99))


def _throughput(fn, X, repeat):
    times = []
    fn(X)  # warm-up
    for _ in range(repeat):
        t = time.perf_counter()
        fn(X)
        times.append(time.perf_counter() - t)
    return float(X.shape[0] / np.median(times))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small smoke run")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)

    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC
    from threadpoolctl import threadpool_limits

    import sparsekm
    from sparsekm.models import ReducedSetClassifier

    name, gamma, Xtr, ytr, Xte, yte = digits_data()
    n_vec = 25
    if args.quick:
        Xtr, ytr, Xte, yte = Xtr[:600], ytr[:600], Xte[:200], yte[:200]
        n_vec = 5
    n_calls = 200 if args.quick else 2000
    with threadpool_limits(1):
        t0 = time.perf_counter()
        svc = OneVsRestClassifier(SVC(C=10, gamma=gamma)).fit(Xtr, ytr)
        t_svc = time.perf_counter() - t0
        full = sparsekm.KernelExpansion.from_estimator(svc)
        t0 = time.perf_counter()
        rs = ReducedSetClassifier(svc, n_vectors=n_vec, random_state=0).fit(Xtr, ytr)
        t_rs = time.perf_counter() - t0
        systems = {}
        graphs = {
            "full onnx f32": (sparsekm.to_onnx(full, dtype=np.float32), np.float32, full),
            "full onnx f64": (sparsekm.to_onnx(full, dtype=np.float64), np.float64, full),
            "reduced onnx f32": (sparsekm.to_onnx(rs, dtype=np.float32), np.float32, rs),
            "reduced onnx f64": (sparsekm.to_onnx(rs, dtype=np.float64), np.float64, rs),
        }
        parity = {}
        for key, (proto, dt, model) in graphs.items():
            sess = _session(proto)
            out = sess.run(None, {"X": Xte.astype(dt)})
            ref = model.decision_function(Xte)
            scores = out[-1]
            entry = {"max_abs_score_diff_rel": float(np.abs(scores - ref).max()
                                                     / np.abs(ref).max()),
                     "graph_bytes": len(proto.SerializeToString())}
            if key.startswith("reduced"):
                entry["labels_identical"] = bool(np.array_equal(out[0], rs.predict(Xte)))
            else:
                entry["argmax_identical"] = bool(np.array_equal(np.argmax(scores, axis=1),
                                                                np.argmax(ref, axis=1)))
            parity[key] = entry
            Xc = np.ascontiguousarray(Xte.astype(dt))
            if key.startswith("reduced"):
                systems[key] = lambda A, s=sess: s.run(["label"], {"X": A})
            else:
                systems[key] = lambda A, s=sess: s.run(["scores"], {"X": A})
            systems[key + "_X"] = Xc
        fns = {
            "sklearn full SVC": (lambda A: svc.predict(A), Xte),
            "sparsekm full (numpy)": (lambda A: np.argmax(full.decision_function(A), axis=1),
                                      Xte),
            "sparsekm reduced (numpy)": (lambda A: rs.predict(A), Xte),
        }
        for key in graphs:
            fns[key] = (systems[key], systems[key + "_X"])
        results = {}
        for key, (fn, X) in fns.items():
            rows = [X[i:i + 1] for i in range(min(len(X), 200))]
            med, p99 = _latency(fn, rows, n_calls)
            results[key] = {"latency_median_ms": 1e3 * med, "latency_p99_ms": 1e3 * p99,
                            "throughput_rows_per_s": _throughput(fn, X, args.repeat)}
    base_t = results["sklearn full SVC"]["throughput_rows_per_s"]
    base_l = results["sklearn full SVC"]["latency_median_ms"]
    for r in results.values():
        r["throughput_vs_sklearn"] = r["throughput_rows_per_s"] / base_t
        r["latency_speedup_vs_sklearn"] = base_l / r["latency_median_ms"]
    red = results["reduced onnx f32"]
    full_onnx = results["full onnx f32"]
    summary = {
        "reduced_vs_full_onnx_throughput": red["throughput_rows_per_s"]
        / full_onnx["throughput_rows_per_s"],
        "reduced_vs_full_onnx_latency": full_onnx["latency_median_ms"]
        / red["latency_median_ms"],
        "onnx_vs_numpy_reduced_throughput": red["throughput_rows_per_s"]
        / results["sparsekm reduced (numpy)"]["throughput_rows_per_s"],
    }
    errors = {"sklearn full SVC": float(np.mean(svc.predict(Xte) != yte)),
              "reduced": float(np.mean(rs.predict(Xte) != yte))}
    out = {"data": name, "quick": args.quick, "n_test": int(Xte.shape[0]),
           "n_terms": {"full": int(full.n_terms), "reduced": int(rs.n_vectors_)},
           "fit_seconds": {"svc": t_svc, "reduction": t_rs}, "test_error": errors,
           "threads": 1, "single_row_calls": n_calls, "systems": results, "parity": parity,
           "summary": summary, "machine": machine()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_results(Path(args.out), out, indent=2)
    w = max(len(k) for k in results)
    print(f"{'system':<{w}}  median ms  p99 ms  rows/s   x sklearn")
    for k, r in results.items():
        print(f"{k:<{w}}  {r['latency_median_ms']:9.3f}  {r['latency_p99_ms']:6.3f}  "
              f"{r['throughput_rows_per_s']:7.0f}  {r['throughput_vs_sklearn']:6.1f}")
    print(json.dumps(summary, indent=1))
    print(json.dumps(parity, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
