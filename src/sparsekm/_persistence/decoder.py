"""The decoder: JSON nodes and arrays back to objects, checked against the declarations."""

from __future__ import annotations

import importlib.util
import json

import numpy as np

from .bounds import _ESTIMATOR_COST, _MAX_ESTIMATOR_DEPTH, _NODE_COST, _projection_bytes
from .format import FormatError
from .registry import (
    _CLASSES,
    _NAMES,
    _OUTPUT_CONFIG,
    _OUTPUT_CONFIG_VALUES,
    _STATE_CHECKS,
    _TEMPLATES,
    _declaration,
    _params_problem,
)
from .spec import _Ctx

# The multi-class scheme of a classifier made of one expansion, saved together.
_SCHEME_ATTRS = ("scheme_", "decision_function_shape_", "break_ties_", "vote_")
_SCHEME_VALUES = {"scheme_": ("binary", "ovr", "ovo"), "decision_function_shape_": ("ovr", "ovo"),
                  "vote_": ("svc", "ovo-classifier")}
_JSON_SCALARS = frozenset((type(None), bool, int, float, str))  # what json.loads returns
_EXPANSION_KEYS = frozenset(("__type__", "vectors", "coef", "kernel", "intercept"))
_ESTIMATOR_KEYS = frozenset(("__type__", "class", "params", "state"))


class _Decoder:
    def __init__(self, archive, specs):
        from sklearn.utils.validation import check_is_fitted

        from ..expansion import KernelExpansion
        from ..kernels import kernel_from_dict

        self.archive, self.specs, self.path = archive, specs, archive.path
        self.KernelExpansion, self.kernel_from_dict = KernelExpansion, kernel_from_dict
        self.check_is_fitted = check_is_fitted
        self.cache: dict[str, np.ndarray] = {}
        self.kernels: dict[str, object] = {}
        self.depth = 0  # estimators being decoded, one inside the other
        self.memory = archive.memory

    def fail(self, msg):
        raise FormatError(f"{self.path}: {msg}")

    def array(self, node):
        if set(node) != {"__type__", "ref"}:
            self.fail("malformed array reference.")
        ref = node["ref"]
        if not isinstance(ref, str) or ref not in self.specs:
            self.fail(f"reference to undeclared array {str(ref)[:40]!r}.")
        # Counted at every reference, not once per array: save never writes two
        # references to one array, and whoever holds a reference may copy it.
        self.memory.charge(self.specs[ref][2], f"array {ref!r}")
        if ref not in self.cache:
            self.cache[ref] = self.archive.read_array(ref, *self.specs[ref])
        return self.cache[ref]

    def decode(self, node):
        # JSON scalars are returned as they are, without a call per node, and the common
        # containers are tested first: decoding costs about as much as json.loads itself.
        t = type(node)
        if t in _JSON_SCALARS:
            return node
        decode = self.decode
        if t is list:
            return [v if type(v) in _JSON_SCALARS else decode(v) for v in node]
        if t is not dict:
            self.fail(f"malformed object tree near {str(node)[:80]!r}.")
        kind = node.get("__type__")
        if kind == "dict" or kind == "tuple":
            items = node.get("items")
            if len(node) != 2 or items is None:
                self.fail(f"malformed {kind} node.")
            if kind == "tuple":
                if type(items) is not list:
                    self.fail("malformed tuple node.")
                return tuple([v if type(v) in _JSON_SCALARS else decode(v) for v in items])
            if type(items) is not dict:
                self.fail("malformed dict node.")
            return {k: v if type(v) in _JSON_SCALARS else decode(v) for k, v in items.items()}
        if kind is None:
            self.fail(f"malformed object tree near {str(node)[:80]!r}.")
        if kind == "ndarray":
            return self.array(node)
        if kind == "kernel":
            return self.kernel(node)
        if kind == "expansion":
            return self.expansion(node)
        if kind == "estimator":
            return self.estimator(node)
        self.fail(f"unknown object type {str(kind)[:40]!r}.")

    def kernel(self, node):
        if set(node) != {"__type__", "spec"}:
            self.fail("malformed kernel node.")
        spec = node["spec"]
        try:
            ident = json.dumps(spec, sort_keys=True)
        except (TypeError, ValueError):
            self.fail("malformed kernel node.")
        if ident in self.kernels:  # the same kernel (kernel_ and expansion_.kernel): built once
            return self.kernels[ident]
        self.memory.charge(_NODE_COST, "a kernel")
        need = _projection_bytes(spec, self.fail)
        if need:
            self.archive.projection_used += need
            if self.archive.projection_used > self.archive.projection_budget:
                self.fail(f"kernel declares random projection(s) of {self.archive.projection_used}"
                          f" bytes (estimated peak to rebuild), over the projection budget of "
                          f"{self.archive.projection_budget} bytes for a {self.archive.file_size}"
                          "-byte file.")
        try:
            kernel = self.kernel_from_dict(spec)
        except (ValueError, TypeError, KeyError) as exc:
            self.fail(f"invalid kernel: {exc}")
        self.kernels[ident] = kernel
        return kernel

    def expansion(self, node):
        if set(node) != _EXPANSION_KEYS:
            self.fail("malformed expansion node.")
        vectors, coef = self.decode(node["vectors"]), self.decode(node["coef"])
        kernel, intercept = self.decode(node["kernel"]), self.decode(node["intercept"])
        # KernelExpansion copies its arrays: float32 and float64 as they are, others as float64
        self.memory.charge(_NODE_COST + _copy_bytes(vectors) + _copy_bytes(coef),
                           "a kernel expansion's copies of its arrays")
        for name, a, ndims in (("vectors", vectors, (2,)), ("coef", coef, (1, 2))):
            if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or a.ndim not in ndims:
                self.fail(f"expansion {name} must be a floating {ndims}-D array.")
        if coef.shape[0] != vectors.shape[0] or coef.dtype != vectors.dtype:
            self.fail(f"expansion coef {coef.shape} {coef.dtype} does not match vectors "
                      f"{vectors.shape} {vectors.dtype}.")
        if coef.ndim == 1:
            ok = isinstance(intercept, float)
        else:
            ok = isinstance(intercept, np.ndarray) and intercept.shape == (coef.shape[1],) \
                and intercept.dtype == np.float64
        if not ok:
            self.fail(f"expansion intercept does not match coef of shape {coef.shape}.")
        try:
            return self.KernelExpansion(vectors, coef, kernel, intercept)
        except (ValueError, TypeError) as exc:
            self.fail(f"invalid expansion: {exc}")

    def estimator(self, node):
        if set(node) != _ESTIMATOR_KEYS:
            self.fail("malformed estimator node.")
        name = node["class"]
        cls = _CLASSES.get(name) if isinstance(name, str) else None
        if cls is None:
            self.fail(f"unknown estimator class {str(name)[:80]!r}; only registered classes load.")
        attrs = _declaration(cls)
        raw_params, raw_state = node["params"], node["state"]
        if not (isinstance(raw_params, dict) and raw_params.get("__type__") == "dict"
                and isinstance(raw_params.get("items"), dict)) or not isinstance(raw_state, dict):
            self.fail(f"malformed {cls.__name__} node.")
        allowed = set(cls._get_param_names())
        bad = sorted(set(raw_params["items"]) - allowed)
        if bad:
            self.fail(f"{cls.__name__} has no parameter(s) {bad[:5]}.")
        bad = sorted(set(raw_state) - set(attrs))
        if bad:
            self.fail(f"{cls.__name__} does not declare fitted attribute(s) {bad[:5]}; refusing "
                      "to set them (only declared state is restored).")
        missing = sorted(k for k, s in attrs.items() if not s.optional and k not in raw_state)
        if missing:
            self.fail(f"{cls.__name__} is missing fitted attribute(s) {missing[:5]}; is this "
                      "file really a fitted "
                      f"{cls.__name__}?")
        self.memory.charge(_ESTIMATOR_COST, f"a {cls.__name__}")
        self.depth += 1
        if self.depth > _MAX_ESTIMATOR_DEPTH:
            self.fail(f"estimators nested more than {_MAX_ESTIMATOR_DEPTH} deep (a {cls.__name__} "
                      "inside); scikit-learn's own checks of a nested Pipeline cost about 3 "
                      "times more per level on every call.")
        params = self.params(cls, raw_params["items"])
        binds = {}
        state = {k: attrs[k].check(self.decode(v), _Ctx(f"{self.path}: {cls.__name__}.{k}", binds,
                                                        self.memory))
                 for k, v in raw_state.items()}
        self.depth -= 1
        try:
            obj = cls(**params)
        except Exception as exc:
            self.fail(f"cannot construct {cls.__name__}: {exc}")
        for k, v in state.items():
            object.__setattr__(obj, k, v)
        self.validate(obj, cls)
        return obj

    def template(self, node):
        """An unfitted registered estimator (a meta-estimator's ``estimator`` parameter)."""
        if node is None:
            return None
        if not isinstance(node, dict) or set(node) != {"__type__", "class", "params"} \
                or node["__type__"] != "template":
            self.fail("malformed estimator template.")
        cls = _CLASSES.get(node["class"]) if isinstance(node["class"], str) else None
        raw = node["params"]
        if cls is None:
            self.fail(f"unknown estimator class {str(node['class'])[:80]!r}; only registered "
                      "classes load.")
        if not (isinstance(raw, dict) and raw.get("__type__") == "dict"
                and isinstance(raw.get("items"), dict)):
            self.fail(f"malformed {cls.__name__} template.")
        bad = sorted(set(raw["items"]) - set(cls._get_param_names()))
        if bad:
            self.fail(f"{cls.__name__} has no parameter(s) {bad[:5]}.")
        params = self.params(cls, raw["items"])
        try:
            return cls(**params)
        except Exception as exc:
            self.fail(f"cannot construct {cls.__name__}: {exc}")

    def params(self, cls, items):
        """Decoded and checked constructor parameters (templates decoded as templates)."""
        templates = _TEMPLATES.get(cls, ())
        params = self.decode({"__type__": "dict", "items": {
            k: v for k, v in items.items() if k not in templates}})
        for k in templates:
            if k in items:
                params[k] = self.template(items[k])
        self.check_params(cls, params)
        return params

    def check_params(self, cls, params):
        """Constructor parameters: safe values, then the class's own constraints
        (:func:`_params_problem`)."""
        problem = _params_problem(cls, params)
        if problem is not None:
            self.fail(problem)

    def validate(self, obj, cls):
        """Cross-attribute checks: a loaded estimator must look like a fitted one."""
        where = f"{cls.__name__}"
        is_pipeline = _NAMES.get(cls) == "sklearn.pipeline.Pipeline"
        # A Pipeline is fitted when its steps are, and each step was checked when it was
        # decoded; scikit-learn's check_is_fitted of a Pipeline looks its steps' tags up
        # about 3 times per level of nesting (13 levels: 96-177 s, issue 38).
        if not is_pipeline:
            try:
                self.check_is_fitted(obj)
            except Exception as exc:
                self.fail(f"the loaded {where} is not fitted: {exc}")
        d = vars(obj)
        config = d.get(_OUTPUT_CONFIG)
        if config is not None and not set(config.values()) <= set(_OUTPUT_CONFIG_VALUES):
            self.fail(f"{where}.{_OUTPUT_CONFIG} must map to one of {_OUTPUT_CONFIG_VALUES}.")
        if config is not None and "polars" in config.values() and \
                importlib.util.find_spec("polars") is None:
            self.fail(f"{where} was saved with set_output(transform='polars'), but polars is "
                      "not installed here; install it (pip install polars) to load this file.")
        check = _STATE_CHECKS.get(cls)
        if check is not None:
            try:
                check(obj)
            except (ValueError, TypeError, AttributeError) as exc:
                self.fail(f"the loaded {where} has inconsistent fitted state: {exc}")
        exp = d.get("expansion_")
        if exp is not None:
            if "kernel_" in d and d["kernel_"] != exp.kernel:
                self.fail(f"{where}.kernel_ differs from expansion_.kernel.")
            if "n_features_in_" in d and d["n_features_in_"] != exp.n_features:
                self.fail(f"{where}.n_features_in_ = {d['n_features_in_']} but expansion_ has "
                          f"{exp.n_features} features.")
            if "coef_" in d and not np.array_equal(d["coef_"].astype(exp.coef.dtype), exp.coef):
                self.fail(f"{where}.coef_ differs from expansion_.coef.")
            if "intercept_" in d and not np.array_equal(d["intercept_"], exp.intercept):
                self.fail(f"{where}.intercept_ differs from expansion_.intercept.")
            if "classes_" in d:
                n = len(d["classes_"])
                # one output per class (one-vs-rest), one per pair of classes (one-vs-one)
                want = 1 if n == 2 else (n * (n - 1) // 2 if d.get("scheme_") == "ovo" else n)
                if n < 2 or exp.n_outputs != want:
                    self.fail(f"{where} has {n} classes but expansion_ has {exp.n_outputs} "
                              f"output(s) (expected {want}).")
        if "classes_" in d and np.unique(d["classes_"]).size != len(d["classes_"]):
            self.fail(f"{where}.classes_ has repeated labels.")
        self.validate_scheme(obj, cls, where)
        if is_pipeline:
            self.validate_pipeline(obj)

    def validate_scheme(self, obj, cls, where):
        """The multi-class scheme (``scheme_`` and the attributes saved with it) against
        ``classes_`` and the expansion's outputs.

        Files written before ``scheme_`` existed hold none of the four attributes (and
        binary or one-vs-rest machines); a file holding some but not all was edited:
        without ``scheme_`` a one-vs-one model would load as one-vs-rest.
        """
        group = [k for k in _SCHEME_ATTRS if k in _declaration(cls)]
        if "scheme_" not in group:
            return
        d = vars(obj)
        present = [k for k in group if k in d]
        if present and len(present) != len(group):
            self.fail(f"{where} has {present} but lacks {[k for k in group if k not in d]}: "
                      "these are saved together (files written before scheme_ existed have "
                      "none); without scheme_ a one-vs-one model would load as one-vs-rest.")
        if not present:
            return
        scheme = d["scheme_"]
        for k, allowed in _SCHEME_VALUES.items():
            if k in d and d[k] not in allowed:
                self.fail(f"{where}.{k} is {str(d[k])[:40]!r}; expected one of {allowed}.")
        exp, classes = d.get("expansion_"), d.get("classes_")
        if exp is not None and classes is not None:
            n = len(classes)
            want = {"binary": 1, "ovr": n, "ovo": n * (n - 1) // 2}[scheme]
            if exp.n_outputs != want or (scheme == "binary" and n != 2):
                self.fail(f"{where}.scheme_ {scheme!r} with {n} classes needs {want} "
                          f"output(s); expansion_ has {exp.n_outputs}.")

    def validate_pipeline(self, pipe):
        steps = pipe.steps
        if not isinstance(steps, list) or not steps:
            self.fail("Pipeline.steps must be a non-empty list.")
        n_out = None
        for i, step in enumerate(steps):
            if not (isinstance(step, tuple) and len(step) == 2 and isinstance(step[0], str)):
                self.fail(f"Pipeline step {i} is not a (name, estimator) pair.")
            est = step[1]
            if est is None or est == "passthrough":
                continue
            if isinstance(est, str) or type(est) not in _NAMES:
                self.fail(f"Pipeline step {step[0]!r} is not a registered estimator.")
            n_in = getattr(est, "n_features_in_", None)
            if n_out is not None and n_in is not None and n_in != n_out:
                self.fail(f"Pipeline step {step[0]!r} expects {n_in} features but the previous "
                          f"step produces {n_out}.")
            n_out = _n_features_out(est)


def _copy_bytes(a):
    if not isinstance(a, np.ndarray):
        return 0
    return a.size * (a.itemsize if a.dtype in (np.float32, np.float64) else 8)


def _n_features_out(est):
    if hasattr(est, "components_"):
        return est.components_.shape[0]
    if _NAMES.get(type(est), "").startswith("sklearn.preprocessing."):
        return est.n_features_in_
    return None

