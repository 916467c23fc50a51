"""ONNX export of kernel expansions and the models built on them.

Every sparsekm model whose output is a kernel expansion
``f(x) = sum_j coef_j k(x, z_j) + b`` (eq. 1 of *Fast approximation of support
vector kernel expansions*) becomes a small ONNX graph:

1. the kernel block ``K(X, Z)`` from one ``MatMul`` with the constant ``Z^T``:

   * radial kernels from squared distances
     ``||x - m||^2 + ||z - m||^2 - 2 (x - m).(z - m)``, shifted by the mean ``m`` of
     the expansion vectors (distances are shift invariant; the shift keeps float32
     cancellation small), clipped at 0, then the profile
     (``exp(-gamma r^2)`` for :class:`~sparsekm.kernels.RBF`,
     ``(r^2 + 1)^c`` for :class:`~sparsekm.kernels.InverseMultiquadric`);
   * dot-product kernels from ``x.z`` and their profile
     (``(gamma t + coef0)^d``, ``tanh(kappa t + theta)``, ``t``);

2. ``MatMul`` with the coefficients and ``Add`` of the intercept;
3. a head: the scores as they are (regression, transforms, a bare expansion), the
   sign (binary classifiers), the arg-max (one-vs-rest) or scikit-learn's
   one-vs-one vote (with its vote-plus-confidence ``ovr`` aggregation).

Classifiers output ``label`` and ``scores`` (the ``decision_function``), like
skl2onnx's classifiers without probabilities. The graph computes in ``dtype``
(float32 by default; float64 gives parity with sparsekm to rounding).

The optional extra ``sparsekm[onnx]`` (onnx, onnxruntime, skl2onnx) is imported
only when a function here is called; the core never needs it.
"""

from __future__ import annotations

import numbers

import numpy as np

from .expansion import KernelExpansion
from .kernels import (
    RBF,
    InverseMultiquadric,
    Linear,
    Matern,
    Polynomial,
    RationalQuadratic,
    Sigmoid,
)
from .utils._extras import install_hint

__all__ = ["to_onnx", "register_skl2onnx_converters", "onnx_head"]

_OPSET = 17


def _import_onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            f"ONNX export needs the optional extra: {install_hint('onnx')} "
            "(onnx, onnxruntime, skl2onnx).") from None
    return onnx, helper, numpy_helper


# -- what a model computes ------------------------------------------------------------
def onnx_head(model):
    """Describe ``model`` as ``(expansion, head)`` for export.

    :func:`sparsekm.c_export.model_head` with errors naming ONNX: the expansion
    whose outputs the graph computes and the head (``"scores"``, ``"binary"``,
    ``"ovr"`` or ``"ovo"`` with the classes and the one-vs-one rules).
    """
    from .c_export import model_head

    return model_head(model, target="ONNX")


def _check_kernel(kernel):
    if type(kernel) not in (RBF, InverseMultiquadric, Polynomial, Sigmoid, Linear, Matern,
                            RationalQuadratic):
        raise TypeError(
            f"The kernel {kernel!r} has no ONNX form in sparsekm (supported: RBF, "
            f"InverseMultiquadric, Matern, RationalQuadratic, Polynomial, Sigmoid, Linear); "
            f"the model cannot be exported.")


# -- a tiny graph builder that writes either a standalone graph or into skl2onnx ------
class _Builder:
    """Collects nodes and constants; ``prefix`` keeps names unique inside a pipeline."""

    def __init__(self, dtype, prefix="skm", container=None, scope=None):
        self.dtype = np.dtype(dtype)
        self.prefix = prefix
        self.container = container
        self.scope = scope
        self.nodes = []
        self.initializers = []
        self._count = 0

    def name(self, base):
        if self.scope is not None:
            return self.scope.get_unique_variable_name(f"{self.prefix}_{base}")
        self._count += 1
        return f"{self.prefix}_{base}_{self._count}"

    def const(self, base, value, dtype=None):
        _, _, numpy_helper = _import_onnx()
        arr = np.asarray(value, dtype=self.dtype if dtype is None else dtype)
        name = self.name(base)
        tensor = numpy_helper.from_array(np.ascontiguousarray(arr), name=name)
        if self.container is not None:
            content = [str(v) for v in arr.ravel()] if arr.dtype == object else tensor
            self.container.add_initializer(name, tensor.data_type, list(arr.shape), content)
        else:
            self.initializers.append(tensor)
        return name

    def op(self, op_type, inputs, out=None, **attrs):
        _, helper, _ = _import_onnx()
        out = out or self.name(op_type.lower())
        node_name = self.name(f"n_{op_type.lower()}")
        if self.container is not None:
            self.container.add_node(op_type, list(inputs), [out], name=node_name,
                                    op_version=_op_version(op_type), **attrs)
        else:
            self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=node_name,
                                               **attrs))
        return out


def _op_version(op_type):
    return {"Max": 13, "ArgMax": 13, "Gather": 13, "Cast": 13, "Greater": 13, "Reshape": 14,
            "Less": 13, "Where": 16}.get(op_type, 14 if op_type in ("Add", "Mul", "Sub", "Div")
                                          else 13)


def _kernel_block(b, x, expansion):
    """ONNX nodes for ``K(X, Z)``, shape (n_samples, n_terms)."""
    kernel = expansion.kernel
    _check_kernel(kernel)
    Z = np.asarray(expansion.vectors, dtype=np.float64)
    if kernel.is_radial:
        m = Z.mean(axis=0) if Z.shape[0] else np.zeros(Z.shape[1])
        Zc = Z - m
        xc = b.op("Sub", [x, b.const("shift", m[None, :])])
        # ||x - m||^2 as a (n, 1) column: (x - m)^2 @ 1
        x2 = b.op("MatMul", [b.op("Mul", [xc, xc]), b.const("ones", np.ones((Z.shape[1], 1)))])
        cross = b.op("MatMul", [xc, b.const("m2zt", -2.0 * Zc.T)])
        r2 = b.op("Add", [b.op("Add", [cross, x2]), b.const("z2", (Zc * Zc).sum(axis=1)[None, :])])
        r2 = b.op("Max", [r2, b.const("zero", 0.0)])
        if isinstance(kernel, RBF):
            return b.op("Exp", [b.op("Mul", [r2, b.const("neg_gamma", -kernel.gamma)])])
        if isinstance(kernel, Matern):  # s = sqrt(2 nu) r / l (nu = 1/2: r / l)
            scale = (1.0 if kernel.nu == 0.5 else np.sqrt(2.0 * kernel.nu)) / kernel.length_scale
            s = b.op("Mul", [b.op("Sqrt", [r2]), b.const("matern_scale", scale)])
            e = b.op("Exp", [b.op("Neg", [s])])
            if kernel.nu == 0.5:
                return e
            poly = b.op("Add", [s, b.const("one", 1.0)])
            if kernel.nu == 2.5:
                poly = b.op("Add", [poly, b.op("Mul", [b.op("Mul", [s, s]),
                                                       b.const("third", 1.0 / 3.0)])])
            return b.op("Mul", [poly, e])
        if isinstance(kernel, RationalQuadratic):
            base = b.op("Add", [b.op("Mul", [r2, b.const(
                "rq_scale", 1.0 / (2.0 * kernel.alpha * kernel.length_scale ** 2))]),
                b.const("one", 1.0)])
            return b.op("Pow", [base, b.const("neg_alpha", -kernel.alpha)])
        return b.op("Pow", [b.op("Add", [r2, b.const("one", 1.0)]), b.const("c", kernel.c)])
    t = b.op("MatMul", [x, b.const("zt", Z.T)])
    if isinstance(kernel, Linear):
        return t
    if isinstance(kernel, Polynomial):
        u = b.op("Add", [b.op("Mul", [t, b.const("gamma", kernel.gamma)]),
                         b.const("coef0", kernel.coef0)])
        if kernel.degree == 1:
            return u
        if kernel.degree == 2:
            return b.op("Mul", [u, u])
        return b.op("Pow", [u, b.const("degree", float(kernel.degree))])
    u = b.op("Add", [b.op("Mul", [t, b.const("kappa", kernel.kappa)]),
                     b.const("theta", kernel.theta)])
    return b.op("Tanh", [u])


def _scores(b, x, expansion):
    """``K(X, Z) @ coef + intercept`` as a 2-D tensor (n_samples, n_outputs)."""
    coef = np.asarray(expansion.coef, dtype=np.float64)
    coef2 = coef[:, None] if coef.ndim == 1 else coef
    intercept = np.atleast_1d(np.asarray(expansion.intercept, dtype=np.float64))
    if expansion.n_terms == 0:  # Psi = 0: the intercept for every row
        zeros = b.op("MatMul", [x, b.const("zero_w", np.zeros((expansion.n_features,
                                                                coef2.shape[1])))])
        return b.op("Add", [zeros, b.const("intercept", intercept[None, :])])
    K = _kernel_block(b, x, expansion)
    f = b.op("MatMul", [K, b.const("coef", coef2)])
    return b.op("Add", [f, b.const("intercept", intercept[None, :])])


def _flat(b, s, out=None):
    return b.op("Reshape", [s, b.const("flat", np.array([-1], dtype=np.int64),
                                       dtype=np.int64)], out=out)


def _ovo_matrices(pairs, n_classes):
    n_pairs = len(pairs)
    win_first = np.zeros((n_pairs, n_classes))
    win_second = np.zeros((n_pairs, n_classes))
    for k, (i, j) in enumerate(pairs):
        win_first[k, i] = 1.0
        win_second[k, j] = 1.0
    return win_first, win_second


def _ovr_aggregate(b, s, first, win_first, win_second):
    """scikit-learn's ``votes + conf / (3 (|conf| + 1))`` from pairwise values ``s``."""
    second = b.op("Sub", [b.const("one", 1.0), first])
    votes = b.op("Add", [b.op("MatMul", [first, b.const("win_first", win_first)]),
                         b.op("MatMul", [second, b.const("win_second", win_second)])])
    conf = b.op("MatMul", [s, b.const("conf", win_first - win_second)])
    denom = b.op("Mul", [b.op("Add", [b.op("Abs", [conf]), b.const("one", 1.0)]),
                         b.const("three", 3.0)])
    return b.op("Add", [votes, b.op("Div", [conf, denom])])


def _emit(b, x, model, label_out=None, scores_out=None):
    """Emit the whole model; returns the names of (label or None, scores)."""
    expansion, head = onnx_head(model)
    s = _scores(b, x, expansion)
    kind = head["kind"]
    one_output = np.ndim(expansion.coef) == 1
    if kind == "scores":
        return None, (_flat(b, s, out=scores_out) if one_output
                      else b.op("Identity", [s], out=scores_out))
    classes = head["classes"]
    k = len(classes)
    fl = _onnx_float(b)
    if kind == "binary":
        idx = b.op("Cast", [b.op("Greater", [_flat(b, s), b.const("zero", 0.0)])], to=7)
        scores = b.op("Identity", [_flat(b, s)], out=scores_out)
    elif kind == "ovr":
        idx = b.op("ArgMax", [s], axis=1, keepdims=0, select_last_index=0)
        scores = b.op("Identity", [s], out=scores_out)
    else:  # one-vs-one (sparsekm.multiclass.ExpansionClassifier's rules)
        pairs = list(zip(*np.triu_indices(k, 1), strict=True))
        win_first, win_second = _ovo_matrices(pairs, k)
        gt = b.op("Cast", [b.op("Greater", [s, b.const("zero", 0.0)])], to=fl)
        if head["vote"] == "ovo-classifier":  # OneVsOneClassifier: f <= 0 votes for j
            D = _ovr_aggregate(b, s, gt, win_first, win_second)
            if k == 2:
                col = b.op("Gather", [D, b.const("col1", np.array(1, dtype=np.int64),
                                                 dtype=np.int64)], axis=1)
                idx = b.op("Cast", [b.op("Greater", [col, b.const("zero", 0.0)])], to=7)
                scores = b.op("Identity", [col], out=scores_out)
            else:
                idx = b.op("ArgMax", [D], axis=1, keepdims=0, select_last_index=0)
                scores = b.op("Identity", [D], out=scores_out)
        else:  # libsvm: f > 0 votes for i, ties to the lowest class index
            votes = b.op("Add", [b.op("MatMul", [gt, b.const("win_first", win_first)]),
                                 b.op("MatMul", [b.op("Sub", [b.const("one", 1.0), gt]),
                                                 b.const("win_second", win_second)])])
            idx = b.op("ArgMax", [votes], axis=1, keepdims=0, select_last_index=0)
            if head["decision_function_shape"] == "ovo" or k == 2:
                scores = (_flat(b, s, out=scores_out) if one_output
                          else b.op("Identity", [s], out=scores_out))
            else:  # sklearn.multiclass._ovr_decision_function(f < 0, -f, k)
                ge = b.op("Sub", [b.const("one", 1.0), b.op("Cast", [
                    b.op("Less", [s, b.const("zero", 0.0)])], to=fl)])
                scores = _ovr_aggregate(b, s, ge, win_first, win_second)
                if head["break_ties"]:
                    idx = b.op("ArgMax", [scores], axis=1, keepdims=0, select_last_index=0)
                scores = b.op("Identity", [scores], out=scores_out)
    labels = _label_constant(classes)
    label = b.op("Gather", [b.const("classes", labels, dtype=labels.dtype), idx], axis=0,
                 out=label_out)
    return label, scores


def _score_shape(expansion, head):
    """Static shape of the ``scores`` output (None = the batch dimension)."""
    kind = head["kind"]
    one_output = np.ndim(expansion.coef) == 1
    if kind in ("scores", "binary"):
        return [None] if one_output else [None, expansion.n_outputs]
    if kind == "ovr":
        return [None, expansion.n_outputs]
    k = len(head["classes"])
    if head["vote"] == "ovo-classifier":
        return [None] if k == 2 else [None, k]
    if head["decision_function_shape"] == "ovo" or k == 2:
        return [None] if one_output else [None, expansion.n_outputs]
    return [None, k]


def _label_constant(classes):
    classes = np.asarray(classes)
    if classes.dtype.kind in "iub":
        return classes.astype(np.int64)
    if classes.dtype.kind in "USO":
        return np.array([str(c) for c in classes], dtype=object)
    raise TypeError(f"Class labels of dtype {classes.dtype} cannot be exported to ONNX "
                    f"(integers and strings can).")


def _onnx_float(b):
    return 11 if b.dtype == np.float64 else 1


def _check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64; got {dtype}.")
    return dtype


# -- public entry points -----------------------------------------------------------------
def to_onnx(model, X_sample=None, dtype=np.float32, *, name="sparsekm", target_opset=_OPSET):
    """Export a kernel-expansion model to an ONNX ``ModelProto``.

    Parameters
    ----------
    model : KernelExpansion, fitted sparsekm model or scikit-learn Pipeline
        Every model whose output is a kernel expansion: a ``KernelExpansion``;
        ``ReducedSetClassifier``/``ReducedSetRegressor`` (binary, one-vs-rest and
        one-vs-one); the SLMC family; ``ApproxSVC``/``ApproxKFD``;
        ``KernelFisherDiscriminant``; ``KernelPCA`` and ``RandomizedKernelPCA``
        (``transform``). A ``Pipeline`` is converted by skl2onnx with sparsekm's
        converters registered (see :func:`register_skl2onnx_converters`).
    X_sample : array-like of shape (n_samples, n_features), default=None
        Optional example input: its number of features is checked against the
        model's (and it types the pipeline input for skl2onnx).
    dtype : {numpy.float32, numpy.float64}, default=numpy.float32
        Arithmetic of the graph. float64 reproduces sparsekm's numbers to rounding.
    name : str, default="sparsekm"
        Graph name.
    target_opset : int, default=17

    Returns
    -------
    onnx.ModelProto
        Input ``X`` of shape ``(N, n_features)``. Outputs: ``label`` and ``scores``
        for classifiers (``scores`` is the ``decision_function``), ``scores`` (the
        prediction or transform) otherwise.

    Raises
    ------
    TypeError
        For a model without an ONNX form (e.g. a custom kernel), naming the reason.
    ValueError
        For an unfitted model, a wrong ``dtype`` or a feature-count mismatch.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm import KernelExpansion, RBF
    >>> psi = KernelExpansion([[0.0, 0.0], [1.0, 1.0]], [1.0, -1.0], RBF(0.5), 0.1)
    >>> m = to_onnx(psi, dtype=np.float64)          # doctest: +SKIP
    >>> [o.name for o in m.graph.output]             # doctest: +SKIP
    ['scores']
    """
    onnx, helper, _ = _import_onnx()
    dtype = _check_dtype(dtype)
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline):
        return _pipeline_to_onnx(model, X_sample, dtype, target_opset)
    expansion, head = onnx_head(model)
    n_features = expansion.n_features
    if X_sample is not None:
        n_x = np.asarray(X_sample).reshape(len(X_sample), -1).shape[1]
        if n_x != n_features:
            raise ValueError(f"X_sample has {n_x} features, but the model is expecting "
                             f"{n_features} features as input.")
    b = _Builder(dtype)
    elem = _onnx_float(b)
    label, _ = _emit(b, "X", model, label_out="label", scores_out="scores")
    outputs = []
    if label is not None:
        labels = _label_constant(head["classes"])
        outputs.append(helper.make_tensor_value_info(
            "label", onnx.TensorProto.STRING if labels.dtype == object else
            onnx.TensorProto.INT64, [None]))
    outputs.append(helper.make_tensor_value_info("scores", elem, _score_shape(expansion, head)))
    graph = helper.make_graph(
        b.nodes, name, [helper.make_tensor_value_info("X", elem, [None, n_features])], outputs,
        initializer=b.initializers)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", target_opset)],
                              producer_name="sparsekm")
    proto.ir_version = min(proto.ir_version, 8)
    onnx.checker.check_model(proto)
    return proto


# -- skl2onnx integration -------------------------------------------------------------------
_REGISTERED = False


def _is_classifier_model(model):
    return onnx_head(model)[1]["kind"] != "scores"


def _skl2onnx_parser(scope, model, inputs, custom_parsers=None):
    from skl2onnx._parse import _get_sklearn_operator_name
    from skl2onnx.common.data_types import Int64TensorType, StringTensorType

    op = scope.declare_local_operator(_get_sklearn_operator_name(type(model)), model)
    op.inputs = inputs
    ftype = inputs[0].type.__class__
    if _is_classifier_model(model):
        labels = _label_constant(onnx_head(model)[1]["classes"])
        ltype = StringTensorType() if labels.dtype == object else Int64TensorType()
        op.outputs.append(scope.declare_local_variable("label", ltype))
    op.outputs.append(scope.declare_local_variable("scores", ftype()))
    return list(op.outputs)


def _skl2onnx_shape(operator):
    expansion, head = onnx_head(operator.raw_operator)
    n = operator.inputs[0].get_first_dimension()
    shape = _score_shape(expansion, head)
    operator.outputs[-1].type = operator.inputs[0].type.__class__([n] + shape[1:])
    if len(operator.outputs) == 2:
        operator.outputs[0].type.shape = [n]


def _skl2onnx_convert(scope, operator, container):
    ftype = operator.inputs[0].type
    dtype = np.float64 if "Double" in type(ftype).__name__ else np.float32
    b = _Builder(dtype, prefix=type(operator.raw_operator).__name__.lower(),
                 container=container, scope=scope)
    outs = operator.outputs
    label_out = outs[0].full_name if len(outs) == 2 else None
    _emit(b, operator.inputs[0].full_name, operator.raw_operator, label_out=label_out,
          scores_out=outs[-1].full_name)


# -- scikit-learn's kernel approximations (skl2onnx 1.20 has no converter for them) -----
def _nystroem_expansion(est):
    """A fitted ``sklearn.kernel_approximation.Nystroem`` as a multi-output expansion.

    ``transform(X) = K(X, components_) @ normalization_.T`` (Williams & Seeger's
    Nyström features): an expansion over the ``components_`` with coefficient
    matrix ``normalization_.T`` and no intercept, so :func:`_scores` emits it.
    Kernel parameters follow :func:`sklearn.metrics.pairwise.pairwise_kernels`:
    ``gamma=None`` is ``1 / n_features``, ``poly`` defaults to degree 3 and
    ``coef0 = 1``, ``sigmoid`` to ``coef0 = 1``.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est, "normalization_")
    kernel = est.kernel
    if callable(kernel) or kernel not in ("rbf", "poly", "polynomial", "sigmoid", "linear"):
        raise TypeError(
            f"Nystroem(kernel={kernel!r}) has no ONNX form in sparsekm (supported kernels: "
            "'rbf', 'poly', 'sigmoid', 'linear').")
    Z = np.asarray(est.components_, dtype=np.float64)
    params = est._get_kernel_params()
    gamma = params.get("gamma")
    gamma = 1.0 / Z.shape[1] if gamma is None else float(gamma)
    if kernel == "rbf":
        k = RBF(gamma)
    elif kernel == "linear":
        k = Linear()
    elif kernel == "sigmoid":
        k = Sigmoid(kappa=gamma, theta=float(params.get("coef0", 1.0)))
    else:
        degree = params.get("degree", 3)
        if float(degree) != int(degree) or int(degree) < 1:
            raise TypeError(f"Nystroem(kernel='poly', degree={degree!r}): only whole degrees "
                            ">= 1 have an ONNX form in sparsekm.")
        k = Polynomial(degree=int(degree), coef0=float(params.get("coef0", 1.0)), gamma=gamma)
    W = np.asarray(est.normalization_, dtype=np.float64).T
    return KernelExpansion(Z, W, k, np.zeros(W.shape[1]))


def _emit_nystroem(b, x, est, out):
    return b.op("Identity", [_scores(b, x, _nystroem_expansion(est))], out=out)


def _emit_rbf_sampler(b, x, est, out):
    """``sqrt(2 / n_components) cos(X W + offset)`` (Rahimi & Recht's random features).

    The argument of the cosine is computed in float64 in a float32 graph too: cos
    has period 2 pi, and at ``|X W| ~ 1e6`` float32's spacing (0.06) moves it by a
    visible fraction of a period, which changed labels (issue 38). Only the float32
    input's own rounding is left; the cosine is cast back to float32.
    """
    from sklearn.utils.validation import check_is_fitted

    _, helper, _ = _import_onnx()
    check_is_fitted(est, "random_weights_")
    W = np.asarray(est.random_weights_, dtype=np.float64)
    wide = b.dtype == np.float32
    x64 = b.op("Cast", [x], to=helper.TensorProto.DOUBLE) if wide else x
    proj = b.op("Add", [b.op("MatMul", [x64, b.const("w", W, np.float64)]),
                        b.const("offset", np.asarray(est.random_offset_)[None, :],
                                np.float64)])
    cos = b.op("Cos", [proj])
    if wide:
        cos = b.op("Cast", [cos], to=helper.TensorProto.FLOAT)
    scale = b.const("scale", np.sqrt(2.0 / est.n_components))
    return b.op("Mul", [cos, scale], out=out)


def _n_peer_outputs(est):
    if hasattr(est, "normalization_"):
        return est.normalization_.shape[0]
    return est.random_weights_.shape[1]


def _peer_shape(operator):
    n = operator.inputs[0].get_first_dimension()
    operator.outputs[0].type = operator.inputs[0].type.__class__(
        [n, _n_peer_outputs(operator.raw_operator)])


def _peer_convert(scope, operator, container):
    ftype = operator.inputs[0].type
    dtype = np.float64 if "Double" in type(ftype).__name__ else np.float32
    est = operator.raw_operator
    b = _Builder(dtype, prefix=type(est).__name__.lower(), container=container, scope=scope)
    emit = _emit_nystroem if hasattr(est, "normalization_") else _emit_rbf_sampler
    emit(b, operator.inputs[0].full_name, est, operator.outputs[0].full_name)


def _skl2onnx_has_converter(cls):
    """True when the installed skl2onnx converts ``cls`` itself (sparsekm then defers)."""
    from skl2onnx._supported_operators import sklearn_operator_name_map

    alias = sklearn_operator_name_map.get(cls)
    return alias is not None and not str(alias).startswith("Sparsekm")


def register_skl2onnx_converters():
    """Register sparsekm's models with skl2onnx (idempotent).

    After this, ``skl2onnx.to_onnx(Pipeline([StandardScaler(), ReducedSetClassifier(...)]),
    X)`` converts the whole pipeline. :func:`to_onnx` calls it for pipelines.

    It also registers converters for scikit-learn's own kernel approximations
    ``sklearn.kernel_approximation.Nystroem`` (kernels ``rbf``, ``poly``,
    ``sigmoid``, ``linear``) and ``RBFSampler``, which skl2onnx (1.20) does not
    convert, so that a peer's ``Pipeline([Nystroem(...), LinearSVC()])`` or
    ``Pipeline([RBFSampler(...), LogisticRegression()])`` exports too. Should a
    later skl2onnx convert them itself, its converter is kept.
    """
    global _REGISTERED
    if _REGISTERED:
        return
    try:
        from skl2onnx import update_registered_converter
    except ImportError:  # pragma: no cover
        raise ImportError(f"Pipeline export needs skl2onnx: {install_hint('onnx')}.") from None
    from sklearn.kernel_approximation import Nystroem, RBFSampler

    from . import models
    from .compression import CompressedClassifier
    from .multiclass import ExpansionClassifier

    # CompressedClassifier: what sparsekm.compress returns, often put back into the
    # pipeline its SVC came from
    classes = [getattr(models, n) for n in models.__all__] + [ExpansionClassifier,
                                                               CompressedClassifier]
    for cls in classes:
        if not isinstance(cls, type):
            continue
        update_registered_converter(cls, f"Sparsekm{cls.__name__}", _skl2onnx_shape,
                                    _skl2onnx_convert, parser=_skl2onnx_parser)
    for cls in (Nystroem, RBFSampler):
        if not _skl2onnx_has_converter(cls):
            update_registered_converter(cls, f"Sparsekm{cls.__name__}", _peer_shape,
                                        _peer_convert)
    _REGISTERED = True


def _pipeline_to_onnx(pipe, X_sample, dtype, target_opset):
    from skl2onnx import to_onnx as skl_to_onnx
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    register_skl2onnx_converters()
    if X_sample is None:
        n_features = getattr(pipe, "n_features_in_", None)
        if not isinstance(n_features, numbers.Integral):
            raise ValueError("Exporting a Pipeline needs X_sample (or a fitted pipeline with "
                             "n_features_in_).")
    else:
        n_features = np.asarray(X_sample).shape[1]
    ttype = DoubleTensorType if dtype == np.float64 else FloatTensorType
    proto = skl_to_onnx(pipe, initial_types=[("X", ttype([None, n_features]))],
                        target_opset=target_opset, options=_peer_classifier_options(pipe))
    return _declare_inferred_output_shapes(proto)


def _declare_inferred_output_shapes(proto):
    """Declare each graph output with the shape ONNX's shape inference gives its node.

    skl2onnx (1.20) declares the scores of a binary ``LinearSVC`` (``raw_scores``) as
    ``(N, 1)`` while its ``LinearClassifier`` node returns ``(N, 2)``; onnxruntime then
    warns and a consumer that trusts the declaration reads a wrong shape. Where the
    inference knows a dimension that the declaration contradicts (or the ranks
    differ), the inferred shape is declared, the batch dimension kept symbolic.
    """
    import onnx
    from onnx import shape_inference

    bare = onnx.ModelProto()
    bare.CopyFrom(proto)
    for o in bare.graph.output:
        o.type.tensor_type.ClearField("shape")
    try:
        inferred = shape_inference.infer_shapes(bare, strict_mode=False)
    except Exception:  # inference is a check here, never a reason to fail an export
        return proto
    shapes = {o.name: o.type.tensor_type for o in inferred.graph.output}
    for o in proto.graph.output:
        t = shapes.get(o.name)
        if t is None or not t.HasField("shape") or not o.type.tensor_type.HasField("shape"):
            continue
        got, declared = t.shape.dim, o.type.tensor_type.shape.dim
        wrong = len(got) != len(declared) or any(
            g.HasField("dim_value") and d.HasField("dim_value") and g.dim_value != d.dim_value
            for g, d in zip(got, declared))
        if not wrong:
            continue
        new = [g.dim_value if g.HasField("dim_value") else None for g in got]
        if len(declared) and len(new):  # keep the declared batch dimension
            new[0] = declared[0].dim_value if declared[0].HasField("dim_value") else \
                (declared[0].dim_param or None)
        shape = o.type.tensor_type.shape
        shape.ClearField("dim")
        for v in new:
            dim = shape.dim.add()
            if isinstance(v, int):
                dim.dim_value = v
            elif v:
                dim.dim_param = v
    return proto


def _peer_classifier_options(pipe):
    """skl2onnx options for the scikit-learn classifiers among a pipeline's steps.

    Inside a ``Pipeline`` skl2onnx (1.20) gives every classifier step the option
    ``zipmap=True``: a list of dictionaries instead of a probability tensor, and an
    error for ``LinearSVC``, whose converter has no such option. Here classifiers
    with ``predict_proba`` output a tensor (``zipmap=False``), like sparsekm's
    ``scores``, and ``LinearSVC`` outputs its decision values (``raw_scores=True``,
    which its float64 conversion needs too).
    """
    from sklearn.base import is_classifier
    from sklearn.svm import LinearSVC

    options = {}
    for _, step in pipe.steps:
        if not is_classifier(step) or _is_sparsekm_model(step):
            continue
        if isinstance(step, LinearSVC):
            options[id(step)] = {"raw_scores": True}
        elif hasattr(step, "predict_proba"):
            options[id(step)] = {"zipmap": False}
    return options or None


def _is_sparsekm_model(obj):
    return type(obj).__module__.split(".")[0] == "sparsekm"
