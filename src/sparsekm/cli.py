"""The ``sparsekm`` command.

Exit codes: 0 success, 2 usage error (argparse), 1 runtime error (a one-line
message; ``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

__all__ = ["main", "build_parser"]


def _timed(func, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - t0)
    return best


# -- demo ---------------------------------------------------------------------------
def cmd_demo(args):
    from pathlib import Path

    import numpy as np
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from .datasets import load_digits_default
    from .expansion import KernelExpansion
    from .kernels import RBF
    from .models import SLMC, ReducedSetClassifier
    from .plotting import image_grid
    from .utils.progress import progress

    X_tr, y_tr, X_te, y_te = load_digits_default(random_state=args.seed)
    gamma = 1.0 / (0.5 * X_tr.shape[1])  # the papers' USPS width c = 0.5 * d
    plan = [("RS", 5, "construct"), ("RS", 10, "construct"), ("RS+refine", 10, "construct+refine"),
            ("SLMC", 5, None), ("SLMC", 10, None)]
    bar = progress(total=1 + len(plan), desc="sparsekm demo")
    bar.set_postfix_str("training the full SVM")
    ovr = OneVsRestClassifier(SVC(C=10.0, gamma=gamma)).fit(X_tr, y_tr)
    bar.update()
    full = KernelExpansion.from_estimator(ovr)
    X_eval = np.tile(X_te, (4, 1))
    t_sk = _timed(lambda: ovr.decision_function(X_eval))
    n_sv = sum(m.support_vectors_.shape[0] for m in ovr.estimators_)

    def row(name, expansion, classes):
        err = np.mean(classes[np.argmax(expansion.decision_function(X_te), axis=1)] != y_te)
        t = _timed(lambda: expansion.decision_function(X_eval))
        return name, expansion.n_terms, err, len(X_eval) / t, t_sk / t

    rows = [("sklearn OneVsRestClassifier(SVC)", n_sv,
             np.mean(ovr.predict(X_te) != y_te), len(X_eval) / t_sk, 1.0),
            row("KernelExpansion (same SVM, exact)", full, ovr.classes_)]
    rs_for_figure = None
    for name, n, method in plan:
        bar.set_postfix_str(f"{name} with {n} vectors per class")
        if method is not None:
            model = ReducedSetClassifier(estimator=ovr, n_vectors=n, method=method,
                                         random_state=args.seed).fit(X_tr, y_tr)
            if method == "construct" and n == 10:
                rs_for_figure = model.expansion_
        else:
            model = SLMC(n_vectors=n, C=10.0, kernel=RBF(gamma), max_iter=50,
                         random_state=args.seed).fit(X_tr, y_tr)
        rows.append(row(f"{name}-{n} per class", model.expansion_, model.classes_))
        bar.update()
    bar.close()

    print(f"sparsekm demo: one-vs-rest RBF SVM (C=10, gamma=1/{1 / gamma:g}) on the embedded "
          f"digits ({X_tr.shape[0]} train / {X_te.shape[0]} test, {X_tr.shape[1]} features), "
          "then reduced-set construction and SLMC")
    print()
    print(f"{'system':<36}{'kernel evals':>13}{'test error':>12}{'samples/s':>12}{'speed-up':>10}")
    for name, n_terms, err, rate, speedup in rows:
        print(f"{name:<36}{n_terms:>13}{err:>11.2%} {rate:>11.0f}{speedup:>9.1f}x")
    print()
    print("kernel evals = kernel evaluations per test sample for all ten classes together; "
          "speed-up measured in this run against sklearn's decision_function.")
    if rs_for_figure is not None:
        # One row per binary classifier: its RS vectors by decreasing |coefficient|.
        coef = rs_for_figure.coef
        images, titles = [], []
        for c in range(len(ovr.classes_)):
            idx = np.flatnonzero(coef[:, c])
            idx = idx[np.argsort(-np.abs(coef[idx, c]), kind="stable")]
            images += list(rs_for_figure.vectors[idx])
            titles += [f"{coef[i, c]:+.2f}" for i in idx]
        path = image_grid(np.array(images), (8, 8), titles=titles, ncols=10,
                          row_labels=[f"class {label}" for label in ovr.classes_],
                          suptitle="RS-10 vectors of each one-vs-rest classifier "
                                   "(titles: coefficient beta)",
                          path=Path(args.out) / "demo_rs_vectors.png")
        print(f"wrote {path}")
    return 0


# -- info ---------------------------------------------------------------------------
def cmd_info(args):
    import numpy as np
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    from . import __version__
    from .datasets import data_available, find_data_dir

    print(f"sparsekm {__version__}")
    print(f"python {platform.python_version()} ({platform.machine()}), numpy {np.__version__}, "
          f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}")
    for pool in threadpool_info():
        if pool.get("user_api") == "blas":
            print(f"BLAS: {pool.get('internal_api')} {pool.get('version')} "
                  f"({pool.get('num_threads')} threads) {pool.get('filepath')}")
    for opt in ("torch", "dask", "distributed"):
        try:
            mod = __import__(opt)
            print(f"{opt} {getattr(mod, '__version__', '?')}")
        except ImportError:
            print(f"{opt}: not installed (optional)")
    root = find_data_dir(args.data)
    if root is None:
        print("data folder: not found (set SPARSEKM_DATA or pass --data); the embedded digits "
              "still work")
    else:
        status = ", ".join(f"{n} {'yes' if data_available(n, root) else 'no'}"
                           for n in ("usps", "ida", "ripley"))
        print(f"data folder: {root} ({status})")
    return 0


# -- denoise (kernel PCA + pre-images, issue 3) -----------------------------------------
def _load_matrix(path, name):
    import numpy as np

    if str(path).endswith(".npy"):
        arr = np.load(path, allow_pickle=False)
    else:
        arr = np.loadtxt(path, delimiter="," if str(path).endswith(".csv") else None, ndmin=2)
    if arr.ndim != 2:
        raise ValueError(f"{name} ({path}) must hold a 2-D array; got shape {arr.shape}.")
    return arr


def cmd_denoise(args):
    import numpy as np

    from .kernels import RBF
    from .models.kernel_pca import KernelPCA, linear_pca_denoise

    X = _load_matrix(args.train, "--train")
    N = _load_matrix(args.input, "--input")
    if args.gamma is not None:
        kernel = RBF(gamma=args.gamma)
    elif args.width is not None:
        kernel = RBF(gamma=1.0 / args.width)
    else:
        kernel = None  # RBF with gamma = "scale"
    t0 = time.perf_counter()
    kpca = KernelPCA(n_components=args.n_components, kernel=kernel,
                     random_state=args.seed).fit(X)
    if args.linear:
        Z = linear_pca_denoise(X, N, args.n_components)
    else:
        Z = kpca.denoise(N, method=args.method, n_init=args.n_init, max_iter=args.max_iter,
                         tol=args.tol).z
    seconds = time.perf_counter() - t0
    if args.output.endswith(".npy"):
        np.save(args.output, Z)
    else:
        np.savetxt(args.output, Z, delimiter="," if args.output.endswith(".csv") else " ")
    what = "linear PCA" if args.linear else f"kernel PCA ({kpca.kernel_!r}) + pre-images"
    print(f"denoised {Z.shape[0]} points with {what}, {args.n_components} components, "
          f"trained on {X.shape[0]} points, in {seconds:.1f} s -> {args.output}")
    return 0


# -- reproduce ----------------------------------------------------------------------
def cmd_reproduce(args):
    from pathlib import Path

    from .reproduce import Context, discover
    from .reproduce._report import run_all, write_results

    registry = discover()
    names = args.names
    if not names or names == ["list"]:
        if not registry:
            print("no reproductions are available yet")
        for entry in registry.values():
            slow = " (slow)" if entry.slow else ""
            print(f"{entry.name:<28}{entry.description}{slow}")
        return 0
    run_all_names = names == ["all"]
    if run_all_names:
        names = list(registry)
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise SystemExit(_usage_error(f"unknown reproduction(s): {', '.join(unknown)}; "
                                      f"run 'sparsekm reproduce list'"))
    skipped = [n for n in names if registry[n].slow] if args.skip_slow else []
    names = [n for n in names if n not in skipped]
    out = args.out if args.out is not None else ("docs/figures" if run_all_names else "figures")
    results_path = args.write_results
    if results_path is None and run_all_names:
        results_path = "docs/results.md"
    if results_path == "-":
        results_path = None
    ctx = Context(out_dir=Path(out), seed=args.seed, data_path=args.data, quick=args.quick,
                  progress=not args.quiet)
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    if skipped:
        print(f"--skip-slow: not re-running {', '.join(skipped)}"
              + (f" (their sections in {results_path} are kept)" if results_path else ""))
    if args.render_only:
        if not results_path:
            raise SystemExit(_usage_error("--render-only needs --write-results FILE or 'all'"))
        write_results(results_path, registry, {}, mark_kept=False)
        print(f"re-rendered {results_path} from the modules' section texts (nothing re-run)")
        return 0
    _, seconds, failed = run_all(registry, names, ctx, results_path=results_path,
                                 keep_going=not args.debug, mark_kept=bool(skipped))
    print(f"sparsekm reproduce: {len(names)} reproduction(s) in {seconds:.0f} s"
          + (f" ({len(skipped)} slow one(s) skipped)" if skipped else ""))
    if results_path:
        print(f"wrote {results_path}")
    if failed:
        print(f"sparsekm: error: {len(failed)} reproduction(s) failed: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


# -- predict ------------------------------------------------------------------------
def read_matrix(path):
    """Read a 2-D float array from ``.npy`` or ``.csv``/``.txt`` (comma or whitespace)."""
    import numpy as np

    from .utils.validation import check_array

    path = str(path)
    if path.endswith(".npy"):
        try:
            X = np.load(path, allow_pickle=False)
        except Exception as exc:
            raise ValueError(f"could not read {path} as a .npy array: {exc}") from None
    else:
        with open(path) as fh:
            first = fh.readline()
        delimiter = "," if "," in first else None
        try:
            float(first.replace(",", " ").split()[0])
            skip = 0
        except (ValueError, IndexError):
            skip = 1  # a header line
        try:
            X = np.loadtxt(path, delimiter=delimiter, skiprows=skip, ndmin=2)
        except Exception as exc:
            raise ValueError(f"could not read {path} as a numeric table: {exc}") from None
    return check_array(X, f"data in {path}")


def write_matrix(path, Y):
    import numpy as np

    if str(path).endswith(".npy"):
        np.save(path, Y, allow_pickle=False)
    else:
        np.savetxt(path, np.atleast_2d(Y.T).T if Y.ndim == 1 else Y, delimiter=",", fmt="%.17g")


def cmd_predict(args):
    import numpy as np

    from .expansion import KernelExpansion
    from .persistence import load

    model = load(args.model)
    X = read_matrix(args.data)
    if isinstance(model, KernelExpansion):
        Y = model.decision_function(X)
    elif args.decision_function and hasattr(model, "decision_function"):
        Y = model.decision_function(X)
    elif hasattr(model, "predict"):
        Y = model.predict(X)
    elif hasattr(model, "transform"):
        Y = model.transform(X)
    else:
        raise TypeError(f"{args.model} holds a {type(model).__name__}, which cannot predict.")
    Y = np.asarray(Y)
    if args.output:
        write_matrix(args.output, Y)
        print(f"wrote {Y.shape[0]} predictions to {args.output}", file=sys.stderr)
    else:
        for row in np.atleast_2d(Y.T).T if Y.ndim == 1 else Y:
            print(",".join(f"{v:.10g}" if isinstance(v, float) or np.issubdtype(type(v), np.floating)
                           else str(v) for v in np.atleast_1d(row)))
    return 0


# -- reduce -------------------------------------------------------------------------
REDUCE_METHODS = ("construct", "construct+refine", "select-kpca", "select-l1")


def load_model(path, trust_pickle=False):
    """Load a model: a sparsekm file, or (only with ``trust_pickle``) a joblib pickle.

    Returns ``(expansion, source)`` where ``source`` names what was loaded.
    """
    from .expansion import KernelExpansion
    from .persistence import FormatError, load

    try:
        obj = load(path)
        source = f"sparsekm file ({type(obj).__name__})"
    except FormatError as exc:
        if not trust_pickle:
            raise ValueError(
                f"{path} is not a sparsekm file ({exc}). If it is a scikit-learn model saved "
                "with joblib and you trust its origin, pass --trust-pickle (unpickling can run "
                "arbitrary code)."
            ) from None
        import joblib

        print(f"sparsekm: warning: unpickling {path} (--trust-pickle); only do this for files "
              "you trust", file=sys.stderr)
        obj = joblib.load(path)
        source = f"joblib pickle ({type(obj).__name__})"
    return KernelExpansion.from_estimator(obj), source


def cmd_reduce(args):
    import numpy as np

    from . import reduced_set
    from .persistence import save

    if args.max_error_increase is not None:
        return cmd_reduce_compress(args)
    if args.n_vectors is None:
        raise ValueError("reduce needs -n/--n-vectors (or --max-error-increase with "
                         "--validation to search the size).")
    psi, source = load_model(args.model, args.trust_pickle)
    n = args.n_vectors
    if args.method in ("construct", "construct+refine"):
        res = reduced_set.construct(psi, n, shared=args.shared,
                                    refine=args.method == "construct+refine",
                                    random_state=args.seed, progress=not args.quiet)
    elif args.method == "select-kpca":
        res = reduced_set.select_kpca(psi, n)
    else:
        res = reduced_set.select_l1(psi, n_vectors=n)
    reduced = res.expansion
    save(reduced, args.output)
    rel = np.atleast_1d(res.relative_objective)
    print(f"loaded {args.model}: {source}, {psi.n_terms} vectors, {psi.n_outputs} output(s)")
    print(f"reduced with {args.method} to {reduced.n_terms} vectors "
          f"({psi.n_terms / max(reduced.n_terms, 1):.1f}x fewer kernel evaluations)")
    print("relative error ||Psi - Psi'||^2 / ||Psi||^2 per output: "
          + ", ".join(f"{v:.3g}" for v in rel))
    print(f"saved {args.output} (apply it with: sparsekm predict {args.output} DATA)")
    return 0


# -- reduce --max-error-increase: automatic budget (sparsekm.compress) ----------------
def add_compress_options(p):
    """The options of ``reduce --max-error-increase`` (see :func:`cmd_reduce_compress`)."""
    g = p.add_argument_group("automatic size (sparsekm.compress)")
    g.add_argument("--max-error-increase", type=float, default=None, metavar="TOL",
                   help="search the smallest size whose validation error is at most the full "
                        "model's + TOL (a fraction: 0.005 = half a point); needs --validation")
    g.add_argument("--validation", default=None, metavar="VAL",
                   help="validation rows (.npy/.csv), class label in the last column")
    g.add_argument("--train", default=None, metavar="TRAIN",
                   help="optional training rows (label last) to re-fit the thresholds")
    g.add_argument("--plot", default=None,
                   help="figure of the error-budget curve (default: OUTPUT with .png)")


def cmd_reduce_compress(args):
    """``sparsekm reduce MODEL --max-error-increase TOL --validation VAL -o OUT``."""
    from pathlib import Path

    from .compress import CompressCurve, compress
    from .persistence import FormatError, load, save
    from .plotting import compress_curve

    if args.validation is None:
        raise ValueError("--max-error-increase needs --validation VAL (rows with the class "
                         "label in the last column).")
    if args.method not in ("construct", "construct+refine", "select-kpca", "select-l1"):
        raise ValueError(f"unknown method {args.method!r}")
    try:
        model = load(args.model)
    except FormatError as exc:
        if not args.trust_pickle:
            raise ValueError(f"{args.model} is not a sparsekm file ({exc}); pass --trust-pickle "
                             "for a joblib-saved scikit-learn model you trust.") from None
        import joblib

        model = joblib.load(args.model)

    def split(path):
        A = read_matrix(path)
        if A.shape[1] < 2:
            raise ValueError(f"{path} needs feature columns and a label column (the last).")
        return A[:, :-1], A[:, -1]

    X_val, y_val = split(args.validation)
    X_tr, y_tr = split(args.train) if args.train else (None, None)
    classes = getattr(model, "classes_", None)
    if classes is not None and classes.dtype.kind in "iu":
        y_val = y_val.astype(classes.dtype)
        y_tr = None if y_tr is None else y_tr.astype(classes.dtype)
    small = compress(model, X_val, y_val, max_error_increase=args.max_error_increase,
                     method=args.method, shared=args.shared, X_train=X_tr, y_train=y_tr,
                     random_state=args.seed)
    c = CompressCurve(**small.compress_curve_)
    print(f"full model: validation error {100 * c.full_error:.2f} % with {c.full_budget} "
          f"kernel evaluations; target <= {100 * c.target_error:.2f} %")
    print("  n_vectors  evaluations  validation error")
    order = sorted(range(len(c.budget)), key=lambda i: c.budget[i])
    for i in order:
        mark = "  <- chosen" if i == c.chosen else ""
        print(f"  {c.n_vectors[i]:9d}  {c.budget[i]:11d}  {100 * c.error[i]:14.2f} %{mark}")
    save(small, args.output)
    plot = args.plot or str(Path(args.output).with_suffix(".png"))
    compress_curve(c, path=plot)
    print(f"chosen: {small.n_vectors_} kernel evaluations "
          f"({c.full_budget / max(small.n_vectors_, 1):.1f}x fewer), validation error "
          f"{100 * c.error[c.chosen]:.2f} %{'' if c.met else ' (tolerance NOT met)'}")
    print(f"saved {args.output}; curve plotted to {plot}")
    return 0


def _usage_error(msg):
    print(f"sparsekm: error: {msg}", file=sys.stderr)
    return 2


def add_command(parser, name, help_text):
    """Add a sub-command that accepts the global options too; returns its parser."""
    return parser._sparsekm_subparsers.add_parser(
        name, help=help_text, description=help_text, parents=[parser._sparsekm_common])


def build_parser():
    def common(suppress):
        # The global options are accepted before and after the command name.
        c = argparse.ArgumentParser(add_help=False)
        dflt = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
        c.add_argument("--quiet", action="store_true", default=dflt(False),
                       help="no progress bars")
        c.add_argument("--seed", type=int, default=dflt(0), help="random seed (default 0)")
        c.add_argument("--debug", action="store_true", default=dflt(False),
                       help="show tracebacks on errors")
        c.add_argument("--data", default=dflt(None),
                       help="data folder (default: $SPARSEKM_DATA or ../shared/data)")
        return c

    parser = argparse.ArgumentParser(
        prog="sparsekm", parents=[common(False)],
        description="Sparse and approximate kernel machines: make kernel expansions small and fast.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser._sparsekm_subparsers = sub
    parser._sparsekm_common = common(True)

    p = add_command(parser, "demo",
                    "train an SVM on the embedded digits, shrink it (RS, SLMC), time it")
    p.add_argument("--out", default="figures", help="folder for the figure (default: figures)")
    p.set_defaults(func=cmd_demo)

    p = add_command(parser, "info", "versions, BLAS and whether the data folder is found")
    p.set_defaults(func=cmd_info)

    p = add_command(parser, "reduce",
                    "shrink a saved kernel machine to N expansion vectors (reduced set)")
    p.add_argument("model", help="a sparsekm file, or a joblib-saved scikit-learn SVC / SVR / "
                                 "OneVsRestClassifier(SVC) / KernelPCA with --trust-pickle")
    p.add_argument("-n", "--n-vectors", type=int, default=None,
                   help="number of reduced-set vectors (per output unless --shared); required "
                        "unless --max-error-increase")
    p.add_argument("--method", choices=REDUCE_METHODS, default="construct",
                   help="RS construction (eq. 16/75-77, optionally + phase 2) or selection "
                        "(kernel PCA eq. 63-65, L1 eq. 66-69); default construct")
    p.add_argument("--shared", action="store_true",
                   help="one shared set of vectors for all outputs (construct only)")
    p.add_argument("-o", "--output", required=True, help="output file (.skm)")
    p.add_argument("--trust-pickle", action="store_true",
                   help="allow loading a joblib pickle (can execute code: trusted files only)")
    add_compress_options(p)
    p.set_defaults(func=cmd_reduce)

    p = add_command(parser, "predict", "apply a saved model (.skm) to data (.npy or .csv)")
    p.add_argument("model", help="model file written by sparsekm.save or 'sparsekm reduce'")
    p.add_argument("data", help="input rows: .npy, or .csv/.txt (comma or whitespace separated)")
    p.add_argument("-o", "--output", default=None,
                   help="write predictions to this .npy or .csv file instead of stdout")
    p.add_argument("--decision-function", action="store_true",
                   help="output decision values instead of labels for classifiers")
    p.set_defaults(func=cmd_predict)

    p = add_command(parser, "reproduce",
                    "rerun the papers' tables: 'list', NAME... or 'all' (writes docs/results.md "
                    "and every figure into docs/figures)")
    p.add_argument("names", nargs="*", help="reproduction names, 'list' or 'all'")
    p.add_argument("--out", default=None,
                   help="folder for figures (default: docs/figures for 'all', else figures)")
    p.add_argument("--quick", action="store_true", help="smaller, faster variant where available")
    p.add_argument("--skip-slow", action="store_true",
                   help="do not re-run the tables marked slow; keep their sections of the "
                        "results file, marked '(not re-run)'")
    p.add_argument("--render-only", action="store_true",
                   help="re-render the results file from the modules' section texts without "
                        "running anything")
    p.add_argument("--write-results", metavar="FILE", default=None,
                   help="update FILE with the sections of the reproductions run, keeping the "
                        "others (default for 'all': docs/results.md; '-' to write nothing)")
    p.set_defaults(func=cmd_reproduce)

    p = add_command(parser, "denoise",
                    "denoise points by kernel PCA projection and pre-images (or linear PCA)")
    p.add_argument("--train", required=True, help="clean training points (.npy, .csv or text)")
    p.add_argument("--input", required=True, help="points to denoise (same format)")
    p.add_argument("--output", required=True, help="where to write the denoised points")
    p.add_argument("--n-components", type=int, required=True, help="number of components n")
    p.add_argument("--gamma", type=float, default=None, help="RBF gamma: exp(-gamma |x-y|^2)")
    p.add_argument("--width", type=float, default=None,
                   help="RBF width c: exp(-|x-y|^2 / c) (the papers' convention)")
    p.add_argument("--method", default="auto", help="pre-image solver: auto, fixed-point, "
                   "gradient, exact (default auto)")
    p.add_argument("--n-init", type=int, default=1, help="pre-image starts (default 1)")
    p.add_argument("--max-iter", type=int, default=200)
    p.add_argument("--tol", type=float, default=1e-6)
    p.add_argument("--linear", action="store_true", help="linear PCA baseline instead")
    p.set_defaults(func=cmd_denoise)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.quiet:
        from .utils.progress import set_quiet

        set_quiet(True)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("sparsekm: interrupted", file=sys.stderr)
        return 1
    except SystemExit:
        raise
    except Exception as exc:  # one-line message unless --debug
        if args.debug:
            raise
        print(f"sparsekm: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
