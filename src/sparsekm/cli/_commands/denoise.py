"""``sparsekm denoise``: kernel PCA projection and pre-images."""

from __future__ import annotations

import time

from .._io import (
    check_input_file,
    check_output_path,
    check_save_target,
    usage_error,
    write_matrix,
)
from .._options import add_command, add_force_option


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
    from ...kernels import RBF
    from ...models.kernel_pca import KernelPCA, linear_pca_denoise

    if args.gamma is not None and args.width is not None:
        raise SystemExit(usage_error(
            "--gamma and --width both set the RBF kernel's width (gamma = 1 / width); give "
            "one of them"))
    check_output_path(args.output, "--output")
    check_save_target(args.output, args.force, inputs=(args.train, args.input),
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


def add_parser(parser):
    """Register ``sparsekm denoise`` (its options and handler) on ``parser``."""
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
