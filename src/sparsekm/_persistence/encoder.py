"""The encoder: an object tree to JSON nodes plus arrays."""

from __future__ import annotations

import numpy as np

from .format import _DTYPE_KINDS
from .registry import _NAMES, _TEMPLATES, _declaration, _params_problem, _register_sklearn


# -- encoding -----------------------------------------------------------------------
def _is_dask_collection(obj):
    return type(obj).__module__.startswith("dask.") and hasattr(obj, "dask")


class _Encoder:
    def __init__(self):
        from ..expansion import KernelExpansion
        from ..kernels import Kernel

        self.Kernel, self.KernelExpansion = Kernel, KernelExpansion
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, arr, where):
        arr = np.asarray(arr)
        if arr.dtype.kind not in _DTYPE_KINDS or arr.dtype.fields is not None:
            raise TypeError(f"Cannot save {where}: arrays of dtype {arr.dtype} cannot be stored "
                            "(object arrays would need pickle).")
        name = f"a{len(self.arrays)}"
        # Memory order is kept (BLAS results depend on it: round trips are bit-exact).
        fortran = arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous
        self.arrays[name] = arr if fortran else np.ascontiguousarray(arr)
        return {"__type__": "ndarray", "ref": name}

    def encode(self, obj, where="object"):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, (int, np.integer)):
            return int(obj)
        if isinstance(obj, (float, np.floating)):
            return float(obj)
        if isinstance(obj, np.ndarray):
            return self.array(obj, where)
        if isinstance(obj, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"__type__": "tuple",
                    "items": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            if not all(isinstance(k, str) for k in obj):
                raise TypeError(f"Cannot save {where}: dictionary keys must be strings.")
            return {"__type__": "dict",
                    "items": {k: self.encode(v, f"{where}.{k}") for k, v in obj.items()}}
        if isinstance(obj, self.Kernel):
            return {"__type__": "kernel", "spec": obj.to_dict()}
        if isinstance(obj, self.KernelExpansion):
            return {"__type__": "expansion",
                    "vectors": self.array(obj.vectors, f"{where}.vectors"),
                    "coef": self.array(obj.coef, f"{where}.coef"),
                    "kernel": self.encode(obj.kernel, f"{where}.kernel"),
                    "intercept": self.encode(obj.intercept, f"{where}.intercept")}
        name = _NAMES.get(type(obj))
        if name is None and type(obj).__module__.startswith("sklearn."):
            _register_sklearn()
            name = _NAMES.get(type(obj))
        if name is not None:
            return self.estimator(obj, name, where)
        if _is_dask_collection(obj):
            raise TypeError(
                f"Cannot save {where}: it is a dask array, whose values live on a dask "
                f"cluster (sparsekm never computes one on the client behind your back); "
                f"compute it or drop it before saving.")
        raise TypeError(
            f"Cannot save {where} of type {type(obj).__name__}: sparsekm files hold arrays, "
            "numbers, strings, kernels, kernel expansions, registered estimators and "
            "Pipelines of them (scikit-learn: StandardScaler, MinMaxScaler, PCA) only."
        )

    def estimator(self, obj, name, where):
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        cls = type(obj)
        attrs = _declaration(cls)
        try:
            check_is_fitted(obj)
        except NotFittedError:
            raise ValueError(f"Cannot save {where}: this {cls.__name__} is not fitted "
                             "(sparsekm files hold fitted models).") from None
        undeclared = sorted(k for k in vars(obj)
                            if k.endswith("_") and not k.startswith("__") and k not in attrs)
        if undeclared:
            raise TypeError(f"Cannot save {where}: {cls.__name__} has fitted attribute(s) "
                            f"{undeclared} not declared in {cls.__name__}._persist_attrs.")
        state = {}
        for k, s in attrs.items():
            if k in vars(obj):
                if getattr(s, "omit_dask", False) and _is_dask_collection(vars(obj)[k]):
                    continue  # n-sized state on the cluster, not needed to predict
                state[k] = self.encode(s.encode_value(vars(obj)[k]), f"{where}.{k}")
            elif not s.optional:
                raise ValueError(f"Cannot save {where}: {cls.__name__} lacks the fitted "
                                 f"attribute {k!r}.")
        # Estimators whose parameters hold objects sparsekm files cannot store (e.g. a
        # wrapped scikit-learn SVC) return storable parameters from _persist_params().
        return {"__type__": "estimator", "class": name,
                "params": self.params(obj, cls, where), "state": state}

    def params(self, obj, cls, where):
        params = obj._persist_params() if hasattr(obj, "_persist_params") else \
            obj.get_params(deep=False)
        templates = {k: params.pop(k) for k in _TEMPLATES.get(cls, ()) if k in params}
        node = self.encode(params, f"{where}.params")
        # load() checks every parameter (_params_problem): a value fit accepted or ignored
        # (degree=0 under an RBF kernel, fit_intercept=1) would make a file it refuses
        problem = _params_problem(cls, {**params, **templates})
        if problem is not None:
            raise ValueError(f"Cannot save {where}: {problem} load() would refuse the file; "
                             "set the parameter to a valid value (set_params) and save again.")
        for k, v in templates.items():
            name = _NAMES.get(type(v))
            if name is None:
                raise TypeError(f"Cannot save {where}: its {k!r} is a {type(v).__name__}, "
                                "not a registered (sparsekm) estimator.")
            node["items"][k] = {"__type__": "template", "class": name,
                                "params": self.params(v, type(v), f"{where}.{k}")}
        return node

