"""``sparsekm reduce``: shrink a saved kernel machine to N vectors, or (with
``--max-error-increase`` or validation/training rows) let :func:`sparsekm.compress` choose."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .._io import (
    CLIError,
    check_save_target,
    load_model,
    load_object,
    read_key_file,
    read_matrix,
    reducible,
    usage_error,
)
from .._options import add_command, add_force_option, add_key_file_option

REDUCE_METHODS = ("construct", "construct+refine", "select-kpca", "select-backward",
                  "select-l1")


#: ``reduce`` without --train/--validation: phase 1 + phase 2 (benchmarks/bench_pareto.py:
#: lower test error than phase 1 alone at every budget of digits and USPS, see
#: docs/performance.md).
DEFAULT_REDUCE_METHOD = "construct+refine"


#: With --train/--validation (sparsekm.compress) also these, and "auto".
COMPRESS_ONLY_METHODS = ("auto", "uniform-svm", "kmeans-svm", "greedy-svm", "slmc", "slmc-peer")


#: ``reduce`` without data warns when the reduced model predicts differently from the
#: original on more than this fraction of the original's own vectors.
MIN_AGREEMENT = 0.9


#: select-kpca computes one eigendecomposition of the remaining Gram matrix per removed
#: vector (eq. 63-65): sum of m^3 over the removals. Above this (about 250 vectors),
#: refused up front: the work runs into many minutes (measurements: CHANGELOG, issue 35).
_KPCA_MAX_WORK = 1.0e9


#: select-l1 with one shared set (eq. 70-73, accelerated proximal gradient over a lambda
#: bisection) costs about N^4 x outputs; refused above what runs in ~2-3 minutes on one
#: core (measurements: CHANGELOG, issue 35).
_L1_MULTI_MAX_WORK = 1.5e13


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _median_seconds(fn, repeat=5):
    import numpy as np

    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _reduce_plan(args, psi):
    """Check the options against the model; return (shared, n per set). Usage errors -> 2."""
    multi = psi.is_multioutput and psi.n_outputs > 1
    if args.per_class and args.shared:
        raise SystemExit(usage_error("--shared and --per-class contradict each other"))
    if not multi and (args.per_class or args.shared):
        opt = "--per-class" if args.per_class else "--shared"
        raise SystemExit(usage_error(
            f"{opt} applies to models with several outputs; {args.model} has one "
            "(-n is its number of vectors)"))
    shared = multi and not args.per_class
    n_distinct = psi.merge_duplicates().n_terms
    n = args.n_vectors
    if args.method == "select-kpca":
        sizes = [n_distinct] if (shared or not multi) else [
            psi.output(k).merge_duplicates().n_terms for k in range(psi.n_outputs)]
        work = sum(float(m) ** 3 for size in sizes for m in range(min(n, size) + 1, size + 1))
        if work > _KPCA_MAX_WORK:
            raise SystemExit(usage_error(
                f"select-kpca re-computes the eigenvectors of the remaining Gram matrix after "
                f"every removed vector (eq. 63-65): {n_distinct} vectors down to {n} would take "
                f"far too long (hours for large models). Use --method construct+refine (the "
                f"default) or construct"))
    from ...compress import MIN_L1_PER_MACHINE

    if args.method == "select-l1" and not shared and n < MIN_L1_PER_MACHINE:
        # the same rule as compress's select-l1 candidate (binary machines included)
        what = "vectors per output" if multi else "vectors"
        raise SystemExit(usage_error(
            f"select-l1 with {n} {what}: below {MIN_L1_PER_MACHINE} vectors per "
            "binary machine the L1 path keeps no usable machine (84 % test error at 5 per "
            "pair on a one-vs-one SVC); use --method construct+refine"
            + (" (one shared set)" if multi else "")))
    if args.method == "select-l1" and shared:
        work = float(n_distinct) ** 4 * psi.n_outputs
        if work > _L1_MULTI_MAX_WORK:
            per_class = (", or --per-class to select each output's vectors separately"
                         if n >= MIN_L1_PER_MACHINE else "")
            raise SystemExit(usage_error(
                f"select-l1 with one shared set for {psi.n_outputs} outputs over "
                f"{n_distinct} vectors (eq. 70-73) would take far too long; use --method "
                f"construct+refine (the default){per_class}"))
    return shared, n


def cmd_reduce(args):
    import numpy as np

    from ...multiclass import ExpansionClassifier
    from ...persistence import save
    from ...reduced_set import reduce_expansion

    # the own-input and existing-file refusals hold for both ways of reducing
    check_save_target(args.output, args.force,
                      inputs=(args.model, args.validation, args.train, args.key_file))
    if args.max_error_increase is not None or args.validation or args.train:
        return cmd_reduce_compress(args)
    if args.n_vectors is None:
        raise SystemExit(usage_error("reduce needs -n/--n-vectors (or --max-error-increase "
                                     "with --validation to search the size)"))
    if args.plot:
        raise SystemExit(usage_error("--plot applies with --validation/--train (the "
                                     "candidates' report); without them there is no curve"))
    if args.time_limit is not None:
        raise SystemExit(usage_error("--time-limit applies with --validation/--train (it "
                                     "stops the search over candidates); without them one "
                                     "method runs"))
    if args.method in COMPRESS_ONLY_METHODS:
        raise SystemExit(usage_error(
            f"--method {args.method} needs data to choose or train on: give --validation "
            "VAL and/or --train TRAIN"))
    args.method = args.method or DEFAULT_REDUCE_METHOD
    check_save_target(args.output, args.force)
    key = read_key_file(args.key_file)
    model, source = load_model(args.model, args.trust_pickle, key=key,
                               require_key=args.require_key)
    clf = model if isinstance(model, ExpansionClassifier) else None
    psi = clf.expansion if clf is not None else model
    shared, n = _reduce_plan(args, psi)
    n_before = psi.merge_duplicates().n_terms
    if not args.quiet:
        print(f"loaded {args.model}: {source}, {n_before} distinct vectors, {psi.n_outputs} "
              f"output(s)" + (f" ({clf.scheme}, {len(clf.classes)} classes)" if clf else ""),
              flush=True)
    res = reduce_expansion(psi, n, method=args.method, shared=shared, random_state=args.seed)
    reduced = res.expansion
    n_after = reduced.merge_duplicates().n_terms
    if clf is not None:
        out = ExpansionClassifier(reduced, clf.classes, scheme=clf.scheme,
                                  decision_function_shape=clf.decision_function_shape,
                                  break_ties=clf.break_ties, vote=clf.vote)
    else:
        out = reduced
    save(out, args.output, key=key, force=args.force)
    if n_after > n:
        # --per-class: -n counts the vectors of each output; never larger in silence
        print(f"sparsekm: warning: the reduced model has {n_after} distinct vectors (kernel "
              f"evaluations per prediction), more than the {n} asked: --per-class keeps -n "
              f"{n} for each of the {psi.n_outputs} outputs; drop --per-class for one set of "
              f"{n} shared by all outputs", file=sys.stderr)
    # The speed-up, measured: both machines on the same 2000 rows (the model's own
    # vectors, repeated) in sparsekm's evaluator, with one BLAS thread so that a busy
    # machine's thread contention does not flatter either side.
    from threadpoolctl import threadpool_limits

    rows = np.asarray(psi.vectors, dtype=np.float64)
    rows = np.tile(rows, (-(-2000 // max(rows.shape[0], 1)), 1))[:2000]
    if n_after < n_before:
        with threadpool_limits(limits=1, user_api="blas"):
            t_exact = _median_seconds(lambda: psi.decision_function(rows))
            t_red = _median_seconds(lambda: reduced.decision_function(rows))
    rel = np.atleast_1d(res.relative_objective)
    if args.quiet:
        print(f"loaded {args.model}: {source}, {n_before} distinct vectors, {psi.n_outputs} "
              "output(s)")
    how = ("one set shared by all outputs" if shared else
           f"{n} per output" if psi.is_multioutput and psi.n_outputs > 1 else "")
    print(f"reduced with {args.method}{' (' + how + ')' if how else ''}: {n_before} -> "
          f"{n_after} distinct vectors = kernel evaluations per prediction "
          f"({n_before / max(n_after, 1):.1f}x fewer)")
    if n_after < n_before:
        print(f"measured speed-up of the outputs in sparsekm's evaluator: "
              f"{t_exact / t_red:.1f}x (median of 5 timings on {rows.shape[0]} rows, one BLAS "
              "thread)")
    else:
        # timing two machines of the same size measures only noise
        print(f"no reduction: the result has as many distinct vectors as the model "
              f"({n_before} -> {n_after}), so there is no speed-up to measure; give a "
              f"smaller -n")
    print("relative error ||Psi - Psi'||^2 / ||Psi||^2 per output: "
          + (", ".join(f"{v:.3g}" for v in rel) if rel.size <= 10 else
             f"mean {rel.mean():.3g}, max {rel.max():.3g} over {rel.size} outputs"))
    # never useless in silence: with no data given, judged on the original's own vectors
    V = np.asarray(psi.merge_duplicates().vectors, dtype=np.float64)
    if clf is not None:
        agree = float(np.mean(out.predict(V) == clf.predict(V)))
        print(f"agreement with the original on its {V.shape[0]} vectors: {100 * agree:.1f} % "
              "(no data given; pass --validation VAL for its error, or --train/--validation "
              "for the best of several methods)")
        if agree < MIN_AGREEMENT:
            print(f"sparsekm: warning: the reduced model predicts differently from the "
                  f"original on {100 * (1 - agree):.1f} % of its vectors (more than "
                  f"{100 * (1 - MIN_AGREEMENT):.0f} %): try a larger -n"
                  + ("" if args.method == "construct+refine" else
                     " or --method construct+refine"), file=sys.stderr)
    if clf is not None:
        print(f"saved {args.output}: a classifier ({clf.scheme}) keeping the classes "
              f"{_short_list(clf.classes)} and the SVM's thresholds (apply it with: sparsekm "
              f"predict {args.output} DATA; labels by default, --decision for decision values)")
    else:
        print(f"saved {args.output}: a KernelExpansion whose outputs are the model's "
              f"predictions or features (apply it with: sparsekm predict {args.output} DATA)")
    return 0


def _short_list(values, k=6):
    values = [str(v) for v in list(values)]
    return "[" + ", ".join(values[:k]) + (", ..." if len(values) > k else "") + "]"


def add_compress_options(p):
    """The options of ``reduce --max-error-increase`` (see :func:`cmd_reduce_compress`)."""
    g = p.add_argument_group("automatic size (sparsekm.compress)")
    g.add_argument("--max-error-increase", type=float, default=None, metavar="TOL",
                   help="instead of -n: the smallest size whose error is at most the full "
                        "model's + TOL (a fraction: 0.005 = half a point); needs --validation "
                        "or --train")
    g.add_argument("--validation", default=None, metavar="VAL",
                   help="validation rows (.npy/.csv), class label in the last column: with "
                        "it, reduce tries every --method auto candidate (reduced sets, SLMC, "
                        "fixed-Z linear SVMs) and keeps the best on VAL (sparsekm.compress), "
                        "printing one row per candidate")
    g.add_argument("--train", default=None, metavar="TRAIN",
                   help="training rows (label last): the direct candidates are trained on "
                        "them and the thresholds re-fitted; without --validation, choices are "
                        "made by 3-fold CV inside TRAIN")
    g.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="with --validation/--train: a hard cap; candidates not started when "
                        "S seconds are spent are skipped and a running SLMC stops (the "
                        "report says what was cut; the result then depends on the machine's "
                        "load). Default: none (the same model on any machine)")
    g.add_argument("--jobs", type=int, default=None, metavar="J",
                   help="with --validation/--train: candidates fitted in J parallel "
                        "processes (the model does not depend on it)")
    g.add_argument("--plot", default=None,
                   help="with --validation/--train: figure of the candidates (default: "
                        "OUTPUT with .png)")


def cmd_reduce_compress(args):
    """``sparsekm reduce MODEL (-n N | --max-error-increase TOL) [--validation VAL]
    [--train TRAIN] -o OUT``: :func:`sparsekm.compress`, its report printed."""

    import numpy as np

    from ...compress import compress
    from ...persistence import save

    if args.n_vectors is not None and args.max_error_increase is not None:
        raise SystemExit(usage_error("give -n N (a budget) or --max-error-increase TOL (a "
                                     "tolerance), not both"))
    if args.per_class:
        raise SystemExit(usage_error(
            "--per-class applies to -n without --validation/--train: with them, the budget "
            "counts the vectors of all classes together and multi-class models share one set"))
    if args.max_error_increase is not None and not (args.validation or args.train):
        raise SystemExit(usage_error("--max-error-increase needs --validation VAL and/or "
                                     "--train TRAIN (rows with the class label last)"))
    method = args.method or "auto"
    check_save_target(args.output, args.force)
    plot = args.plot or str(Path(args.output).with_suffix(".png"))
    if os.path.abspath(plot) == os.path.abspath(args.output):
        if args.plot:
            raise SystemExit(usage_error(f"--plot {args.plot} is the model's own file (-o)"))
        plot = str(args.output) + ".report.png"  # -o x.png: the figure must not replace it
    key = read_key_file(args.key_file)
    # the model as saved (not converted: compress re-trains an estimator on CV folds and
    # reads its C)
    model, _ = load_object(args.model, args.trust_pickle, key, args.require_key)
    if method in ("select-kpca", "select-l1"):
        # the up-front refusals of reduce -n (selections that take hours on this model);
        # compress shares one set, and a tolerance's walk starts at one vector
        red = reducible(model, args.model)
        psi = getattr(red, "expansion", red)
        _reduce_plan(argparse.Namespace(**{**vars(args), "method": method, "per_class": False,
                                           "shared": False,
                                           "n_vectors": args.n_vectors or 1}), psi)

    def split(path):
        A = read_matrix(path)
        if A.shape[1] < 2:
            raise ValueError(f"{path} needs feature columns and a label column (the last).")
        return A[:, :-1], A[:, -1]

    X_val, y_val = split(args.validation) if args.validation else (None, None)
    X_tr, y_tr = split(args.train) if args.train else (None, None)
    classes = getattr(model, "classes_", getattr(model, "classes", None))
    if classes is not None and np.asarray(classes).dtype.kind in "iu":
        dt = np.asarray(classes).dtype
        for y, path in ((y_val, args.validation), (y_tr, args.train)):
            if y is not None and not np.array_equal(y, np.round(y)):
                raise CLIError(f"{path}: the label column (the last) holds values that are "
                               f"not whole numbers (e.g. {float(y[y != np.round(y)][0]):g}), "
                               f"but the model's classes are integers "
                               f"{_short_list(np.asarray(classes))}")
        y_val = None if y_val is None else y_val.astype(dt)
        y_tr = None if y_tr is None else y_tr.astype(dt)
    # progress by default on a terminal (--quiet: none); the report states the total time
    small = compress(model, X_val, y_val, n_vectors=args.n_vectors,
                     max_error_increase=args.max_error_increase, method=method,
                     X_train=X_tr, y_train=y_tr, time_limit=args.time_limit,
                     random_state=args.seed, n_jobs=args.jobs, timing=True,
                     verbose=not args.quiet and sys.stderr.isatty())
    rep = small.compress_report_
    print(rep.table())
    save(small, args.output, key=key, force=args.force)
    rep.plot(plot)
    print(f"saved {args.output}: {small.n_vectors_} kernel evaluations per prediction "
          f"({rep['full_n_vectors'] / max(small.n_vectors_, 1):.1f}x fewer than the original); "
          f"report plotted to {plot}")
    return 0


def add_parser(parser):
    """Register ``sparsekm reduce`` (its options and handler) on ``parser``."""
    p = add_command(parser, "reduce",
                    "shrink a saved kernel machine to N expansion vectors (reduced set)")
    p.add_argument("model", help="a sparsekm file, or a joblib-saved scikit-learn SVC / NuSVC "
                                 "(binary or multi-class) / OneVsOneClassifier(SVC) / "
                                 "OneVsRestClassifier(SVC) / SVR / KernelPCA with --trust-pickle")
    p.add_argument("-n", "--n-vectors", type=_positive_int, default=None,
                   help="TOTAL number of distinct vectors of the reduced model = kernel "
                        "evaluations per prediction (a multi-class model gets one set shared "
                        "by all its binary machines); with --per-class, vectors per output; required unless "
                        "--max-error-increase")
    p.add_argument("--per-class", action="store_true",
                   help="multi-output models: a separate set of N vectors for each output "
                        "(each class of one-vs-rest, each pair of one-vs-one), N x outputs in "
                        "total")
    p.add_argument("--shared", action="store_true",
                   help="multi-output models: one set of N vectors shared by all outputs "
                        "(section 5; the default, kept for clarity)")
    p.add_argument("--method", choices=REDUCE_METHODS + COMPRESS_ONLY_METHODS, default=None,
                   help="RS construction (eq. 16/75-77, + phase 2 in construct+refine) or "
                        "selection (kernel PCA eq. 63-65, exact greedy backward elimination by "
                        "Proposition 8, L1 eq. 66-73). Default: "
                        f"{DEFAULT_REDUCE_METHOD}, or auto (all candidates, the best on the "
                        "data) with --validation/--train, which also allow uniform-svm, "
                        "kmeans-svm, greedy-svm and slmc. Selections that would take hours "
                        "on this model are refused up front")
    p.add_argument("-o", "--output", required=True,
                   help="output file (.skm): a classifier keeping its classes for SVC-type "
                        "models, else a KernelExpansion")
    p.add_argument("--trust-pickle", action="store_true",
                   help="allow loading a joblib pickle (can execute code: trusted files only)")
    add_force_option(p, "OUTPUT", read_only=True)
    add_key_file_option(p)
    add_compress_options(p)
    p.set_defaults(func=cmd_reduce)
