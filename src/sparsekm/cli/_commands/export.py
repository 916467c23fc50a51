"""``sparsekm export``: a saved model to ONNX or to C99."""

from __future__ import annotations

from pathlib import Path

from .._io import CLIError, check_save_target, load_sparsekm_file, read_key_file
from .._options import add_command, add_force_option, add_key_file_option


def cmd_export(args):
    check_save_target(args.output, args.force, inputs=(args.model, args.key_file))
    if args.format == "c":  # the header is written beside it: the same rule for it
        if Path(args.output).suffix == ".h":
            raise CLIError(f"-o {args.output}: give the .c file to write (its header is "
                           "written beside it, with the suffix .h)")
        check_save_target(Path(args.output).with_suffix(".h"), args.force,
                          inputs=(args.model, args.key_file))
    model = load_sparsekm_file(args.model, key=read_key_file(args.key_file),
                               require_key=args.require_key)
    if args.format == "c":
        return _export_c(args, model)
    if args.name != "model" or args.precision != "float32" or args.scales != "per-vector":
        raise CLIError("--name, --precision and --scales apply to --format c only")
    from ...onnx_export import to_onnx

    dtype = "float64" if args.float64 else "float32"
    proto = to_onnx(model, dtype=dtype)
    with open(args.output, "wb") as fh:
        fh.write(proto.SerializeToString())
    outputs = ", ".join(o.name for o in proto.graph.output)
    print(f"exported {args.model} ({type(model).__name__}) to {args.output}: ONNX, {dtype}, "
          f"input X, outputs {outputs}")
    return 0


def _export_c(args, model):
    from ...c_export import c_function_names, export_c

    if args.float64:
        raise CLIError("--float64 applies to --format onnx only (the C code computes in double "
                       "unless compiled with -D<NAME>_REAL=float)")
    src, header = export_c(model, args.output, name=args.name, precision=args.precision,
                           scales=args.scales)
    functions = c_function_names(model, args.name)  # a model without labels: no predict
    print(f"exported {args.model} ({type(model).__name__}) to {src} and {header}: C99, vectors "
          f"in {args.precision}, functions {'/'.join(functions)}")
    return 0


def add_parser(parser):
    """Register ``sparsekm export`` (its options and handler) on ``parser``."""
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
