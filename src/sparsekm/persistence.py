"""Safe persistence: ``save(obj, path)`` / ``load(path)`` without pickle.

File format (schema version 1): an uncompressed ZIP archive holding

* ``meta.json`` — ``{"format": "sparsekm", "schema_version": 1, "sparsekm_version",
  "object": <encoded object tree>, "arrays": {name: {"dtype", "shape", "sha256"}}}``;
* ``arrays/<name>.npy`` — one NumPy ``.npy`` file per array, written and read with
  ``allow_pickle=False``.

The object tree is JSON; non-JSON values are tagged dictionaries (``{"__type__":
...}``) for tuples, dicts, arrays, kernels, :class:`KernelExpansion` and sparsekm
estimators. Only classes registered with :func:`register` can be rebuilt, so a
file can never make ``load`` import or execute arbitrary code. Every array is
checked against its declared dtype, shape and SHA-256 digest before use, and its
size is checked against the archive member before reading, so truncated,
corrupted or tampered files raise :class:`FormatError` and never allocate more
memory than the file holds. Floats round-trip bit-exactly (JSON uses ``repr``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile

import numpy as np

__all__ = ["save", "load", "register", "FormatError", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
_FORMAT = "sparsekm"
_META = "meta.json"
_MAX_META_BYTES = 64 * 2**20

_CLASSES: dict[str, type] = {}


class FormatError(ValueError):
    """A file is not a valid sparsekm file (corrupt, truncated, tampered or unsupported)."""


def register(cls):
    """Class decorator: allow :func:`load` to rebuild instances of ``cls``.

    The class must be constructible from ``get_params()``; its fitted state is
    every instance attribute whose name ends with ``_`` (scikit-learn convention)
    unless it defines ``_persist_state()`` / ``_restore_state(state)``.
    """
    _CLASSES[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return cls


# -- encoding -----------------------------------------------------------------------
class _Encoder:
    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, arr):
        arr = np.asarray(arr)
        if arr.dtype.hasobject:
            # 1-D object arrays of strings (scikit-learn's feature_names_in_) go into the
            # JSON tree as a list of strings; anything else would need pickle.
            if arr.ndim == 1 and all(isinstance(v, str) for v in arr):
                return {"__type__": "strarray", "items": [str(v) for v in arr]}
            raise TypeError("Cannot save arrays of dtype object (they would need pickle).")
        name = f"a{len(self.arrays)}"
        self.arrays[name] = np.ascontiguousarray(arr)
        return {"__type__": "ndarray", "ref": name}

    def encode(self, obj, where="object"):
        from .expansion import KernelExpansion
        from .kernels import Kernel

        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, np.integer)):
            return int(obj)
        if isinstance(obj, (float, np.floating)):
            return float(obj)
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, np.ndarray):
            return self.array(obj)
        if isinstance(obj, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"__type__": "tuple", "items": [self.encode(v, where) for v in obj]}
        if isinstance(obj, dict):
            if not all(isinstance(k, str) for k in obj):
                raise TypeError(f"Cannot save {where}: dictionary keys must be strings.")
            return {"__type__": "dict",
                    "items": {k: self.encode(v, f"{where}.{k}") for k, v in obj.items()}}
        if isinstance(obj, Kernel):
            return {"__type__": "kernel", "spec": obj.to_dict()}
        if isinstance(obj, KernelExpansion):
            return {
                "__type__": "expansion",
                "vectors": self.array(obj.vectors),
                "coef": self.array(obj.coef),
                "kernel": self.encode(obj.kernel),
                "intercept": self.encode(obj.intercept),
            }
        name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        if name in _CLASSES:
            if hasattr(obj, "_persist_state"):
                state = obj._persist_state()
            else:
                state = {k: v for k, v in vars(obj).items() if k.endswith("_") and not k.startswith("_")}
            # Estimators whose parameters hold objects sparsekm files cannot store (e.g. a
            # wrapped scikit-learn SVC) return storable parameters from _persist_params().
            params = obj._persist_params() if hasattr(obj, "_persist_params") else \
                obj.get_params(deep=False)
            return {
                "__type__": "estimator",
                "class": name,
                "params": self.encode(params, f"{where}.params"),
                "state": self.encode(state, f"{where}.state"),
            }
        raise TypeError(
            f"Cannot save {where} of type {type(obj).__name__}: sparsekm files hold arrays, "
            "numbers, strings, kernels, kernel expansions and sparsekm estimators only."
        )


def save(obj, path):
    """Save ``obj`` to ``path`` in sparsekm's safe format (see module docstring).

    Parameters
    ----------
    obj : KernelExpansion, sparsekm estimator, Kernel, array, or nested dict/list of these
    path : str or os.PathLike
        Destination; ``.skm`` is the conventional suffix.
    """
    from . import __version__

    enc = _Encoder()
    tree = enc.encode(obj)
    meta = {"format": _FORMAT, "schema_version": SCHEMA_VERSION, "sparsekm_version": __version__,
            "object": tree, "arrays": {}}
    buffers = {}
    for name, arr in enc.arrays.items():
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        buffers[name] = buf.getvalue()
        meta["arrays"][name] = {"dtype": arr.dtype.str, "shape": list(arr.shape),
                                "sha256": hashlib.sha256(arr.tobytes()).hexdigest()}
    path = os.fspath(path)
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(_META, json.dumps(meta, sort_keys=True))
        for name, data in buffers.items():
            zf.writestr(f"arrays/{name}.npy", data)
    os.replace(tmp, path)


# -- decoding -----------------------------------------------------------------------
def _read_array(zf, name, spec, path):
    member = f"arrays/{name}.npy"
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise FormatError(f"{path}: array {name!r} is missing from the archive.") from None
    if info.compress_type != zipfile.ZIP_STORED:
        raise FormatError(f"{path}: array {name!r} is compressed; sparsekm files never are.")
    if info.file_size > os.path.getsize(path):
        raise FormatError(f"{path}: array {name!r} claims to be larger than the whole file.")
    try:
        dtype = np.dtype(spec["dtype"])
        shape = tuple(int(s) for s in spec["shape"])
    except Exception:
        raise FormatError(f"{path}: invalid dtype/shape for array {name!r}: {spec!r}.") from None
    if dtype.hasobject or any(s < 0 for s in shape):
        raise FormatError(f"{path}: array {name!r} declares an invalid dtype or shape.")
    n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if n_bytes > info.file_size:
        raise FormatError(
            f"{path}: array {name!r} claims {n_bytes} bytes but its archive member holds only "
            f"{info.file_size}; the file is truncated or tampered with."
        )
    try:
        with zf.open(info) as fh:
            raw = fh.read(info.file_size)
        f = io.BytesIO(raw)
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            hshape, fortran, hdtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            hshape, fortran, hdtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise FormatError(f"{path}: unsupported .npy version {version} for array {name!r}.")
        if tuple(hshape) != shape or np.dtype(hdtype) != dtype or fortran:
            raise FormatError(f"{path}: array {name!r} does not match its declared dtype/shape.")
        data = raw[f.tell():]
        if len(data) != n_bytes:
            raise FormatError(f"{path}: array {name!r} has {len(data)} bytes, expected {n_bytes}.")
        arr = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    except FormatError:
        raise
    except Exception as exc:
        raise FormatError(f"{path}: could not read array {name!r}: {exc}") from None
    if hashlib.sha256(arr.tobytes()).hexdigest() != spec.get("sha256"):
        raise FormatError(f"{path}: checksum mismatch for array {name!r}; the file is corrupted.")
    return arr


class _Decoder:
    def __init__(self, zf, array_specs, path):
        self.zf, self.specs, self.path = zf, array_specs, path
        self.cache: dict[str, np.ndarray] = {}

    def array(self, node):
        ref = node.get("ref")
        if ref not in self.specs:
            raise FormatError(f"{self.path}: reference to undeclared array {ref!r}.")
        if ref not in self.cache:
            self.cache[ref] = _read_array(self.zf, ref, self.specs[ref], self.path)
        return self.cache[ref]

    def decode(self, node):
        from .expansion import KernelExpansion
        from .kernels import kernel_from_dict

        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict) or "__type__" not in node:
            raise FormatError(f"{self.path}: malformed object tree near {str(node)[:80]!r}.")
        kind = node["__type__"]
        if kind == "ndarray":
            return self.array(node)
        if kind == "tuple":
            return tuple(self.decode(v) for v in node["items"])
        if kind == "strarray":
            items = node.get("items")
            if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
                raise FormatError(f"{self.path}: malformed string array near "
                                  f"{str(node)[:80]!r}.")
            return np.asarray(items, dtype=object)
        if kind == "dict":
            return {str(k): self.decode(v) for k, v in node["items"].items()}
        if kind == "kernel":
            return kernel_from_dict(node["spec"])
        if kind == "expansion":
            return KernelExpansion(self.decode(node["vectors"]), self.decode(node["coef"]),
                                   self.decode(node["kernel"]), self.decode(node["intercept"]))
        if kind == "estimator":
            cls = _CLASSES.get(node.get("class"))
            if cls is None:
                _import_registries()
                cls = _CLASSES.get(node.get("class"))
            if cls is None:
                raise FormatError(f"{self.path}: unknown estimator class {node.get('class')!r}.")
            params = self.decode(node["params"])
            state = self.decode(node["state"])
            obj = cls(**params)
            if hasattr(obj, "_restore_state"):
                obj._restore_state(state)
            else:
                for k, v in state.items():
                    setattr(obj, k, v)
            return obj
        raise FormatError(f"{self.path}: unknown object type {kind!r}.")


def _import_registries():
    import importlib

    for mod in ("sparsekm.models", "sparsekm.approx", "sparsekm.multiclass"):
        try:
            importlib.import_module(mod)
        except ImportError:  # pragma: no cover - optional parts missing
            pass


def load(path):
    """Load an object written by :func:`save`.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    FormatError
        (a ``ValueError``) if the file is not a valid sparsekm file: not a ZIP
        archive, truncated, wrong schema version, checksum mismatch, arrays that
        do not match their declaration, or unknown object types.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such file: {path!r}.")
    try:
        zf = zipfile.ZipFile(path, "r")
    except IsADirectoryError:
        raise FormatError(f"{path} is a directory, not a sparsekm file.") from None
    except Exception as exc:  # BadZipFile, EOFError, NotImplementedError (bad version), ...
        raise FormatError(f"{path} is not a sparsekm file (not a valid archive: {exc}).") from None
    with zf:
        try:
            info = zf.getinfo(_META)
            if info.file_size > min(_MAX_META_BYTES, os.path.getsize(path)):
                raise FormatError(f"{path}: metadata too large ({info.file_size} bytes).")
            meta = json.loads(zf.read(info).decode("utf-8"))
        except FormatError:
            raise
        except KeyError:
            raise FormatError(f"{path} is not a sparsekm file (no {_META}).") from None
        except Exception as exc:
            raise FormatError(f"{path}: unreadable metadata ({exc}).") from None
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            raise FormatError(f"{path} is not a sparsekm file (format tag missing).")
        version = meta.get("schema_version")
        if version != SCHEMA_VERSION:
            raise FormatError(
                f"{path} has schema version {version!r}; this sparsekm reads version "
                f"{SCHEMA_VERSION}."
            )
        specs = meta.get("arrays")
        if not isinstance(specs, dict) or not all(isinstance(v, dict) for v in specs.values()):
            raise FormatError(f"{path}: malformed array table.")
        try:
            return _Decoder(zf, specs, path).decode(meta.get("object"))
        except FormatError:
            raise
        except RecursionError:
            raise FormatError(f"{path}: object tree nested too deeply.") from None
        except Exception as exc:  # any other failure while rebuilding means bad content
            raise FormatError(f"{path}: invalid content ({type(exc).__name__}: {exc}).") from None
