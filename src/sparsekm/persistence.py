"""Safe persistence: ``save(obj, path)`` / ``load(path)`` without pickle.

File format (schema version 1): an uncompressed (``ZIP_STORED``) ZIP archive holding

* ``meta.json`` — ``{"format": "sparsekm", "schema_version": 1, "sparsekm_version",
  "object": <encoded object tree>, "arrays": {name: {"dtype", "shape", "sha256"}}}``;
* ``arrays/<name>.npy`` — one NumPy ``.npy`` file per array (``allow_pickle=False``);
* ``signature.json`` — only when saved with ``key=``: an HMAC-SHA256 tag over the
  name, size and SHA-256 of the contents of every other member.

The object tree is JSON; non-JSON values are tagged dictionaries (``{"__type__": ...}``)
for tuples, dicts, arrays, kernels, :class:`~sparsekm.KernelExpansion` and registered
estimators. What :func:`load` guarantees (see ``docs/persistence.md``):

* **No code runs.** Only classes registered with :func:`register` are rebuilt, only
  from their constructor parameters (``get_params`` names, each validated with the
  class's ``_parameter_constraints``; ``memory`` must be None) and the fitted
  attributes each class *declares* in ``_persist_attrs`` (an allow-list with expected
  types, dtypes and shapes). Undeclared keys, dunder names and method names are
  refused. The rebuilt estimator is validated like a fitted one (scikit-learn steps:
  their statistics recomputed) before it is returned.
* **Bounded memory.** The ZIP directory's entries are counted before :mod:`zipfile`
  parses it; local headers must agree with it; every member must be stored
  uncompressed; ``meta.json`` is read with a cap on the bytes actually read and the
  cost of parsing it is bounded beforehand; JSON keys may not repeat; every declared
  array shape must agree with the bytes its member holds, and even a zero-size array
  may not declare dimensions whose product (zeros counted as one) exceeds the
  allocation budget (:data:`ALLOCATION_FACTOR` times the file size plus
  :data:`ALLOCATION_SLACK`); random projections are bounded by integer sizes within
  :data:`PROJECTION_ALLOWANCE`. Everything that grows with the file's content is
  counted where it is allocated, at every reference to an array and for every decoded
  object (Python strings of text arrays included), within :data:`LOAD_FACTOR` times
  the file size plus :data:`LOAD_SLACK`; estimators nest at most 6 deep.
* **Authenticity on request.** ``save(obj, path, key=...)`` / ``load(path, key=...)``
  sign and verify every member's name, size and contents with HMAC-SHA256; with a key
  the file is read once into memory and what is verified is what is decoded. Every
  byte of the ZIP container belongs to a header or a member (no gaps, prepended or
  appended data, comments, NUL in names). Without a key the SHA-256 digests in
  ``meta.json`` detect accidental corruption only: anyone can edit the file and
  recompute them; a signed file loaded without a key warns
  (:class:`UnverifiedSignatureWarning`) and ``require_key=True`` refuses it.
* **Consistent state.** Attributes that must agree are checked against each other
  (shapes, ``classes_``, ``scheme_``, scikit-learn steps' statistics, finiteness
  where declared).

Every violation raises :class:`FormatError` (a ``ValueError``) naming the problem.
"""

from ._persistence.atomic import save
from ._persistence.bounds import (
    ALLOCATION_FACTOR,
    ALLOCATION_SLACK,
    LOAD_FACTOR,
    LOAD_SLACK,
    PROJECTION_ALLOWANCE,
)
from ._persistence.encoder import _Encoder  # noqa: F401 - used by benchmarks and tests
from ._persistence.format import SCHEMA_VERSION, FormatError, UnverifiedSignatureWarning
from ._persistence.loader import load
from ._persistence.registry import (  # noqa: F401 - used by benchmarks and tests
    _CLASSES,
    _NAMES,
    _declaration,
    _import_registries,
    register,
)
from ._persistence.spec import spec

__all__ = ["save", "load", "register", "FormatError", "UnverifiedSignatureWarning",
           "SCHEMA_VERSION", "spec", "ALLOCATION_FACTOR", "ALLOCATION_SLACK",
           "PROJECTION_ALLOWANCE", "LOAD_FACTOR", "LOAD_SLACK"]

# The public face: these objects are documented (and named in tracebacks) here.
for _obj in (save, load, register, spec, FormatError, UnverifiedSignatureWarning):
    _obj.__module__ = __name__
del _obj
