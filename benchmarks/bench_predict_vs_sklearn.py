"""Prediction speed on USPS: full one-vs-rest SVC (scikit-learn) vs RS-25 and SLMC-10 %.

One run measures, on the USPS test set (2007 digits, d = 256):

* predictions/s of four systems, side by side (round-robin repeats, best of each):
  scikit-learn's ``OneVsRestClassifier(SVC(C=10, gamma=1/128)).predict`` (libsvm, one
  binary machine at a time), the same full system as one sparsekm ``KernelExpansion``
  (each distinct SV evaluated once for all ten outputs), the RS-25 system
  (``ReducedSetClassifier``: ``reduced_set.construct`` with 25 vectors per classifier,
  thresholds re-fitted) and SLMC-10 % (``SparseLargeMarginClassifier`` with ``n_vectors``
  = 10 % of the average number of SVs per binary SVM); the test error of each;
* predict time against the number of expansion terms (random 10-output RBF
  expansions, d = 256, 100 ... 5000 terms, 2000 samples) and against the number of
  samples (125 ... 16000, for the full, SLMC and RS systems): both are expected to be
  linear, ``t = t_0 + c n``; the least-squares fits and R^2 are reported.

The RS-25 and SLMC models are cached in ``benchmarks/.cache/`` (sparsekm files) and
re-used by later runs unless ``--retrain`` is given; their training times are stored
beside them. Writes ``benchmarks/results/predict_vs_sklearn.json`` and
``docs/figures/predict_vs_sklearn.png``.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_predict_vs_sklearn.py [--repeat 7] [--retrain]
    python benchmarks/bench_predict_vs_sklearn.py --quick --out /tmp/p.json --fig /tmp/p.png

``--quick`` is a smoke run (small training subset, tiny models, short curves; no cache).
Falls back to scikit-learn's embedded 8x8 digits when the USPS files are missing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import (  # noqa: E402
    digits_data,
    linear_fit,
    machine,
    plain_log_ticks,
    power_fit,
    timed,
    timed_interleaved,
    write_results,
)

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results" / "predict_vs_sklearn.json"
FIG = ROOT.parent / "docs" / "figures" / "predict_vs_sklearn.png"
CACHE = ROOT / ".cache"

C_SVM = 10.0


def _data(quick):
    name, gamma, Xtr, ytr, Xte, yte = digits_data()
    if quick:
        Xtr, ytr, Xte, yte = Xtr[:600], ytr[:600], Xte[:300], yte[:300]
    return name, gamma, Xtr, ytr, Xte, yte


def _cached_fit(path, make, X, y, read, write):
    """Fit ``make()`` on (X, y), or load it from ``path``; returns (model, seconds, cached)."""
    import sparsekm

    meta = path.with_suffix(".json")
    if read and path.exists() and meta.exists():
        return sparsekm.load(path), json.loads(meta.read_text())["fit_seconds"], True
    model, seconds, _ = timed(lambda: make().fit(X, y))
    if write:
        path.parent.mkdir(parents=True, exist_ok=True)
        sparsekm.save(model, path)
        meta.write_text(json.dumps({"fit_seconds": seconds,
                                    "date": time.strftime("%Y-%m-%d %H:%M:%S")}))
    return model, seconds, False


def systems(args, gamma, Xtr, ytr):
    """Fit (or load) the four systems; returns (predictors, info)."""
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from sparsekm import KernelExpansion
    from sparsekm.kernels import RBF
    from sparsekm.models import SLMC, ReducedSetClassifier

    ovr, t_svm, _ = timed(lambda: OneVsRestClassifier(SVC(C=C_SVM, gamma=gamma)).fit(Xtr, ytr))
    full = KernelExpansion.from_estimator(ovr)
    sv_per = [int(e.support_vectors_.shape[0]) for e in ovr.estimators_]
    n_rs = 5 if args.quick else args.n_rs
    n_slmc = max(1, int(round(args.slmc_ratio * np.mean(sv_per))))
    read, write = not (args.quick or args.retrain), not args.quick
    tag = f"{args.dataset_key}_C{C_SVM:g}_seed{args.seed}"
    rs, t_rs, rs_cached = _cached_fit(
        CACHE / f"predict_rs{n_rs}_{tag}.skm",
        lambda: ReducedSetClassifier(ovr, n_vectors=n_rs, method="construct",
                                     max_iter=20 if args.quick else 200,
                                     random_state=args.seed),
        Xtr, ytr, read, write)
    slmc, t_slmc, slmc_cached = _cached_fit(
        CACHE / f"predict_slmc{n_slmc}_iter{args.slmc_max_iter}_{tag}.skm",
        lambda: SLMC(n_vectors=n_slmc, C=C_SVM, kernel=RBF(gamma),
                     max_iter=3 if args.quick else args.slmc_max_iter, random_state=args.seed),
        Xtr, ytr, read, write)
    classes = ovr.classes_
    predictors = {
        "sklearn_ovr_svc_full": ovr.predict,
        "sparsekm_full_expansion": lambda X: classes[np.argmax(full.decision_function(X), axis=1)],
        f"sparsekm_RS-{n_rs}": rs.predict,
        f"sparsekm_SLMC-{args.slmc_ratio:.0%}": slmc.predict,
    }
    expansions = {
        "sparsekm_full_expansion": full,
        f"sparsekm_RS-{n_rs}": rs.expansion_,
        f"sparsekm_SLMC-{args.slmc_ratio:.0%}": slmc.expansion_,
    }
    info = {
        "svm": {"C": C_SVM, "gamma": gamma, "fit_seconds": t_svm,
                "sv_per_classifier_mean": float(np.mean(sv_per)),
                "sv_total_sklearn": int(sum(sv_per)), "distinct_sv": int(full.n_terms)},
        f"RS-{n_rs}": {"n_vectors_per_classifier": n_rs, "method": "construct",
                       "refit_intercept": "per classifier", "fit_seconds": t_rs,
                       "loaded_from_cache": rs_cached, "n_terms": int(rs.expansion_.n_terms)},
        f"SLMC-{args.slmc_ratio:.0%}": {
            "n_vectors_per_classifier": n_slmc, "ratio_of_mean_sv": args.slmc_ratio,
            "max_iter": 3 if args.quick else args.slmc_max_iter, "fit_seconds": t_slmc,
            "loaded_from_cache": slmc_cached, "n_terms": int(slmc.expansion_.n_terms)},
    }
    kernel_evals = {"sklearn_ovr_svc_full": int(sum(sv_per)),
                    **{k: int(e.n_terms) for k, e in expansions.items()}}
    return predictors, expansions, kernel_evals, info


def throughput(predictors, Xte, yte, repeat):
    """Predictions/s (wall and CPU) of every system, round-robin; test errors."""
    m = Xte.shape[0]
    wall, cpu = timed_interleaved({k: (lambda f=f: f(Xte)) for k, f in predictors.items()},
                                  repeat)
    ref = "sklearn_ovr_svc_full"
    rows = {}
    for k, f in predictors.items():
        rows[k] = {
            "test_error_percent": float(np.mean(f(Xte) != yte)) * 100,
            "seconds_wall": wall[k], "seconds_cpu": cpu[k],
            "predictions_per_second_wall": m / wall[k],
            "predictions_per_second_cpu": m / max(cpu[k], 1e-9),
            "speedup_vs_sklearn_wall": wall[ref] / wall[k],
            "speedup_vs_sklearn_cpu": cpu[ref] / max(cpu[k], 1e-9),
        }
    return rows


def curve_terms(n_terms_list, n_samples, d, gamma, n_outputs, repeat, seed):
    """Predict time of random ``n_outputs``-output RBF expansions vs their number of terms."""
    from sparsekm import KernelExpansion
    from sparsekm.kernels import RBF

    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n_samples, d))
    times, cpus = [], []
    for n in n_terms_list:
        E = KernelExpansion(rng.uniform(-1, 1, size=(n, d)),
                            rng.standard_normal((n, n_outputs)), RBF(gamma))
        E.decision_function(X[:10])
        _, w, c = timed(lambda E=E: E.decision_function(X), repeat)
        times.append(w)
        cpus.append(c)
    return {"n_samples": n_samples, "n_features": d, "n_outputs": n_outputs,
            "n_terms": list(map(int, n_terms_list)), "seconds_wall": times, "seconds_cpu": cpus,
            "linear_fit_wall": linear_fit(n_terms_list, times),
            "linear_fit_cpu": linear_fit(n_terms_list, cpus),
            "loglog_fit_wall": power_fit(n_terms_list, times),
            "loglog_fit_cpu": power_fit(n_terms_list, cpus)}


def curve_samples(expansions, Xte, n_samples_list, repeat):
    """Predict time of each expansion vs the number of samples (test set tiled)."""
    reps = int(np.ceil(max(n_samples_list) / Xte.shape[0]))
    Xbig = np.tile(Xte, (reps, 1))
    out = {"n_samples": list(map(int, n_samples_list)), "systems": {}}
    for name, E in expansions.items():
        times, cpus = [], []
        for n in n_samples_list:
            X = np.ascontiguousarray(Xbig[:n])
            _, w, c = timed(lambda E=E, X=X: E.decision_function(X), repeat)
            times.append(w)
            cpus.append(c)
        out["systems"][name] = {
            "n_terms": int(E.n_terms), "seconds_wall": times, "seconds_cpu": cpus,
            "linear_fit_wall": linear_fit(n_samples_list, times),
            "linear_fit_cpu": linear_fit(n_samples_list, cpus),
            "loglog_fit_wall": power_fit(n_samples_list, times),
            "loglog_fit_cpu": power_fit(n_samples_list, cpus)}
    return out


def figure(result, path, dpi=110):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    ax = axes[0]
    thr = result["throughput"]
    names = list(thr)
    rates = [thr[k]["predictions_per_second_cpu"] for k in names]
    labels = [k.replace("sklearn_ovr_svc_full", "sklearn OvR SVC\n(full)")
               .replace("sparsekm_full_expansion", "sparsekm\nfull expansion")
               .replace("sparsekm_", "sparsekm\n") for k in names]
    bars = ax.bar(range(len(names)), rates, color=["0.5", "C0", "C1", "C2"][:len(names)])
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), labels, fontsize=8)
    ax.set_ylabel("predictions per CPU second (best of repeats)")
    for b, k in zip(bars, names, strict=True):
        r = thr[k]
        ax.annotate(f"{r['predictions_per_second_cpu']:,.0f}/s\n"
                    f"{r['speedup_vs_sklearn_cpu']:.1f}x (wall {r['speedup_vs_sklearn_wall']:.1f}x)"
                    f"\n{r['test_error_percent']:.2f}% error",
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                    fontsize=7)
    ax.set_ylim(top=max(rates) * 12)
    ax.set_title(f"{result['dataset']} test set ({result['n_test']} samples), one thread",
                 fontsize=10)

    ax = axes[1]
    ct = result["scaling_n_terms"]
    n = np.asarray(ct["n_terms"], float)
    t = np.asarray(ct["seconds_cpu"])
    fit = ct["linear_fit_cpu"]
    ax.plot(n, t * 1e3, "o", label="random expansions (CPU time)")
    ax.plot(n, (fit["intercept"] + fit["slope"] * n) * 1e3, "-", color="C0",
            label=f"linear fit, R$^2$ = {fit['r2']:.4f}")
    ax.set_xlabel("n_terms")
    ax.set_ylabel(f"predict time of {ct['n_samples']} samples (CPU ms)")
    ax.set_title(f"time vs n_terms (d = {ct['n_features']}, {ct['n_outputs']} outputs)",
                 fontsize=10)
    ax.legend(fontsize=8)

    ax = axes[2]
    cs = result["scaling_n_samples"]
    ns = np.asarray(cs["n_samples"], float)
    for i, (name, row) in enumerate(cs["systems"].items()):
        fit = row["linear_fit_cpu"]
        ax.loglog(ns, row["seconds_cpu"], "o", color=f"C{i}")
        ax.loglog(ns, np.maximum(fit["intercept"] + fit["slope"] * ns, 1e-6), "-", color=f"C{i}",
                  label=f"{name.replace('sparsekm_', '')} ({row['n_terms']} terms), "
                        f"R$^2$ = {fit['r2']:.5f}")
    ax.set_xlabel("n_samples")
    ax.set_ylabel("predict time (CPU s)")
    ax.set_title("time vs n_samples (linear fits)", fontsize=10)
    ax.legend(fontsize=7)
    for ax in axes:
        plain_log_ticks(ax)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return str(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run (no cache)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--n-rs", type=int, default=25)
    parser.add_argument("--slmc-ratio", type=float, default=0.10)
    parser.add_argument("--slmc-max-iter", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retrain", action="store_true", help="ignore and rewrite the cache")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--fig", default=str(FIG))
    args = parser.parse_args(argv)
    repeat = 2 if args.quick else args.repeat

    dataset, gamma, Xtr, ytr, Xte, yte = _data(args.quick)
    args.dataset_key = "usps" if dataset == "usps" else "digits"
    t0 = time.perf_counter()
    predictors, expansions, kernel_evals, info = systems(args, gamma, Xtr, ytr)
    thr = throughput(predictors, Xte, yte, repeat)
    if args.quick:
        terms, samples = [50, 100, 200, 400], [100, 200, 400, 800]
    else:
        terms = [100, 250, 500, 1000, 2000, 3000, 4000, 5000]
        samples = [125, 250, 500, 1000, 2000, 4000, 8000, 16000]
    d = Xte.shape[1]
    result = {
        "benchmark": "predict_vs_sklearn",
        "machine": machine(),
        "dataset": dataset,
        "n_train": int(Xtr.shape[0]), "n_test": int(Xte.shape[0]), "n_features": int(d),
        "repeat": repeat,
        "models": info,
        "kernel_evaluations_per_sample": kernel_evals,
        "throughput": thr,
        "scaling_n_terms": curve_terms(terms, 400 if args.quick else 2000, d, gamma,
                                       len(np.unique(ytr)), repeat, args.seed),
        "scaling_n_samples": curve_samples(expansions, Xte, samples, repeat),
    }
    result["seconds_total"] = time.perf_counter() - t0
    result["machine"]["load_average_at_end"] = [round(v, 2) for v in os.getloadavg()]
    fig_path = Path(figure(result, args.fig, dpi=50 if args.quick else 110)).resolve()
    result["figure"] = (str(fig_path.relative_to(ROOT.parent))
                        if fig_path.is_relative_to(ROOT.parent) else str(fig_path))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_results(Path(args.out), result, indent=2)
    print(json.dumps({k: result[k] for k in ("throughput", "models")}, indent=1))
    print(f"wrote {args.out} and {result['figure']} in {result['seconds_total']:.1f} s")
    return result


if __name__ == "__main__":
    main()
