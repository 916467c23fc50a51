"""``sparsekm predict``: apply a saved model to data rows."""

from __future__ import annotations

import sys

from .._io import (
    CLIError,
    check_output_path,
    check_save_target,
    index_like,
    load_sparsekm_file,
    read_key_file,
    read_matrix,
    usage_error,
    write_matrix,
)
from .._options import add_command, add_force_option, add_key_file_option


def _model_kind(model):
    """``"classifier"``, ``"regressor"``, ``"transformer"`` or ``"expansion"``."""
    from ...expansion import KernelExpansion

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
    from ...expansion import KernelExpansion

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
    if n is not None and X.shape[1] == n + 1 and index_like(X[:, 0]):
        raise CLIError(
            f"{path} has {X.shape[1]} columns but the model expects {n} features, and its first "
            "column holds 0, 1, 2, ... like an index: re-save it without the index "
            "(pandas: to_csv(index=False)) or pass --index-col to skip the first column")


def cmd_predict(args):
    import numpy as np

    if args.output:
        check_output_path(args.output)
        check_save_target(args.output, args.force,
                          inputs=(args.model, args.data, args.key_file))
    model = load_sparsekm_file(args.model, key=read_key_file(args.key_file),
                               require_key=args.require_key)
    kind = _model_kind(model)
    if kind is None:
        raise CLIError(f"{args.model} holds a {type(model).__name__}, which cannot predict; "
                       "give a classifier, regressor, transformer or KernelExpansion file")
    if args.decision and kind != "classifier":
        raise SystemExit(usage_error(
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


def add_parser(parser):
    """Register ``sparsekm predict`` (its options and handler) on ``parser``."""
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
