"""Export a kernel-expansion model to dependency-free C99 (for microcontrollers).

:func:`to_c` writes one ``.c`` file and one header. The C code needs nothing but
``<math.h>`` (and the freestanding ``<stdint.h>`` for int8/float16 storage): no
dynamic allocation, every parameter in a ``const`` array (flash on a
microcontroller), a few ``n_features``/``n_classes``-sized arrays on the stack.
With the prefix ``model`` (``name=``) the interface is::

    #define MODEL_N_FEATURES  ...   /* length of x: the raw row, before any scaler */
    #define MODEL_N_OUTPUTS   ...   /* length of out */
    #define MODEL_N_CLASSES   ...   /* classifiers */
    extern const char *const model_classes[MODEL_N_CLASSES];  /* classes_ as strings */
    int model_predict(const float *x);            /* index into model_classes */
    void model_decision(const float *x, float *out);  /* the decision_function */

What it computes is the model's expansion ``f(x) = sum_j coef_j k(x, z_j) + b``
(eq. 1 of *Fast approximation of support vector kernel expansions*) after the
pipeline's scalers (``StandardScaler``, ``MinMaxScaler``), followed by the model's
head: the sign (binary), the arg-max (one-vs-rest) or the one-vs-one vote with the
original's rules (:class:`sparsekm.multiclass.ExpansionClassifier`: libsvm's votes,
ties to the lowest class index; ``decision_function_shape``, ``break_ties`` and
``OneVsOneClassifier``'s ``f <= 0`` rule). Kernels: RBF, polynomial, sigmoid,
linear (and inverse multiquadric); others are refused with the reason.

Arithmetic. The vectors are stored in ``precision`` (see
:mod:`sparsekm.quantize`); coefficients, thresholds and scaler statistics in
float32. The C code computes in ``<PREFIX>_REAL``, ``double`` unless the user
compiles with ``-D<PREFIX>_REAL=float`` (for a single-precision FPU). In double, C
evaluates the *dequantized* model (:func:`deployed_model`) to about 1e-12 relative;
``model_decision`` rounds its outputs to float. The error against the original
model is the storage's (measured by :func:`sparsekm.quantize.quantization_error`):
about ``1e-6`` of the largest decision value for float32.

Speed. The vectors are stored in blocks of 32 (the rest in power-of-two blocks,
29 = 16 + 8 + 4 + 1), each feature-major, and the C loops run over a block's
vectors innermost: independent sums, one per vector over the features in order
(in blocks of at most 8 vectors, four per vector over every fourth feature, added
as ``(a0 + a1) + (a2 + a3)``), nothing reassociated by the compiler, so it
vectorizes them at plain ``-O2``/``-O3`` (no ``-ffast-math``, no ``-march``).
Only the order of the additions differs from a plain loop (in double, about 1e-16
relative per addition); the bytes are the same. The stack holds one block's sums
(32 doubles, and 32 integers for int8) besides the row. For a core without vector
units, ``-D<PREFIX>_NO_SIMD`` reads the same blocks one vector at a time with four
sums in registers (every fourth feature), the loop order before the blocks.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .expansion import KernelExpansion
from .kernels import RBF, InverseMultiquadric, Linear, Polynomial, Sigmoid
from .quantize import quantize_expansion

__all__ = ["to_c", "export_c", "c_function_names", "c_parts", "deployed_model",
           "c_driver_source", "CModelParts", "model_head"]

_BLOCK = 32  # vectors per block of the C code's inner loop (see _blocked)
_KERNELS = (RBF, InverseMultiquadric, Polynomial, Sigmoid, Linear)
_SCALERS = ("StandardScaler", "MinMaxScaler")
_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto "
    "if inline int long register restrict return short signed sizeof static struct switch "
    "typedef union unsigned void volatile while _Bool _Complex _Imaginary".split())


class CModelParts:
    """A model as the C code computes it: scaler steps, an expansion and a head.

    Attributes
    ----------
    steps : list of (kind, a, b)
        ``("standard", mean, scale)``: ``x = (x - mean) / scale``;
        ``("minmax", scale, min)``: ``x = x * scale + min``; arrays of float64.
    expansion : KernelExpansion
    head : dict
        As :func:`model_head` describes it.
    """

    def __init__(self, steps, expansion, head):
        self.steps, self.expansion, self.head = steps, expansion, head

    @property
    def classes(self):
        return None if self.head["kind"] == "scores" else np.asarray(self.head["classes"])

    @property
    def n_decision(self):
        """Number of decision values (``N_OUTPUTS``)."""
        return _n_decision(self.expansion, self.head)


def _check_name(name):
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or \
            name in _C_KEYWORDS or name.startswith("__"):
        raise ValueError(f"name must be a valid C identifier (letters, digits, '_', not "
                         f"starting with a digit, not a keyword); got {name!r}.")
    return name


def _scaler_step(step_name, est):
    from sklearn.utils.validation import check_is_fitted

    kind = type(est).__name__
    if kind not in _SCALERS or type(est).__module__.split(".")[0] != "sklearn":
        raise TypeError(
            f"The pipeline step {step_name!r} ({kind}) has no C form in sparsekm: the C "
            f"exporter runs {', '.join(_SCALERS)} before the kernel machine, nothing else.")
    check_is_fitted(est)
    d = int(est.n_features_in_)
    if kind == "StandardScaler":
        # mean_ is kept (not used) with with_mean=False; scale_ is None with with_std=False
        mean = np.asarray(est.mean_, dtype=np.float64) if est.with_mean else np.zeros(d)
        scale = np.ones(d) if est.scale_ is None else np.asarray(est.scale_, dtype=np.float64)
        return ("standard", mean, scale)
    if getattr(est, "clip", False):
        raise TypeError(f"The pipeline step {step_name!r} is MinMaxScaler(clip=True); the C "
                        f"exporter has no clipping (refit it with clip=False).")
    return ("minmax", np.asarray(est.scale_, dtype=np.float64),
            np.asarray(est.min_, dtype=np.float64))


def c_parts(model):
    """Describe ``model`` as the C code computes it.

    Parameters
    ----------
    model : KernelExpansion, fitted sparsekm model or Pipeline
        What :func:`sparsekm.to_onnx` exports (an expansion-based model), optionally
        as the last step of a ``Pipeline`` whose earlier steps are
        ``StandardScaler``/``MinMaxScaler`` (or ``"passthrough"``).

    Returns
    -------
    CModelParts

    Raises
    ------
    TypeError
        For another pipeline step, a kernel without a C form or a model that is not
        expansion-based, naming the reason.
    ValueError
        For an unfitted model or non-finite parameters.
    """
    from sklearn.pipeline import Pipeline

    steps = []
    if isinstance(model, Pipeline):
        for step_name, est in model.steps[:-1]:
            if est is None or est == "passthrough":
                continue
            steps.append(_scaler_step(step_name, est))
        model = model.steps[-1][1]
    model = _from_sklearn(model)
    expansion, head = model_head(model)
    if type(expansion.kernel) not in _KERNELS:
        raise TypeError(
            f"The kernel {expansion.kernel!r} has no C form in sparsekm (supported: RBF, "
            f"Polynomial, Sigmoid, Linear, InverseMultiquadric); the model cannot be exported.")
    for kind, a, b in steps:
        if a.shape != (expansion.n_features,) or b.shape != a.shape:
            raise ValueError(f"A {kind} scaler step over {a.shape[0]} features feeds an "
                             f"expansion over {expansion.n_features} features.")
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise ValueError(f"The {kind} scaler step has non-finite statistics.")
    if head["kind"] != "scores":
        _label_strings(head["classes"])  # refuse labels C cannot hold before writing
    return CModelParts(steps, expansion, head)


def _from_sklearn(model):
    """scikit-learn's SVC/NuSVC/OneVsRest/OneVsOne(SVC) and SVR as sparsekm's exact forms."""
    from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
    from sklearn.svm import SVC, SVR, NuSVC, NuSVR

    from .interop import classifier_from_estimator, expansion_from_estimator

    if isinstance(model, (SVC, NuSVC, OneVsRestClassifier, OneVsOneClassifier)):
        return classifier_from_estimator(model)
    if isinstance(model, (SVR, NuSVR)):
        return expansion_from_estimator(model)
    return model


def model_head(model, target="C"):
    """Describe ``model`` as ``(expansion, head)``: what an exporter computes.

    Parameters
    ----------
    model : KernelExpansion or fitted sparsekm estimator
    target : str, default="C"
        The export format named in error messages.

    Returns
    -------
    expansion : KernelExpansion
        The expansion whose outputs the exported code computes.
    head : dict
        ``{"kind": "scores"}`` (regressors, transformers, a bare expansion: the
        outputs as they are), or, for classifiers, ``{"kind": "binary" | "ovr" |
        "ovo", "classes": ...}``; one-vs-one heads also carry
        ``decision_function_shape``, ``break_ties`` and ``vote`` of
        :class:`sparsekm.multiclass.ExpansionClassifier`, whose rules the export
        reproduces.

    Raises
    ------
    TypeError
        For a model that is not an expansion-based sparsekm model.
    ValueError
        For an unfitted model.
    """
    from sklearn.utils.validation import NotFittedError

    from .multiclass import ExpansionClassifier

    if isinstance(model, KernelExpansion):
        return model, {"kind": "scores"}
    name = type(model).__name__
    clf = None
    try:
        if isinstance(model, ExpansionClassifier):
            clf = model
            clf.classes_  # noqa: B018 (validates the parameters)
        elif hasattr(model, "_classifier") and hasattr(model, "scheme_") or (
                hasattr(model, "_classifier") and hasattr(model, "expansion_")):
            clf = model._classifier()  # ReducedSetClassifier: its expansion and scheme
    except NotFittedError:
        clf = None
    if clf is not None:
        head = {"kind": clf.scheme, "classes": np.asarray(clf.classes_),
                "decision_function_shape": clf.decision_function_shape,
                "break_ties": bool(clf.break_ties), "vote": clf.vote}
        return clf.expansion, head
    if hasattr(model, "transform") and hasattr(model, "expansions_"):
        return model.expansions_, {"kind": "scores"}  # KernelPCA: eq. 36 with centring
    if hasattr(model, "expansion_"):
        exp = model.expansion_
        if hasattr(model, "classes_") and hasattr(model, "decision_function"):
            kind = "binary" if exp.coef.ndim == 1 else "ovr"
            return exp, {"kind": kind, "classes": np.asarray(model.classes_)}
        return exp, {"kind": "scores"}
    if hasattr(model, "fit") and name in _known_model_names():
        raise ValueError(f"This {name} instance is not fitted yet; call 'fit' before exporting "
                         f"it to {target}.")
    raise TypeError(
        f"{name} cannot be exported to {target}: sparsekm exports a KernelExpansion or a fitted "
        f"sparsekm model whose output is a kernel expansion (expansion_/expansions_).")


def _known_model_names():
    from . import models

    return set(models.__all__)


def _n_decision(expansion, head):
    kind = head["kind"]
    m = expansion.n_outputs
    if kind != "ovo":
        return m
    k = len(head["classes"])
    if head["vote"] == "ovo-classifier":
        return 1 if k == 2 else k
    if head["decision_function_shape"] == "ovo" or k == 2:
        return m
    return k


def deployed_model(model, precision="float32", *, scales="per-vector"):
    """The model with the numbers its C form stores, as a Python object.

    The expansion becomes the dequantized one (:func:`sparsekm.quantize.quantize_expansion`:
    vectors in ``precision``, coefficients and thresholds in float32) and scaler
    statistics are rounded to float32, as :func:`to_c` stores them. Its
    ``decision_function`` is what the C code computes (in double, to rounding).

    Returns
    -------
    object with ``decision_function(X)`` and, for classifiers, ``predict(X)`` and
    ``classes_``: a :class:`~sparsekm.multiclass.ExpansionClassifier` (or the
    :class:`~sparsekm.KernelExpansion`), inside a ``Pipeline`` behind copies of the
    scalers when ``model`` has any.
    """
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    from .multiclass import ExpansionClassifier

    parts = c_parts(model)
    q = quantize_expansion(parts.expansion, precision, scales=scales).expansion
    head = parts.head
    if head["kind"] == "scores":
        last = q
    else:
        last = ExpansionClassifier(q, classes=head["classes"],
                                   scheme=head["kind"],
                                   decision_function_shape=head.get("decision_function_shape",
                                                                    "ovr"),
                                   break_ties=head.get("break_ties", False),
                                   vote=head.get("vote", "svc"))
    if not parts.steps:
        return last
    pre = [(f"step{i}", FunctionTransformer(_step_function(s))) for i, s in
           enumerate(parts.steps)]
    return Pipeline(pre + [("model", last)])


def _step_function(step):
    kind, a, b = step
    a32 = a.astype(np.float32).astype(np.float64)
    b32 = b.astype(np.float32).astype(np.float64)
    if kind == "standard":
        return lambda X: (np.asarray(X, dtype=np.float64) - a32) / b32
    return lambda X: np.asarray(X, dtype=np.float64) * a32 + b32


# -- C text --------------------------------------------------------------------------
def _f32(v):
    v = float(np.float32(v))
    if not np.isfinite(v):
        raise ValueError(f"A stored value is not finite in float32 ({v}); it has no C form.")
    s = f"{v:.9g}"
    if not any(c in s for c in ".e"):
        s += ".0"
    return s + "f"


def _f64(v):
    v = float(v)
    if not np.isfinite(v):
        raise ValueError(f"A kernel parameter is not finite ({v}); it has no C form.")
    s = repr(v)
    return s if any(c in s for c in ".e") else s + ".0"


def _array(ctype, name, items, per_line=8, static=True):
    items = list(items)
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    body = ",\n    ".join(lines)
    return (f"{'static ' if static else ''}const {ctype} {name}[{len(items)}] = {{\n    "
            f"{body}\n}};\n")


def _c_string(s):
    out = []
    for ch in s.encode("utf-8"):
        c = chr(ch)
        if c in '"\\?':
            out.append("\\" + c)
        elif 32 <= ch < 127:
            out.append(c)
        else:
            out.append(f"\\{ch:03o}")
    return '"' + "".join(out) + '"'


def _label_strings(classes):
    classes = np.asarray(classes)
    if classes.dtype.kind not in "iubUSO":
        raise TypeError(f"Class labels of dtype {classes.dtype} cannot be exported to C "
                        f"(integers and strings can).")
    return [str(c) for c in classes.tolist()]


def _block_widths(n):
    """Widths of the blocks of vectors, in order: ``_BLOCK`` each, then the rest as
    powers of two, largest first (29 = 16 + 8 + 4 + 1): a compiler vectorizes a loop
    over a power-of-two count at ``-O2`` with no scalar remainder loop."""
    full, rest = divmod(int(n), _BLOCK)
    return [_BLOCK] * full + [1 << k for k in range(_BLOCK.bit_length() - 1, -1, -1)
                              if rest >> k & 1]


def _blocked(codes):
    """The stored vectors in the order the C code reads them: blocks of
    :func:`_block_widths`, each laid out feature-major (entry ``i`` of the block's
    ``w`` vectors side by side), so that the innermost C loop runs over the block's
    vectors, a fixed count with no reduction, which compilers vectorize at
    ``-O2``/``-O3`` without ``-ffast-math``. The same numbers, the same bytes."""
    codes = np.asarray(codes)
    starts = np.cumsum([0] + _block_widths(len(codes)))
    return np.concatenate([codes[j:k].T.ravel() for j, k in zip(starts[:-1], starts[1:])]
                          ) if len(codes) else codes.ravel()


def _vector_decl(q, P):
    """C declarations of the stored vectors (and int8 scales), in :func:`_blocked` order."""
    codes = _blocked(q.codes)
    if q.precision == "float32":
        return _array("float", f"{P}_vectors", (_f32(v) for v in codes))
    if q.precision == "float16":
        return _array("uint16_t", f"{P}_vectors",
                      (f"0x{v:04x}" for v in codes.view(np.uint16)), per_line=12)
    return (_array("int8_t", f"{P}_vectors", (str(int(v)) for v in codes), per_line=16)
            + _array("float", f"{P}_scales", (_f32(v) for v in q.scale)))


_HALF = """
/* IEEE half (binary16) bits to the bits of a float 2^-112 times its value: the half's
   exponent and fraction moved into a float's places; scaled by 2^112 where it is used
   (exact, subnormal halves included); finite values only (the exporter refuses
   others). Integer operations only, so the loop over a block vectorizes. */
static uint32_t {P}_half_bits(uint16_t h)
{{
    return ((uint32_t)(h & 0x8000u) << 16) | ((uint32_t)(h & 0x7fffu) << 13);
}}
#ifdef {U}_NO_SIMD
static float {P}_half(uint16_t h)
{{
    union {{ uint32_t u; float f; }} c;
    c.u = {P}_half_bits(h);
    return c.f * 0x1p112f;
}}
#endif
"""


def _kernel_code(kernel, U):
    """C statements turning the accumulated ``acc`` into ``kv``; radial or not."""
    if isinstance(kernel, RBF):
        return f"kv = exp(-{_f64(kernel.gamma)} * acc);"
    if isinstance(kernel, InverseMultiquadric):
        return f"kv = pow(acc + 1.0, {_f64(kernel.c)});"
    if isinstance(kernel, Linear):
        return "kv = acc;"
    if isinstance(kernel, Sigmoid):
        return f"kv = tanh({_f64(kernel.kappa)} * acc + {_f64(kernel.theta)});"
    lines = [f"{{ R u = {_f64(kernel.gamma)} * acc + {_f64(kernel.coef0)}; int p;",
             "      kv = u;", f"      for (p = 1; p < {int(kernel.degree)}; ++p) kv *= u; }}"]
    return "\n    ".join(lines)


def _expansion_code(parts, q, P, U):
    exp = parts.expansion
    n, d = exp.n_terms, exp.n_features
    m = q.coef.shape[1]
    src = []
    if n:
        src.append(_vector_decl(q, P))
        src.append(_array("float", f"{P}_coef", (_f32(v) for v in q.coef.ravel())))
    src.append(_array("float", f"{P}_intercept", (_f32(v) for v in q.intercept)))
    for s, (kind, a, b) in enumerate(parts.steps):
        names = ("mean", "scale") if kind == "standard" else ("mul", "add")
        src.append(_array("float", f"{P}_s{s}_{names[0]}", (_f32(v) for v in a)))
        src.append(_array("float", f"{P}_s{s}_{names[1]}", (_f32(v) for v in b)))
    if n and q.precision == "float16":
        src.append(_HALF.format(P=P, U=U))
    if not n:  # Psi = 0: the thresholds, whatever x
        body = ["", f"/* the expansion's outputs f[0..{m - 1}] from the raw row x */",
                f"static void {P}_expansion(const float *x, R *f)", "{", "    int i;",
                "    (void)x;", f"    for (i = 0; i < {m}; ++i) f[i] = (R){P}_intercept[i];",
                "}"]
        return "".join(src[:1]) + "\n".join(body) + "\n"
    widths = _block_widths(n)
    for w in sorted(set(widths), reverse=True):
        src.append(_block_code(exp.kernel, q, w, d, m, P))
    xx = exp.kernel.is_radial and q.precision == "int8" and q.scales == "per-vector"
    body = ["", f"/* the expansion's outputs f[0..{m - 1}] from the raw row x */",
            f"static void {P}_expansion(const float *x, R *f)", "{",
            f"    R xs[{d}]{', xx = 0' if xx else ''};", "    int i;",
            f"    for (i = 0; i < {d}; ++i) xs[i] = (R)x[i];"]
    for s, (kind, _, _) in enumerate(parts.steps):
        if kind == "standard":
            body.append(f"    for (i = 0; i < {d}; ++i) xs[i] = (xs[i] - (R){P}_s{s}_mean[i])"
                        f" / (R){P}_s{s}_scale[i];")
        else:
            body.append(f"    for (i = 0; i < {d}; ++i) xs[i] = xs[i] * (R){P}_s{s}_mul[i]"
                        f" + (R){P}_s{s}_add[i];")
    if xx:
        body.append(f"    for (i = 0; i < {d}; ++i) xx += xs[i] * xs[i];")
    body.append(f"    for (i = 0; i < {m}; ++i) f[i] = (R){P}_intercept[i];")
    n_full = n // _BLOCK * _BLOCK
    per_vec = q.precision == "int8" and q.scales == "per-vector"

    def call(w, j):
        args = ["xs"] + (["xx"] if xx else []) + [f"{P}_vectors + {j} * {d}"]
        args += [f"{P}_scales + {j}"] if per_vec else []
        return f"{P}_block{w}({', '.join(args + [f'{P}_coef + {j} * {m}', 'f'])});"

    if n_full:
        body += [f"    for (i = 0; i < {n_full}; i += {_BLOCK})",
                 "        " + call(_BLOCK, "(long)i")]
    for w in widths[n_full // _BLOCK:]:
        body.append("    " + call(w, n_full))
        n_full += w
    body.append("}")
    return "".join(src) + "\n".join(body) + "\n"


def _block_code(kernel, q, w, d, m, P):
    """A static function adding the terms of ``w`` consecutive vectors to ``f``.

    Each vector's sum over the features runs in feature order in its own accumulator
    ``a[0][b]`` (no reassociation); blocks of at most 8 vectors, too few to keep the
    arithmetic units busy, split it into 4 sums over the features ``i = c mod 4``,
    added as ``(a0 + a1) + (a2 + a3)``. int8 with per-vector scales sums over the
    integers ``q`` and scales once: ``x.z = s sum_i x_i q_i`` and, radial,
    ``||x - z||^2 = ||x||^2 - 2 s x.q + s^2 q.q`` (``q.q`` summed exactly in
    integers; clipped at 0 like sparsekm's engine); per-feature int8 scales
    multiply each code, ``z_i = s_i q_i``."""
    radial = kernel.is_radial
    prec = q.precision
    per_vec = prec == "int8" and q.scales == "per-vector"
    ztype = {"float32": "float", "float16": "uint16_t", "int8": "int8_t"}[prec]
    # q.q <= 127^2 d: 32 bits hold it exactly up to d = 133,143 features
    qt = "int_least32_t" if d <= 133_000 else "long long"
    qq = radial and per_vec
    k = 4 if w <= 8 and d >= 8 else 1  # independent sums per vector
    args = ["const R *xs"] + (["R xx"] if qq else []) + [f"const {ztype} *z"]
    args += ["const float *s"] if per_vec else []
    lines = ["", f"static void {P}_block{w}({', '.join(args)}, const float *coef, R *f)",
             "{", f"    R a[{k}][{w}];" + (f" {qt} qq[{w}];" if qq else ""),
             "    int i, b, o;",
             f"    for (b = 0; b < {w}; ++b) {{ "
             + " ".join(f"a[{c}][b] = 0;" for c in range(k)) + (" qq[b] = 0;" if qq else "")
             + " }"]
    lines.append(f"#ifdef {P.upper()}_NO_SIMD")
    lines += _one_vector_loops(prec, per_vec, radial, qt, w, d, P)
    lines.append("#else")
    step = _feature_step(prec, per_vec, radial, qq, qt, ztype, w, P)
    if k == 1:
        lines += [f"    for (i = 0; i < {d}; ++i) {{"] + step(0, "i") + ["    }"]
    else:
        lines.append(f"    for (i = 0; i + {k - 1} < {d}; i += {k}) {{")
        for c in range(k):
            lines += step(c, f"i + {c}")
        lines.append("    }")
        if d % k:
            lines += [f"    for (; i < {d}; ++i) {{"] + step(0, "i") + ["    }"]
    lines.append("#endif")
    lines += [f"    for (b = 0; b < {w}; ++b) {{", "        R acc, kv, dot = "
              + ("(a[0][b] + a[1][b]) + (a[2][b] + a[3][b]);" if k == 4 else "a[0][b];")]
    if qq:
        lines += ["        acc = xx - 2 * (R)s[b] * dot + (R)s[b] * (R)s[b] * (R)qq[b];",
                  "        if (acc < 0) acc = 0;"]
    elif per_vec:
        lines.append("        acc = (R)s[b] * dot;")
    else:
        lines.append("        acc = dot;")
    lines += ["        " + _kernel_code(kernel, P.upper()),
              f"        for (o = 0; o < {m}; ++o) f[o] += (R)coef[b * {m} + o] * kv;",
              "    }", "}"]
    return "\n".join(lines) + "\n"


def _one_vector_loops(prec, per_vec, radial, qt, w, d, P):
    """``-D<PREFIX>_NO_SIMD``: the same stored block read one vector at a time, four
    sums in registers over every fourth feature (for a core without vector units,
    where the block's 32 sums would live on the stack); the sum lands in ``a[0][b]``."""
    qq = radial and per_vec

    def term(c, i):
        zv = f"z[({i}) * {w} + b]"
        z = {"float32": f"(R){zv}", "float16": f"(R){P}_half({zv})"}.get(
            prec, f"(R){zv}" if per_vec else f"(R){P}_scales[{i}] * (R){zv}")
        if per_vec:
            return f"s{c} += xs[{i}] * {z};" + (f" qq[b] += ({qt}){zv} * {zv};" if qq else "")
        if radial:
            return f"{{ R t = xs[{i}] - {z}; s{c} += t * t; }}"
        return f"s{c} += xs[{i}] * {z};"

    lines = [f"    for (b = 0; b < {w}; ++b) {{", "        R s0 = 0, s1 = 0, s2 = 0, s3 = 0;",
             f"        for (i = 0; i + 3 < {d}; i += 4) {{"]
    lines += [f"            {term(c, f'i + {c}')}" for c in range(4)] + ["        }"]
    if d % 4:
        lines.append(f"        for (; i < {d}; ++i) {{ {term(0, 'i')} }}")
    return lines + ["        a[0][b] = (s0 + s1) + (s2 + s3);", "    }"]


def _feature_step(prec, per_vec, radial, qq, qt, ztype, w, P):
    """``step(c, i)``: the C block adding feature ``i`` of ``w`` vectors to ``a[c]``."""
    def step(c, i):
        lines = ["    {", f"        const {ztype} *zi = z + ({i}) * {w};",
                 f"        const R xi = xs[{i}];"]
        if prec == "float16":  # the halves of entry i first, then the sums (both vectorize)
            lines += [f"        union {{ uint32_t u[{w}]; float f[{w}]; }} h;",
                      f"        for (b = 0; b < {w}; ++b) h.u[b] = {P}_half_bits(zi[b]);"]
            z = "(R)(h.f[b] * 0x1p112f)"
        elif prec == "float32" or per_vec:
            z = "(R)zi[b]"
        else:
            lines.append(f"        const R si = (R){P}_scales[{i}];")
            z = "si * (R)zi[b]"
        if per_vec:
            lines.append(f"        for (b = 0; b < {w}; ++b) {{ a[{c}][b] += xi * {z};"
                         + (f" qq[b] += ({qt})zi[b] * zi[b];" if qq else "") + " }")
        elif radial:
            lines.append(f"        for (b = 0; b < {w}; ++b) {{ R t = xi - {z}; "
                         f"a[{c}][b] += t * t; }}")
        else:
            lines.append(f"        for (b = 0; b < {w}; ++b) a[{c}][b] += xi * {z};")
        return ["    " + ln for ln in lines + ["    }"]]  # inside the loop over i
    return step


def _head_code(parts, P, U):
    head = parts.head
    kind = head["kind"]
    m = parts.expansion.n_outputs
    out = []
    argmax = ["    best = 0;",
              "    for (c = 1; c < {k}; ++c) if ({v}[c] > {v}[best]) best = c;",
              "    return best;"]
    if kind == "ovo" and (head["vote"] == "ovo-classifier" or (
            head["decision_function_shape"] == "ovr" and len(head["classes"]) > 2)):
        k = len(head["classes"])
        out.append(f"""
/* scikit-learn's one-vs-one aggregation: votes + conf / (3 (|conf| + 1)); a pair votes
   for its second class when f < 0 (le = 0, SVC) or f <= 0 (le = 1, OneVsOneClassifier) */
static void {P}_ovr(const R *f, R *d, int le)
{{
    R votes[{k}], conf[{k}];
    int i, j, p = 0, c;
    for (c = 0; c < {k}; ++c) votes[c] = conf[c] = 0;
    for (i = 0; i < {k}; ++i)
        for (j = i + 1; j < {k}; ++j, ++p) {{
            int second = le ? f[p] <= 0 : f[p] < 0;
            conf[i] += f[p];
            conf[j] -= f[p];
            if (second) votes[j] += 1; else votes[i] += 1;
        }}
    for (c = 0; c < {k}; ++c) d[c] = votes[c] + conf[c] / (3 * (fabs(conf[c]) + 1));
}}
""")
    # decision
    dec = ["", f"void {P}_decision(const float *x, float *out)", "{", f"    R f[{m}];"]
    aggregate = None
    if kind == "ovo":
        k = len(head["classes"])
        if head["vote"] == "ovo-classifier":
            aggregate = 1
        elif head["decision_function_shape"] == "ovr" and k > 2:
            aggregate = 0
    if aggregate is not None:
        k = len(head["classes"])
        dec += [f"    R d[{k}];", "    int c;", f"    {P}_expansion(x, f);",
                f"    {P}_ovr(f, d, {aggregate});"]
        if k == 2:  # OneVsOneClassifier, two classes: the second column
            dec.append("    (void)c;\n    out[0] = (float)d[1];")
        else:
            dec.append(f"    for (c = 0; c < {k}; ++c) out[c] = (float)d[c];")
    else:
        dec += ["    int o;", f"    {P}_expansion(x, f);",
                f"    for (o = 0; o < {m}; ++o) out[o] = (float)f[o];"]
    dec.append("}")
    out.append("\n".join(dec) + "\n")
    if kind == "scores":
        return _rename_real("".join(out), P)
    k = len(head["classes"])
    pred = ["", f"int {P}_predict(const float *x)", "{", f"    R f[{m}];"]
    if kind == "binary":
        pred += [f"    {P}_expansion(x, f);", "    return f[0] > 0;"]
    elif kind == "ovr":
        pred += ["    int c, best;", f"    {P}_expansion(x, f);"]
        pred += [s.format(k=k, v="f") for s in argmax]
    elif head["vote"] == "ovo-classifier":
        pred += [f"    R d[{k}];", "    int c, best;", f"    {P}_expansion(x, f);",
                 f"    {P}_ovr(f, d, 1);"]
        pred += (["    (void)c; (void)best;", "    return d[1] > 0;"] if k == 2 else
                 [s.format(k=k, v="d") for s in argmax])
    elif head["break_ties"] and head["decision_function_shape"] == "ovr" and k > 2:
        pred += [f"    R d[{k}];", "    int c, best;", f"    {P}_expansion(x, f);",
                 f"    {P}_ovr(f, d, 0);"]
        pred += [s.format(k=k, v="d") for s in argmax]
    else:  # libsvm: f > 0 votes for the pair's first class; ties to the lowest index
        pred += [f"    int votes[{k}];", "    int i, j, p = 0, c, best;",
                 f"    {P}_expansion(x, f);",
                 f"    for (c = 0; c < {k}; ++c) votes[c] = 0;",
                 f"    for (i = 0; i < {k}; ++i)",
                 f"        for (j = i + 1; j < {k}; ++j, ++p) ++votes[f[p] > 0 ? i : j];"]
        pred += [s.format(k=k, v="votes") for s in argmax]
    pred.append("}")
    out.append("\n".join(pred) + "\n")
    labels = _label_strings(head["classes"])
    out = [_rename_real("".join(out), P)]
    out.append("\n" + _array("char *", f"{P}_classes", (_c_string(s) for s in labels),
                             per_line=8, static=False).replace(
        f"const char * {P}_classes[{k}]", f"const char *const {P}_classes[{U}_N_CLASSES]"))
    return "".join(out)


def to_c(model, *, name="model", precision="float32", scales="per-vector", header=None):
    """The C99 source and header of ``model`` (see the module docstring).

    Parameters
    ----------
    model : KernelExpansion, fitted sparsekm model or Pipeline
        See :func:`c_parts`.
    name : str, default="model"
        Prefix of every exported symbol (a C identifier); macros use it upper-cased.
    precision : {"float32", "float16", "int8"}, default="float32"
        Storage of the expansion vectors (:func:`sparsekm.quantize.quantize_expansion`).
    scales : {"per-vector", "per-feature"}, default="per-vector"
        int8 scales.
    header : str, default=None
        File name the source ``#include``s; default ``name + ".h"``.

    Returns
    -------
    source, header_text : str, str

    Raises
    ------
    TypeError, ValueError
        See :func:`c_parts`; an invalid ``name``, ``precision`` or ``scales``.

    Examples
    --------
    >>> from sparsekm import KernelExpansion, RBF
    >>> psi = KernelExpansion([[0.0, 1.0]], [2.0], RBF(0.5), -0.5)
    >>> src, h = to_c(psi, name="tiny")
    >>> "#define TINY_N_FEATURES 2" in h, "void tiny_decision(const float *x, float *out)" in h
    (True, True)
    """
    P = _check_name(name)
    U = P.upper()
    parts = c_parts(model)
    q = quantize_expansion(parts.expansion, precision, scales=scales)
    exp, head = parts.expansion, parts.head
    header = header or f"{P}.h"
    guard = re.sub(r"[^A-Za-z0-9]", "_", header).upper()
    classifier = _has_labels(head)
    h = [f"/* {header}: generated by sparsekm (kernel expansion, {type(exp.kernel).__name__}"
         f" kernel, {exp.n_terms} vectors stored as {precision}). */",
         f"#ifndef {guard}_", f"#define {guard}_", "",
         f"#define {U}_N_FEATURES {exp.n_features}",
         f"#define {U}_N_OUTPUTS {parts.n_decision}"]
    if classifier:
        h += [f"#define {U}_N_CLASSES {len(head['classes'])}", "",
              "/* class labels in the order of the model's classes_ */",
              f"extern const char *const {P}_classes[{U}_N_CLASSES];", "",
              "/* x: the raw feature row (before any scaler the model holds) */",
              f"int {P}_predict(const float *x);  /* index into {P}_classes */"]
    else:
        h += ["", "/* x: the raw feature row (before any scaler the model holds) */"]
    h += [f"void {P}_decision(const float *x, float *out);  /* {U}_N_OUTPUTS values */",
          "", f"#endif /* {guard}_ */", ""]
    src = [f"/* Generated by sparsekm: {head['kind']} model, {exp.n_features} features, "
           f"{exp.n_terms} {type(exp.kernel).__name__} vectors ({precision}"
           + (f", {scales} scales" if precision == "int8" else "") + "). C99, no allocation. */",
           "#include <math.h>"]
    if precision != "float32" and exp.n_terms:
        src.append("#include <stdint.h>")
    src += [f'#include "{header}"', "", f"#ifndef {U}_REAL",
            f"#define {U}_REAL double  /* -D{U}_REAL=float for a single-precision FPU */",
            "#endif", f"typedef {U}_REAL {P}_real;", ""]
    text = "\n".join(src) + "\n" + _rename_real(_expansion_code(parts, q, P, U), P)
    return text + _head_code(parts, P, U), "\n".join(h)


def c_function_names(model, name="model"):
    """The functions :func:`to_c` declares for ``model``, in the header's order:
    ``<name>_predict`` (classifiers: a class index) and ``<name>_decision``.

    Examples
    --------
    >>> from sparsekm import KernelExpansion, RBF
    >>> c_function_names(KernelExpansion([[0.0, 1.0]], [2.0], RBF(0.5)), name="tiny")
    ['tiny_decision']
    """
    P = _check_name(name)
    return ([f"{P}_predict"] if _has_labels(c_parts(model).head) else []) + [f"{P}_decision"]


def _has_labels(head):
    """Whether the exported model predicts a class (and so declares ``_predict``)."""
    return head["kind"] != "scores"


def _rename_real(text, P):
    """Name the arithmetic type ``<prefix>_real`` (two models link into one program)."""
    return re.sub(r"\bR\b", f"{P}_real", text)


def export_c(model, path, *, name="model", precision="float32", scales="per-vector",
             header_path=None):
    """Write ``to_c(model, ...)`` to ``path`` and its header (default: ``.h`` beside it).

    Returns
    -------
    (Path, Path)
        The source and header written.
    """
    path = Path(path)
    header_path = Path(header_path) if header_path is not None else path.with_suffix(".h")
    src, h = to_c(model, name=name, precision=precision, scales=scales,
                  header=header_path.name)
    path.write_text(src, encoding="ascii")
    header_path.write_text(h, encoding="ascii")
    return path, header_path


def c_driver_source(header, name="model"):
    """A small C program around an exported model (tests, benchmarks, an example).

    It reads ``n`` and then ``n`` rows of ``N_FEATURES`` numbers from the file named
    by its first argument and prints, per row, the predicted index (classifiers)
    and the ``N_OUTPUTS`` decision values (``%.9g``). With a second argument
    ``R``, it instead times ``R`` passes of ``predict`` (or ``decision``) over the
    rows and prints the nanoseconds per row (``clock()``).
    """
    P = _check_name(name)
    U = P.upper()
    return f"""#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "{header}"

int main(int argc, char **argv)
{{
    FILE *fh;
    long n, r, i, reps = 0;
    int c, sink = 0;
    float *rows, out[{U}_N_OUTPUTS];
    if (argc < 2 || !(fh = fopen(argv[1], "r"))) return 2;
    if (argc > 2) reps = atol(argv[2]);
    if (fscanf(fh, "%ld", &n) != 1 || n < 1) return 3;
    rows = malloc(sizeof(float) * (size_t)n * {U}_N_FEATURES);
    if (!rows) return 4;
    for (i = 0; i < n * {U}_N_FEATURES; ++i)
        if (fscanf(fh, "%f", &rows[i]) != 1) return 5;
    fclose(fh);
    if (reps > 0) {{
        clock_t t0 = clock();
        double sec;
        for (r = 0; r < reps; ++r)
            for (i = 0; i < n; ++i) {{
#ifdef {U}_N_CLASSES
                sink += {P}_predict(rows + i * {U}_N_FEATURES);
#else
                {P}_decision(rows + i * {U}_N_FEATURES, out);
                sink += out[0] > 0;
#endif
            }}
        sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
        printf("%.3f ns/row (sink %d)\\n", 1e9 * sec / ((double)reps * n), sink);
    }} else {{
        for (i = 0; i < n; ++i) {{
#ifdef {U}_N_CLASSES
            printf("%d", {P}_predict(rows + i * {U}_N_FEATURES));
#else
            printf("-1");
#endif
            {P}_decision(rows + i * {U}_N_FEATURES, out);
            for (c = 0; c < {U}_N_OUTPUTS; ++c) printf(" %.9g", out[c]);
            printf("\\n");
        }}
    }}
    free(rows);
    return 0;
}}
"""
