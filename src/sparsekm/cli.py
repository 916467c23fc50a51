"""The ``sparsekm`` command.

Exit codes: 0 success, 2 usage error (argparse, or options that do not apply to
the model given), 1 runtime error (a one-line message; ``--debug`` shows the
traceback). Output to a closed pipe (``sparsekm predict ... | head -1``) ends
quietly.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

__all__ = ["main", "build_parser"]


def _cpu_timings(fns, repeat=9, clock=time.process_time):
    """Least CPU seconds of each callable (a dict) over ``repeat`` runs.

    Run round-robin after a warm-up, with every thread pool (BLAS, OpenMP) pinned
    to one thread, so that CPU time is the work itself: other processes on a busy
    machine take wall time but not this process's CPU time, and the minimum drops
    the runs that were slowed anyway (cache misses after a context switch).
    """
    from threadpoolctl import threadpool_limits

    best = dict.fromkeys(fns, float("inf"))
    with threadpool_limits(limits=1):
        for fn in fns.values():
            fn()
        for _ in range(repeat):
            for k, fn in fns.items():
                t0 = clock()
                fn()
                best[k] = min(best[k], clock() - t0)
    return best


def _rs_vector_classes(coef, classes):
    """For each vector of a shared one-vs-one reduced set: the class it serves.

    Returns ``(cls, other, beta)`` per vector: in the pair ``(i, j)`` where the
    vector's coefficient ``beta`` has the largest magnitude, it votes for class
    ``i`` when ``beta > 0`` (libsvm's rule: ``f > 0`` votes for the first class of
    the pair) and for ``j`` otherwise; ``other`` is the pair's other class.
    """
    import numpy as np

    from .multiclass import ovo_pairs

    coef = np.asarray(coef, dtype=float)
    first, second = ovo_pairs(len(classes))
    out = []
    for row in coef:
        k = int(np.argmax(np.abs(row)))
        i, j = first[k], second[k]
        win, lose = (i, j) if row[k] > 0 else (j, i)
        out.append((classes[win], classes[lose], float(row[k])))
    return out


# -- demo ---------------------------------------------------------------------------
#: timed runs per system in the demo's speed-up columns (the least CPU time counts)
_DEMO_REPEATS = 9


def cmd_demo(args):
    import numpy as np
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import SVC

    from .datasets import load_digits_default
    from .kernels import RBF
    from .models import SLMC, ReducedSetClassifier
    from .multiclass import ExpansionClassifier
    from .utils.progress import progress

    X_tr, y_tr, X_te, y_te = load_digits_default(random_state=args.seed)
    gamma = 1.0 / (0.5 * X_tr.shape[1])  # the papers' USPS width c = 0.5 * d
    plan = [("RS-25", 25, "construct"), ("RS-50", 50, "construct"),
            ("RS-50+refine", 50, "construct+refine"), ("SLMC-5 per class", 5, None)]
    bar = progress(total=1 + len(plan), desc="sparsekm demo")
    bar.set_postfix_str("training the full SVM")
    # scikit-learn's SVC (one-vs-one inside) with the papers' settings, not its defaults
    # (C=1, gamma="scale")
    svc = SVC(C=10.0, gamma=gamma).fit(X_tr, y_tr)
    bar.update()
    exact = ExpansionClassifier.from_estimator(svc)
    p_svc = svc.predict(X_te)
    models = {"exact": exact}
    names = {"exact": "exact (sparsekm evaluator)"}
    rs_for_figure = None
    for name, n, method in plan:
        bar.set_postfix_str(name)
        if method is not None:
            # reduced as fitted (never re-fitted): one set shared by the 45 pairwise machines
            model = ReducedSetClassifier(estimator=svc, n_vectors=n, method=method,
                                         random_state=args.seed).fit(X_tr, y_tr)
            if method == "construct" and n == 50:
                rs_for_figure = model.expansion_
        else:
            # max_iter=50 is the demo's deliberate short budget: SLMC's ConvergenceWarning
            # says it stopped there, which the table's note states instead
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model = SLMC(n_vectors=n, C=10.0, kernel=RBF(gamma), max_iter=50,
                             random_state=args.seed).fit(X_tr, y_tr)
        models[name] = model
        names[name] = f"{name} (shared)" if method is not None else name
        bar.update()
    bar.close()
    X_eval = np.tile(X_te, (4, 1))
    fns = {"sklearn": lambda: svc.predict(X_eval)}
    fns.update({k: (lambda m=m: m.predict(X_eval)) for k, m in models.items()})
    # one thread everywhere, as libsvm (scikit-learn's SVC) uses one: both sides alike
    t = _cpu_timings(fns, repeat=_DEMO_REPEATS)

    n_sv = svc.support_vectors_.shape[0]
    print(f"sparsekm demo: scikit-learn's SVC(C=10, gamma=1/{1 / gamma:g}) with an RBF kernel "
          f"(gamma = 1/(0.5 d), the papers' USPS width; scikit-learn's defaults would be C=1, "
          f"gamma='scale'), one-vs-one: {len(svc.classes_)} classes = 45 pairwise machines, "
          f"on the embedded digits ({X_tr.shape[0]} train / {X_te.shape[0]} test, "
          f"{X_tr.shape[1]} features), reduced as fitted with one reduced set shared by all "
          "pairwise machines; SLMC for comparison")
    print()
    head = (f"{'system':<30}{'kernel evals':>13}{'test error':>12}{'agrees':>9}"
            f"{'vs exact':>10}{'vs sklearn':>12}")
    print(head)
    print(f"{'sklearn SVC (one-vs-one)':<30}{n_sv:>13}{np.mean(p_svc != y_te):>11.2%} "
          f"{1:>8.1%}{'-':>10}{1.0:>11.1f}x")
    for key, model in models.items():
        pred = model.predict(X_te)
        evals = model.expansion.n_terms if key == "exact" else \
            model.expansion_.compress().n_terms
        print(f"{names[key]:<30}{evals:>13}{np.mean(pred != y_te):>11.2%} "
              f"{np.mean(pred == p_svc):>8.1%}{t['exact'] / t[key]:>9.1f}x"
              f"{t['sklearn'] / t[key]:>11.1f}x")
    print()
    print("kernel evals = distinct vectors = kernel evaluations per test sample for all classes "
          "together; agrees = test predictions equal to the SVC's. Speed-ups of predict on "
          f"{X_eval.shape[0]} rows: ratios of CPU time, each system's least of "
          f"{_DEMO_REPEATS} interleaved runs with one thread (scikit-learn's libsvm uses one), "
          "so other work on the machine hardly moves them: "
          "'vs exact' against the same SVC in sparsekm's own evaluator (what the reduction "
          "buys), 'vs sklearn' against scikit-learn's SVC.predict (includes the evaluator's "
          "own gain, the 'exact' row). SLMC ran 50 L-BFGS iterations, a short budget for the "
          "demo.")
    if rs_for_figure is not None:
        path = _demo_figure(rs_for_figure, svc.classes_, background=float(X_tr.min()),
                            path=Path(args.out) / "demo_rs_vectors.png")
        print(f"wrote {path}")
    return 0


def _demo_figure(expansion, classes, background, path):
    """The shared reduced set as digits: one grey scale, each tile titled with its class."""
    import numpy as np

    from .plotting import image_grid

    served = _rs_vector_classes(expansion.coef, classes)
    # grouped by the class served, strongest coefficient first within a class
    order = sorted(range(len(served)), key=lambda i: (served[i][0], -abs(served[i][2])))
    titles = [f"{served[i][0]} (vs {served[i][1]})" for i in order]
    n = len(order)
    return image_grid(
        np.asarray(expansion.vectors)[order], (8, 8), titles=titles, ncols=10,
        center=background,
        suptitle=f"RS-{n}: the {n} vectors shared by the 45 pairwise machines, one grey scale "
                 f"(white = blank paper {background:g}, dark = ink, red = below blank). Title: "
                 "the digit each vector votes for in the pair where its |beta| is largest "
                 "(vs that pair's other digit)",
        path=path)


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
        print("data folder: not found (download it with 'sparsekm data fetch', or set "
              "SPARSEKM_DATA or pass --data); the embedded digits still work")
    else:
        status = ", ".join(f"{n} {'yes' if data_available(n, root) else 'no'}"
                           for n in ("usps", "ida", "ripley"))
        print(f"data folder: {root} ({status})")
    return 0


# -- denoise (kernel PCA + pre-images, issue 3) -----------------------------------------
def _load_matrix(path, name):
    import numpy as np

    check_input_file(path, name)
    if str(path).endswith(".npy"):
        arr = np.load(path, allow_pickle=False)
    else:
        arr = np.loadtxt(path, delimiter="," if str(path).endswith(".csv") else None, ndmin=2)
    if arr.ndim != 2:
        raise ValueError(f"{name} ({path}) must hold a 2-D array; got shape {arr.shape}.")
    return arr


def cmd_denoise(args):
    from .kernels import RBF
    from .models.kernel_pca import KernelPCA, linear_pca_denoise

    if args.gamma is not None and args.width is not None:
        raise SystemExit(_usage_error(
            "--gamma and --width both set the RBF kernel's width (gamma = 1 / width); give "
            "one of them"))
    check_output_path(args.output, "--output")
    _check_save_target(args.output, args.force, inputs=(args.train, args.input),
                       option="--output")
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
    write_matrix(args.output, Z)
    what = "linear PCA" if args.linear else f"kernel PCA ({kpca.kernel_!r}) + pre-images"
    print(f"denoised {Z.shape[0]} points with {what}, {args.n_components} components, "
          f"trained on {X.shape[0]} points, in {seconds:.1f} s -> {args.output}")
    return 0


# -- reproduce ----------------------------------------------------------------------
def checkout_docs():
    """The ``docs/`` folder of the source checkout sparsekm runs from, or None.

    Found from the package's own location (``<checkout>/src/sparsekm``), never from the
    working directory: an installed sparsekm has no checkout and gets None.
    """
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "docs").is_dir() and \
            (root / "src" / "sparsekm").is_dir():
        return root / "docs"
    return None


def _reproduce_paths(args, run_all_names):
    """Figures folder and results file: under --out, else under the checkout's docs/."""
    results_path = args.write_results
    if args.out is not None:
        out = Path(args.out)
        if results_path is None and run_all_names:
            results_path = str(out / "results.md")
    else:
        docs = checkout_docs()
        if docs is None:
            raise SystemExit(_usage_error(
                "reproduce writes figures and a results file: pass --out DIR (sparsekm is not "
                "running from its source checkout, whose docs/ would be the default)"))
        out = docs / "figures"
        if results_path is None and run_all_names:
            results_path = str(docs / "results.md")
    if results_path == "-":
        results_path = None
    return out, results_path


def _uses_table_options(name):
    """Whether reproduction ``name`` reads ``--datasets`` and ``--seeds`` (Wu et al.'s
    tables, :mod:`sparsekm.reproduce.slmc`)."""
    return name.startswith("wu-table")


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
    out, results_path = _reproduce_paths(args, run_all_names)
    if args.no_cache and args.cached_only:
        raise SystemExit(_usage_error("--no-cache and --cached-only exclude each other"))
    if args.seeds < 1:
        raise SystemExit(_usage_error(f"--seeds must be at least 1; got {args.seeds}"))
    if not any(_uses_table_options(n) for n in names):
        for opt, given in (("--datasets", args.datasets), ("--seeds", args.seeds != 3)):
            if given:
                raise SystemExit(_usage_error(
                    f"{opt} applies to the Wu et al. tables (wu-table1, wu-table2, "
                    f"wu-table3); {', '.join(names) or 'nothing'} would ignore it"))
    datasets = None
    if args.datasets:
        from .reproduce.slmc import COLUMNS

        datasets = tuple(d.strip() for d in args.datasets.split(",") if d.strip())
        bad = [d for d in datasets if d not in COLUMNS]
        if bad:
            raise SystemExit(_usage_error(f"unknown data set(s) for --datasets: "
                                          f"{', '.join(bad)}; choose from {', '.join(COLUMNS)}"))
    cache = args.cache
    if cache is None:
        repo_cache = (Path(__file__).resolve().parents[2] / "benchmarks" / "results"
                      / "slmc_reproduction_cache.json")
        cache = repo_cache if repo_cache.parent.is_dir() else None
    ctx = Context(out_dir=Path(out), seed=args.seed, data_path=args.data, quick=args.quick,
                  progress=not args.quiet, cache_path=None if cache is None else Path(cache),
                  no_cache=args.no_cache, cached_only=args.cached_only, datasets=datasets,
                  seeds=args.seeds)
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
class CLIError(Exception):
    """An error whose one-line message already says what to do (printed without a type)."""


def _index_like(column):
    """True when ``column`` holds 0, 1, 2, ... (a pandas RangeIndex written by to_csv)."""
    import numpy as np

    return column.size > 0 and np.array_equal(column, np.arange(column.size))


def _default_column_names(first, second, delimiter):
    """True when ``first`` is ``0, 1, ..., d-1`` (pandas' default column names, d >= 2)
    and ``second`` holds a value that is not a whole number, so ``first`` cannot be a
    data row of the same (integer) table."""
    names = [f.strip() for f in first.split(delimiter)]
    values = [f.strip() for f in second.split(delimiter)]
    if len(names) < 2 or names != [str(i) for i in range(len(names))]:
        return False
    return len(values) == len(names) and any(not v.lstrip("+-").isdigit() for v in values)


def check_input_file(path, what):
    """Refuse, before opening it, an input that is not a regular file.

    A FIFO (named pipe) or a device blocks ``open``/``read`` until a writer comes, so the
    command would hang; a folder or a missing file gets a message naming the option.
    """
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise CLIError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise CLIError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise CLIError(f"{what} {path} is a folder; give a file")
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else (
            "a socket" if stat.S_ISSOCK(st.st_mode) else "a device")
        raise CLIError(f"{what} {path} is {kind}, not a regular file: sparsekm reads "
                       "regular files only (it would wait for a writer); save the data to a "
                       "file and give its path")


#: first bytes of files that hold a model, not data rows: ZIP (a sparsekm file), a
#: pickle (protocol 2-5, e.g. joblib), ONNX has no magic (caught as "not text")
_MODEL_MAGICS = ((b"PK\x03\x04", "a ZIP archive (a sparsekm .skm model)"),
                 (b"PK\x05\x06", "a ZIP archive (a sparsekm .skm model)"))


def _binary_kind(head):
    """What the first bytes ``head`` of a data file say it is when it is not a table of
    numbers: a model (ZIP, pickle), other binary data, or None (text)."""
    for magic, kind in _MODEL_MAGICS:
        if head.startswith(magic):
            return kind
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "a pickle (e.g. a joblib-saved model)"
    if b"\x00" in head:
        return "binary data"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of head
            return "binary data (not UTF-8 text)"
    return None


def _refuse_binary_data(path, head, expected):
    kind = _binary_kind(head)
    if kind is None:
        return
    model = "model" in kind or "pickle" in kind or "ZIP" in kind
    raise CLIError(
        f"{path} looks like {'a model file' if model else 'a binary file'} ({kind}), not "
        f"{expected}: give data rows as .npy or .csv/.txt"
        + (" (sparsekm predict MODEL DATA: the model first, then the data)" if model else ""))


def read_matrix(path, index_col=False, *, note=None):
    """Read a 2-D float array from ``.npy`` or ``.csv``/``.txt`` (comma or whitespace).

    A first line that is not numeric is a header. A header whose first field is
    empty over a first column 0, 1, 2, ... is what ``pandas.DataFrame.to_csv()``
    writes with its index: that column is skipped, with a note (``note(text)``,
    default: one line on stderr). ``index_col=True`` always skips the first column.
    A first line of exactly ``0, 1, ..., d-1`` over rows that are not all whole
    numbers is the header ``to_csv(index=False)`` writes for pandas' default column
    names: it is skipped, with a note.
    """
    import numpy as np

    from .utils.validation import check_array

    path = str(path)
    check_input_file(path, "data file")
    with open(path, "rb") as fh:
        head = fh.read(4096)
    pandas_index = False
    if path.endswith(".npy"):
        if not head.startswith(b"\x93NUMPY"):
            _refuse_binary_data(path, head, "a .npy array")
        try:
            X = np.load(path, allow_pickle=False)
        except Exception as exc:
            raise ValueError(f"could not read {path} as a .npy array: {exc}") from None
    else:
        _refuse_binary_data(path, head, "a CSV or text table of numbers")
        # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is dropped, so that the first
        # row is read as numbers, not taken for a header
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            first = fh.readline()
            second = fh.readline()
        delimiter = "," if "," in first else None
        try:
            float(first.replace(",", " ").split()[0])
            # an empty first field (",0,1,2": pandas' header over its index) is a header
            skip = int(delimiter == "," and first.split(",")[0].strip() == "")
        except (ValueError, IndexError):
            skip = 1  # a header line
        if not skip and _default_column_names(first, second, delimiter):
            skip = 1
            text = (f"{path}: the first line 0, 1, 2, ... is read as the column names "
                    "pandas writes (to_csv(index=False) of unnamed columns) and skipped")
            if note is None:
                print(f"sparsekm: note: {text}", file=sys.stderr)
            else:
                note(text)
        try:
            X = np.loadtxt(path, delimiter=delimiter, skiprows=skip, ndmin=2,
                           encoding="utf-8-sig")
        except Exception as exc:
            raise ValueError(f"could not read {path} as a numeric table: {exc}") from None
        fields = first.rstrip("\r\n").split(",") if delimiter == "," else []
        pandas_index = (skip == 1 and len(fields) == X.shape[1] and X.shape[1] > 1
                        and fields[0].strip() == "" and all(f.strip() for f in fields[1:])
                        and _index_like(X[:, 0]))  # pandas' to_csv(): an unnamed index
    if X.ndim == 2 and (index_col or pandas_index) and X.shape[1] > 1:
        if pandas_index and not index_col:
            text = (f"{path}: the first column has no name in the header and holds 0, 1, 2, "
                    "...: read as a pandas index (to_csv() writes it) and skipped; re-save "
                    "with to_csv(index=False, header=False) to avoid this note")
            if note is None:
                print(f"sparsekm: note: {text}", file=sys.stderr)
            else:
                note(text)
        X = X[:, 1:]
    return check_array(X, f"data in {path}")


#: the output formats of ``predict -o`` (and ``denoise --output``), by extension
OUTPUT_FORMATS = (".json", ".npy", ".csv", ".txt")


def check_output_path(path, option="-o"):
    """Refuse (usage error, exit 2) an output file whose extension names no known format."""
    suffix = Path(str(path)).suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise SystemExit(_usage_error(
            f"{option} {path}: unknown output format {suffix or '(no extension)'!r}; name the "
            f"file .json, .npy, .csv (comma-separated) or .txt (space-separated)"))


def write_matrix(path, Y):
    """Write ``Y`` in the format its extension names (see :data:`OUTPUT_FORMATS`).

    ``.json``: a list (one value per row) or a list of rows; ``.npy``: the array
    (labels that are not numbers as strings); ``.csv``: comma-separated;
    ``.txt``: space-separated; one row per input row.
    """
    import json

    import numpy as np

    suffix = Path(str(path)).suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {suffix!r}; use one of {OUTPUT_FORMATS}")
    Y = np.asarray(Y)
    if suffix == ".npy":
        np.save(path, Y.astype(str) if Y.dtype.kind not in "biuf" else Y, allow_pickle=False)
    elif suffix == ".json":
        values = Y.tolist() if Y.dtype.kind in "biuf" else Y.astype(str).tolist()
        with open(path, "w") as fh:
            json.dump(values, fh)
            fh.write("\n")
    else:
        fmt = "%.17g" if Y.dtype.kind == "f" else "%s"
        np.savetxt(path, np.atleast_2d(Y.T).T if Y.ndim == 1 else Y,
                   delimiter="," if suffix == ".csv" else " ", fmt=fmt)


def _format_error_message(path, exc):
    """One line that says what a file refused by ``sparsekm.load`` is and what to do."""
    import zipfile

    text = str(exc)
    # (the format's words; a key, or a required one, was asked for)
    if "require_key=True" in text:
        if "not signed" in text:
            return (f"{path} is not signed, and --require-key accepts only files verified "
                    "with a key: sign it once with sparsekm.save(sparsekm.load(PATH), OUT, "
                    "key=KEY), or drop --require-key if you trust the file")
        return (f"{path} is signed, but --require-key was given without a key: pass "
                "--key-file KEYFILE to verify it")
    if "no authentication tag" in text:
        return (f"{path} is not signed (no authentication tag: it was saved without a key), "
                "so it cannot be verified: drop --key-file if you trust the file, or sign it "
                "once with sparsekm.save(sparsekm.load(PATH), OUT, key=KEY)")
    if "authentication failed" in text:
        return (f"{path}: its signature does not match the key in --key-file (a different "
                "key, or the file was modified after it was signed); nothing was loaded")
    if not zipfile.is_zipfile(path) and _looks_like_pickle(path):
        return (f"{path} is a pickle (e.g. saved with joblib), not a sparsekm file: convert "
                f"it once with 'sparsekm reduce {path} --trust-pickle -n N -o model.skm' "
                "(only for a file you trust) and use model.skm")
    if zipfile.is_zipfile(path) or path.endswith(".skm"):
        return f"{path} is corrupt: it is not a valid sparsekm file ({text})"
    return (f"{path} is not a sparsekm file (unknown format); give a file written by "
            "sparsekm.save or 'sparsekm reduce'")


def _load_sparsekm_file(path, key=None, require_key=False):
    """``sparsekm.load`` with a one-line message for files that are not sparsekm files."""
    from .persistence import FormatError, load

    path = str(path)
    check_input_file(path, "model file")
    try:
        return load(path, key=key, require_key=require_key)
    except FormatError as exc:
        raise CLIError(_format_error_message(path, exc)) from None


def _model_kind(model):
    """``"classifier"``, ``"regressor"``, ``"transformer"`` or ``"expansion"``."""
    from .expansion import KernelExpansion

    if isinstance(model, KernelExpansion):
        return "expansion"
    if getattr(model, "_estimator_type", None) == "classifier" or (
            hasattr(model, "classes_") and hasattr(model, "predict")):
        return "classifier"
    if hasattr(model, "predict"):
        return "regressor"
    if hasattr(model, "transform"):
        return "transformer"
    return None


def _n_features(model):
    """Number of input features ``model`` expects, or None when it does not say."""
    from .expansion import KernelExpansion

    if isinstance(model, KernelExpansion):
        return model.n_features
    n = getattr(model, "n_features_in_", None)
    if n is None:
        exp = getattr(model, "expansion", None)
        n = exp.n_features if isinstance(exp, KernelExpansion) else None
    return n if isinstance(n, int) else None


def _check_feature_count(model, X, path):
    """A one-line hint when ``X`` has one column more than ``model`` expects and its
    first column looks like an index (a CSV written with ``to_csv()``'s index)."""
    n = _n_features(model)
    if n is not None and X.shape[1] == n + 1 and _index_like(X[:, 0]):
        raise CLIError(
            f"{path} has {X.shape[1]} columns but the model expects {n} features, and its first "
            "column holds 0, 1, 2, ... like an index: re-save it without the index "
            "(pandas: to_csv(index=False)) or pass --index-col to skip the first column")


def cmd_predict(args):
    import numpy as np

    if args.output:
        check_output_path(args.output)
        _check_save_target(args.output, args.force,
                           inputs=(args.model, args.data, args.key_file))
    model = _load_sparsekm_file(args.model, key=read_key_file(args.key_file),
                                require_key=args.require_key)
    kind = _model_kind(model)
    if kind is None:
        raise CLIError(f"{args.model} holds a {type(model).__name__}, which cannot predict; "
                       "give a classifier, regressor, transformer or KernelExpansion file")
    if args.decision and kind != "classifier":
        raise SystemExit(_usage_error(
            f"--decision applies to classifiers; {args.model} holds a {kind} "
            f"({type(model).__name__}), whose outputs are printed as they are"))
    X = read_matrix(args.data, index_col=args.index_col)
    _check_feature_count(model, X, args.data)
    if kind == "expansion":
        Y = model.decision_function(X)
    elif kind == "classifier":
        Y = model.decision_function(X) if args.decision else model.predict(X)
    elif kind == "regressor":
        Y = model.predict(X)
    else:
        Y = model.transform(X)
    Y = np.asarray(Y)
    if args.output:
        write_matrix(args.output, Y)
        what = ("labels" if Y.ndim == 1 and kind == "classifier" and not args.decision
                else "rows")
        print(f"wrote {Y.shape[0]} {what} to {args.output}", file=sys.stderr)
    else:
        out = sys.stdout
        for row in np.atleast_2d(Y.T).T if Y.ndim == 1 else Y:
            out.write(",".join(f"{v:.10g}" if np.issubdtype(type(v), np.floating)
                               else str(v) for v in np.atleast_1d(row)) + "\n")
        out.flush()
    return 0


# -- reduce -------------------------------------------------------------------------
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
#: vector (eq. 63-65): sum of m^3 over the removals. Above this, refused up front.
#: Measured on the shared development machine: 548 vectors (the demo's digits SVC) down to
#: 5, sum 2.2e10, ran over 12 minutes without finishing; 1e9 is about 250 vectors.
_KPCA_MAX_WORK = 1.0e9
#: select-l1 with one shared set (eq. 70-73, accelerated proximal gradient over a lambda
#: bisection): measured on one core, N^4 x outputs = 6.6e12 (USPS one-vs-one, 618 vectors,
#: 45 pairs) took 66 s and 1.5e11 (digits, 240 vectors) 1 s; refused above ~2-3 minutes.
_L1_MULTI_MAX_WORK = 1.5e13


def _looks_like_pickle(path):
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
    except OSError:
        return False
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def load_object(path, trust_pickle=False, key=None, require_key=False):
    """What ``path`` holds, as saved: a sparsekm file, or (only with ``trust_pickle``) a
    joblib pickle, with a one-line :class:`CLIError` for anything else. Returns
    ``(obj, source)``; ``source`` names what was loaded. With ``key`` a sparsekm file must
    carry a matching HMAC tag; a pickle (which cannot carry one) is loaded only with
    ``trust_pickle``, so that ``reduce --trust-pickle --key-file`` converts and signs in
    one step."""
    import zipfile

    from .persistence import FormatError, load

    path = str(path)
    check_input_file(path, "model file")
    try:
        obj = load(path, key=key, require_key=require_key)
        return obj, f"sparsekm file ({type(obj).__name__})"
    except FormatError as exc:
        if require_key:  # nothing unverified: no pickle, no unsigned file
            raise CLIError(_format_error_message(path, exc)) from None
        if zipfile.is_zipfile(path) or path.endswith(".skm"):
            raise CLIError(_format_error_message(path, exc)) from None
        if not trust_pickle:
            if not _looks_like_pickle(path):
                raise CLIError(f"{path} is neither a sparsekm file nor a pickle "
                               "(unknown format); give a sparsekm file or a joblib-saved "
                               "scikit-learn model") from None
            raise CLIError(
                f"{path} is not a sparsekm file but a pickle. If it is a scikit-learn model "
                "saved with joblib and you trust its origin, pass --trust-pickle (unpickling "
                "can run arbitrary code)" + ("; the result is then signed with --key-file"
                                             if key is not None else "")
            ) from None
    import joblib

    print(f"sparsekm: warning: unpickling {path} (--trust-pickle); only do this for files "
          "you trust", file=sys.stderr)
    try:
        obj = joblib.load(path)
    except Exception as exc:
        # the unpickler's own message (e.g. "KeyError: 53") says nothing to a user;
        # --debug shows it
        raise CLIError(f"{path} could not be unpickled: it is neither a sparsekm file "
                       "nor a valid joblib/pickle file (corrupt or another format)") from exc
    return obj, f"joblib pickle ({type(obj).__name__})"


def load_model(path, trust_pickle=False, key=None, require_key=False):
    """Load a model: a sparsekm file, or (only with ``trust_pickle``) a joblib pickle.

    Returns ``(model, source)``: a classifier (:class:`~sparsekm.multiclass.ExpansionClassifier`,
    which keeps the classes and the multi-class rule) for ``SVC``/``NuSVC``/
    ``OneVsRestClassifier``/``OneVsOneClassifier`` models and sparsekm classifiers with an
    ``expansion_``, otherwise the :class:`~sparsekm.KernelExpansion` whose outputs are the
    model's predictions (SVR) or features (kernel PCA); ``source`` names what was loaded.
    Files are read by :func:`load_object` (keys and pickles as described there).
    """
    obj, source = load_object(path, trust_pickle, key, require_key)
    return reducible(obj, path), source


def reducible(obj, path):
    """``obj`` (as :func:`load_object` read it from ``path``) as what ``reduce`` shrinks:
    an :class:`~sparsekm.multiclass.ExpansionClassifier` or a
    :class:`~sparsekm.KernelExpansion` (:func:`sparsekm.convert.exact_model`, the
    conversion :func:`sparsekm.compress` uses too)."""
    from .convert import exact_model

    try:
        return exact_model(obj, owner="reduce")
    except (TypeError, ValueError):
        raise CLIError(
            f"{path} holds a {type(obj).__module__.split('.')[0]} {type(obj).__name__}, "
            "which reduce cannot shrink: it reduces kernel expansions (sparsekm models with "
            "expansion_ or expansions_, KernelExpansion files, and scikit-learn's SVC, NuSVC, "
            "SVR, NuSVR, OneVsRestClassifier(SVC), OneVsOneClassifier(SVC) and "
            "sklearn.decomposition.KernelPCA)") from None


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
        raise SystemExit(_usage_error("--shared and --per-class contradict each other"))
    if not multi and (args.per_class or args.shared):
        opt = "--per-class" if args.per_class else "--shared"
        raise SystemExit(_usage_error(
            f"{opt} applies to models with several outputs; {args.model} has one "
            "(-n is its number of vectors)"))
    shared = multi and not args.per_class
    n_distinct = psi.compress().n_terms
    n = args.n_vectors
    if args.method == "select-kpca":
        sizes = [n_distinct] if (shared or not multi) else [
            psi.output(k).compress().n_terms for k in range(psi.n_outputs)]
        work = sum(float(m) ** 3 for size in sizes for m in range(min(n, size) + 1, size + 1))
        if work > _KPCA_MAX_WORK:
            raise SystemExit(_usage_error(
                f"select-kpca re-computes the eigenvectors of the remaining Gram matrix after "
                f"every removed vector (eq. 63-65): {n_distinct} vectors down to {n} would take "
                f"far too long (hours for large models). Use --method construct+refine (the "
                f"default) or construct"))
    from .compress import MIN_L1_PER_MACHINE

    if args.method == "select-l1" and not shared and n < MIN_L1_PER_MACHINE:
        # the same rule as compress's select-l1 candidate (binary machines included)
        what = "vectors per output" if multi else "vectors"
        raise SystemExit(_usage_error(
            f"select-l1 with {n} {what}: below {MIN_L1_PER_MACHINE} vectors per "
            "binary machine the L1 path keeps no usable machine (84 % test error at 5 per "
            "pair on a one-vs-one SVC); use --method construct+refine"
            + (" (one shared set)" if multi else "")))
    if args.method == "select-l1" and shared:
        work = float(n_distinct) ** 4 * psi.n_outputs
        if work > _L1_MULTI_MAX_WORK:
            per_class = (", or --per-class to select each output's vectors separately"
                         if n >= MIN_L1_PER_MACHINE else "")
            raise SystemExit(_usage_error(
                f"select-l1 with one shared set for {psi.n_outputs} outputs over "
                f"{n_distinct} vectors (eq. 70-73) would take far too long; use --method "
                f"construct+refine (the default){per_class}"))
    return shared, n


def _same_file(a, b):
    """Whether paths ``a`` and ``b`` name one file (the same path, a link, a hard link)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _check_save_target(path, force, inputs=(), option="-o"):
    """Refuse, before any work, an output the command must not write: a folder, a file in
    a missing folder, an existing file without ``--force`` (the same rule for ``reduce``,
    ``predict``, ``export`` and ``denoise``), and one of the command's own ``inputs``
    whatever ``--force`` says (the input would be gone if the command failed half-way,
    and ``reduce m.skm -o m.skm`` loses the full model)."""
    import stat

    target = Path(str(path))
    for src in inputs:
        if src is not None and os.path.exists(path) and _same_file(path, src):
            raise CLIError(f"{option} {path} is the command's own input ({src}); write the "
                           "result to another file (--force never replaces an input)")
    if target.is_dir():
        raise CLIError(f"{option} {path} is a folder; give a file name such as "
                       f"{target / ('model.skm' if option == '-o' else 'out.npy')}")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise CLIError(f"{option} {path}: the folder {parent} does not exist; create it "
                       f"first (mkdir -p {parent}) or write elsewhere")
    try:
        st = os.lstat(target)  # as sparsekm.save checks it: a symbolic link is replaced
    except OSError:
        return
    if force:
        return
    if stat.S_ISREG(st.st_mode) and not st.st_mode & 0o222:
        raise CLIError(f"{option} {path} is read-only (mode {stat.filemode(st.st_mode)}); "
                       "pass --force to replace it")
    raise CLIError(f"{option} {path} already exists; pass --force to replace it, or write "
                   "to another file")


def cmd_reduce(args):
    import numpy as np

    from .multiclass import ExpansionClassifier
    from .persistence import save
    from .reduced_set import reduce_expansion

    # the own-input and existing-file refusals hold for both ways of reducing
    _check_save_target(args.output, args.force,
                       inputs=(args.model, args.validation, args.train, args.key_file))
    if args.max_error_increase is not None or args.validation or args.train:
        return cmd_reduce_compress(args)
    if args.n_vectors is None:
        raise SystemExit(_usage_error("reduce needs -n/--n-vectors (or --max-error-increase "
                                      "with --validation to search the size)"))
    if args.plot:
        raise SystemExit(_usage_error("--plot applies with --validation/--train (the "
                                      "candidates' report); without them there is no curve"))
    if args.time_limit is not None:
        raise SystemExit(_usage_error("--time-limit applies with --validation/--train (it "
                                      "stops the search over candidates); without them one "
                                      "method runs"))
    if args.method in COMPRESS_ONLY_METHODS:
        raise SystemExit(_usage_error(
            f"--method {args.method} needs data to choose or train on: give --validation "
            "VAL and/or --train TRAIN"))
    args.method = args.method or DEFAULT_REDUCE_METHOD
    _check_save_target(args.output, args.force)
    key = read_key_file(args.key_file)
    model, source = load_model(args.model, args.trust_pickle, key=key,
                               require_key=args.require_key)
    clf = model if isinstance(model, ExpansionClassifier) else None
    psi = clf.expansion if clf is not None else model
    shared, n = _reduce_plan(args, psi)
    n_before = psi.compress().n_terms
    if not args.quiet:
        print(f"loaded {args.model}: {source}, {n_before} distinct vectors, {psi.n_outputs} "
              f"output(s)" + (f" ({clf.scheme}, {len(clf.classes)} classes)" if clf else ""),
              flush=True)
    res = reduce_expansion(psi, n, method=args.method, shared=shared, random_state=args.seed)
    reduced = res.expansion
    n_after = reduced.compress().n_terms
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
    V = np.asarray(psi.compress().vectors, dtype=np.float64)
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


def cmd_export(args):
    _check_save_target(args.output, args.force, inputs=(args.model, args.key_file))
    if args.format == "c":  # the header is written beside it: the same rule for it
        if Path(args.output).suffix == ".h":
            raise CLIError(f"-o {args.output}: give the .c file to write (its header is "
                           "written beside it, with the suffix .h)")
        _check_save_target(Path(args.output).with_suffix(".h"), args.force,
                           inputs=(args.model, args.key_file))
    model = _load_sparsekm_file(args.model, key=read_key_file(args.key_file),
                                require_key=args.require_key)
    if args.format == "c":
        return _export_c(args, model)
    if args.name != "model" or args.precision != "float32" or args.scales != "per-vector":
        raise CLIError("--name, --precision and --scales apply to --format c only")
    from .onnx_export import to_onnx

    dtype = "float64" if args.float64 else "float32"
    proto = to_onnx(model, dtype=dtype)
    with open(args.output, "wb") as fh:
        fh.write(proto.SerializeToString())
    outputs = ", ".join(o.name for o in proto.graph.output)
    print(f"exported {args.model} ({type(model).__name__}) to {args.output}: ONNX, {dtype}, "
          f"input X, outputs {outputs}")
    return 0


def _export_c(args, model):
    from .c_export import export_c

    if args.float64:
        raise CLIError("--float64 applies to --format onnx only (the C code computes in double "
                       "unless compiled with -D<NAME>_REAL=float)")
    src, header = export_c(model, args.output, name=args.name, precision=args.precision,
                           scales=args.scales)
    print(f"exported {args.model} ({type(model).__name__}) to {src} and {header}: C99, vectors "
          f"in {args.precision}, functions {args.name}_predict/{args.name}_decision")
    return 0


def read_key_file(path):
    """The HMAC key in ``path`` (its bytes, one trailing newline removed); None without a path."""
    if path is None:
        return None
    check_input_file(path, "--key-file")
    with open(path, "rb") as fh:
        key = fh.read((1 << 16) + 1)
    if len(key) > 1 << 16:
        raise ValueError(f"--key-file {path} is larger than 64 KiB; it should hold a short secret.")
    key = key[:-1] if key.endswith(b"\n") else key
    key = key[:-1] if key.endswith(b"\r") else key
    if not key:
        raise ValueError(f"--key-file {path} is empty.")
    return key


def add_force_option(p, what, read_only=False):
    """``--force``: the one rule of every command that writes a file."""
    p.add_argument("--force", action="store_true",
                   help=f"replace {what} if it exists"
                        + (" (even read-only; its mode is kept)" if read_only else "")
                        + ". Without it an existing file is refused; the command's own input "
                        "files are never replaced")


def add_key_file_option(p):
    p.add_argument("--key-file", default=None, metavar="FILE",
                   help="secret key (file contents): models loaded must carry a matching "
                        "HMAC-SHA256 tag, and models saved are signed with it")
    p.add_argument("--require-key", action="store_true",
                   help="refuse any model not verified with --key-file (without it, a signed "
                        "model loads with a warning that its tag was not checked)")


# -- data (download the papers' data sets, issue 18) -------------------------------------
def cmd_data(args):
    """``sparsekm data fetch [usps|ida|ripley|all]``: download, verify, cache."""
    import os

    from . import datasets

    fetchers = {"usps": datasets.fetch_usps, "ida": datasets.fetch_ida,
                "ripley": datasets.fetch_ripley}
    which = list(fetchers) if args.which == "all" else [args.which]
    for name in which:
        kw = {"base_url": args.base_url, "progressbar": not args.quiet}
        try:
            root = (fetchers[name](None, args.data, **kw) if name == "ida"
                    else fetchers[name](args.data, **kw))
        except OSError as exc:  # every source failed: offline, proxy, server down
            if args.debug:
                raise
            raise CLIError(
                f"could not download {name} from any source (offline, or behind a proxy?). Run "
                "'sparsekm data fetch' again with a connection, or copy a data folder that "
                "has it from another machine and point sparsekm at it with --data DIR or "
                "SPARSEKM_DATA=DIR (--debug lists each source's error)") from exc
        except ValueError as exc:
            if args.debug or "SHA-256" not in str(exc):
                raise
            raise CLIError(
                f"refusing {name}: the downloaded files do not have the expected SHA-256, so "
                "nothing was kept; try again later or another mirror (--base-url), or use a "
                "verified data folder with --data DIR or SPARSEKM_DATA=DIR (--debug lists "
                "each source)") from exc
        print(f"{name}: verified (SHA-256) in {root}")
    if args.data is None and not os.environ.get("SPARSEKM_DATA"):
        print("the loaders find this folder on their own (sparsekm.datasets, "
              "'sparsekm reproduce')")
    else:
        print(f"point the loaders at it with --data {root} or SPARSEKM_DATA={root}")
    return 0


# -- reduce --max-error-increase: automatic budget (sparsekm.compress) ----------------
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
    from pathlib import Path

    import numpy as np

    from .compress import compress
    from .persistence import save

    if args.n_vectors is not None and args.max_error_increase is not None:
        raise SystemExit(_usage_error("give -n N (a budget) or --max-error-increase TOL (a "
                                      "tolerance), not both"))
    if args.per_class:
        raise SystemExit(_usage_error(
            "--per-class applies to -n without --validation/--train: with them, the budget "
            "counts the vectors of all classes together and multi-class models share one set"))
    if args.max_error_increase is not None and not (args.validation or args.train):
        raise SystemExit(_usage_error("--max-error-increase needs --validation VAL and/or "
                                      "--train TRAIN (rows with the class label last)"))
    method = args.method or "auto"
    _check_save_target(args.output, args.force)
    plot = args.plot or str(Path(args.output).with_suffix(".png"))
    if os.path.abspath(plot) == os.path.abspath(args.output):
        if args.plot:
            raise SystemExit(_usage_error(f"--plot {args.plot} is the model's own file (-o)"))
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
                       help="data folder (default: $SPARSEKM_DATA, ../shared/data, or the "
                            "folder 'sparsekm data fetch' downloads into)")
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

    p = add_command(parser, "data", "download the papers' data sets (USPS, IDA, Ripley) from "
                    "their public sources, verify their SHA-256 and cache them (--data DIR, "
                    "else $SPARSEKM_DATA, else the user cache folder); needs sparsekm[data]")
    p.add_argument("action", choices=["fetch"], help="fetch: download and verify")
    p.add_argument("which", nargs="?", default="all", choices=["usps", "ida", "ripley", "all"],
                   help="data set(s) to fetch (default all)")
    p.add_argument("--base-url", default=None,
                   help="a mirror serving the data-folder layout (default $SPARSEKM_DATA_URL, "
                        "else the public sources)")
    p.set_defaults(func=cmd_data)

    p = add_command(parser, "info", "versions, BLAS and whether the data folder is found")
    p.set_defaults(func=cmd_info)

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

    p = add_command(parser, "predict",
                    "apply a saved model (.skm) to data (.npy or .csv): classifiers print "
                    "labels (--decision: decision values), regressors their predictions, "
                    "transformers (kernel PCA) their features, bare expansions their outputs")
    p.add_argument("model", help="model file written by sparsekm.save or 'sparsekm reduce'")
    p.add_argument("data", help="input rows: .npy, or .csv/.txt (comma or whitespace separated)")
    p.add_argument("-o", "--output", default=None,
                   help="write the results to this file instead of stdout, in the format its "
                        "extension names: .json (a list), .npy, .csv (comma-separated) or "
                        ".txt (space-separated); other extensions are refused")
    p.add_argument("--index-col", action="store_true",
                   help="the first column of DATA is a row index (e.g. pandas to_csv()): "
                        "skip it. A CSV header whose first field is empty over a column 0, 1, "
                        "2, ... is recognised as such without this option")
    p.add_argument("--decision", "--decision-function", dest="decision", action="store_true",
                   help="classifiers: print decision values instead of labels (as the "
                        "scikit-learn model's decision_function)")
    add_force_option(p, "OUTPUT")
    add_key_file_option(p)
    p.set_defaults(func=cmd_predict)

    p = add_command(parser, "export",
                    "export a saved model (.skm) to ONNX (needs the extra sparsekm[onnx]) or "
                    "to dependency-free C99 (--format c)")
    p.add_argument("model", help="model file written by sparsekm.save or 'sparsekm reduce'")
    p.add_argument("-o", "--output", required=True,
                   help="the .onnx file to write (--format c: the .c file; the .h beside it)")
    p.add_argument("--format", choices=("onnx", "c"), default="onnx",
                   help="onnx (default) or c: one C99 source and header, <math.h> only")
    p.add_argument("--float64", action="store_true",
                   help="ONNX: compute in float64 (exact parity with sparsekm; default float32)")
    p.add_argument("--name", default="model",
                   help="C: prefix of the exported symbols (a C identifier; default model)")
    p.add_argument("--precision", choices=("float32", "float16", "int8"), default="float32",
                   help="C: storage of the expansion vectors (default float32)")
    p.add_argument("--scales", choices=("per-vector", "per-feature"), default="per-vector",
                   help="C, int8: one scale per vector (default) or per feature")
    add_force_option(p, "OUTPUT")
    add_key_file_option(p)
    p.set_defaults(func=cmd_export)

    p = add_command(parser, "reproduce",
                    "rerun the papers' tables: 'list', NAME... or 'all' (writes docs/results.md "
                    "and every figure into docs/figures)")
    p.add_argument("names", nargs="*", help="reproduction names, 'list' or 'all'")
    p.add_argument("--out", default=None,
                   help="folder for figures (and, for 'all', results.md). Default: the "
                        "checkout's docs/figures and docs/results.md when sparsekm runs from "
                        "its source checkout; required otherwise (never the working "
                        "directory)")
    p.add_argument("--quick", action="store_true", help="smaller, faster variant where available")
    p.add_argument("--skip-slow", action="store_true",
                   help="do not re-run the tables marked slow; keep their sections of the "
                        "results file, marked '(not re-run)'")
    p.add_argument("--render-only", action="store_true",
                   help="re-render the results file from the modules' section texts without "
                        "running anything")
    p.add_argument("--write-results", metavar="FILE", default=None,
                   help="update FILE with the sections of the reproductions run, keeping the "
                        "others (default for 'all': results.md beside --out's figures folder "
                        "in the checkout's docs/, or OUT/results.md; '-' to write nothing)")
    p.add_argument("--no-cache", action="store_true",
                   help="recompute every cached cell (Wu et al. tables) instead of reading the "
                        "cache; the fresh cells are still written to it")
    p.add_argument("--cached-only", action="store_true",
                   help="compute no cell: show 'n/a' for cells without a cache entry for "
                        "today's code, parameters and seed")
    p.add_argument("--cache", metavar="FILE", default=None,
                   help="the keyed cell cache (default: benchmarks/results/"
                        "slmc_reproduction_cache.json in a source checkout, else "
                        "OUT/slmc_cache.json)")
    p.add_argument("--datasets", default=None,
                   help="comma-separated data sets: run the Wu et al. tables for these columns "
                        "only (a long run in pieces; e.g. banana,titanic)")
    p.add_argument("--seeds", type=int, default=3,
                   help="Wu et al. tables: average every seeded cell (RS, MRS, RSVM, MRSVM, "
                        "SLMC, SKFD) over this many seeds, SEED, SEED+1, ... (default 3), "
                        "and show their spread")
    p.set_defaults(func=cmd_reproduce)

    p = add_command(parser, "denoise",
                    "denoise points by kernel PCA projection and pre-images (or linear PCA)")
    p.add_argument("--train", required=True, help="clean training points (.npy, .csv or text)")
    p.add_argument("--input", required=True, help="points to denoise (same format)")
    p.add_argument("--output", required=True,
                   help="where to write the denoised points: .npy, .csv, .txt or .json")
    p.add_argument("--n-components", type=int, required=True, help="number of components n")
    p.add_argument("--gamma", type=float, default=None,
                   help="RBF gamma: exp(-gamma |x-y|^2) (or --width; not both)")
    p.add_argument("--width", type=float, default=None,
                   help="RBF width c: exp(-|x-y|^2 / c) (the papers' convention; gamma = 1/c)")
    p.add_argument("--method", default="auto", help="pre-image solver: auto, fixed-point, "
                   "gradient, exact (default auto)")
    p.add_argument("--n-init", type=int, default=1, help="pre-image starts (default 1)")
    p.add_argument("--max-iter", type=int, default=200)
    p.add_argument("--tol", type=float, default=1e-6)
    p.add_argument("--linear", action="store_true", help="linear PCA baseline instead")
    add_force_option(p, "--output")
    p.set_defaults(func=cmd_denoise)
    return parser


def _one_line(text):
    """The first non-empty line of ``text``, marked when lines were dropped."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    if not lines:
        return ""
    return lines[0] + (" (--debug shows the rest)" if len(lines) > 1 else "")


def _warning_printer(quiet):
    """A ``warnings.showwarning`` that prints ``sparsekm: warning: <one line>`` on stderr.

    No source line, no file name: a user of the command cannot act on either. With
    ``--quiet``, ``ConvergenceWarning`` (a fit that stopped at its iteration budget)
    is not shown; every other warning still is.
    """
    from sklearn.exceptions import ConvergenceWarning

    def show(message, category, filename, lineno, file=None, line=None):
        if quiet and issubclass(category, ConvergenceWarning):
            return
        try:
            print(f"sparsekm: warning: {_one_line(message)}", file=sys.stderr)
        except (OSError, ValueError):  # stderr closed: nothing to tell
            pass

    return show


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    from .utils import progress

    quiet_before = progress._QUIET
    if args.quiet:
        progress.set_quiet(True)
    try:
        with warnings.catch_warnings():
            if not args.debug:
                warnings.showwarning = _warning_printer(args.quiet)
            return _run(args)
    finally:  # main() called in a process that goes on (tests, notebooks): no lasting switch
        progress.set_quiet(quiet_before)


def _run(args):
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader closed the pipe (e.g. `| head -1`): it has what it wanted, so this is
        # a success. Python's documented recipe: point stdout at devnull so that the
        # interpreter's final flush cannot fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("sparsekm: interrupted", file=sys.stderr)
        return 1
    except SystemExit:
        raise
    except CLIError as exc:  # already says what to do
        if args.debug:
            raise
        print(f"sparsekm: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # one-line message unless --debug
        if args.debug:
            raise
        print(f"sparsekm: error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
