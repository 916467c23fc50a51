"""A keyed cache of reproduction cells: no cached number that today's code would not produce.

Every entry is stored under a key that hashes

- the *code* that computes the cell (:func:`code_key`: the abstract syntax trees of
  the modules and functions involved, docstrings and comments left out, plus the
  numpy / scipy / scikit-learn versions),
- every *parameter* of the cell (data set, split, ratio, method, C, kernel, ...,
  and a fingerprint of the data arrays themselves),
- the *seed*, and
- the *BLAS* in use (:func:`blas_signature`: library, build prefix, version and the
  compute kernel OpenBLAS picked for this CPU, as threadpoolctl reports them). The
  nonconvex solvers can end in different local minima when the BLAS rounds
  differently, so a value computed under another kernel is not this machine's value;
- numpy's own SIMD dispatch (:func:`sparsekm._provenance.numpy_simd_signature`: the
  dispatch targets numpy enabled, e.g. ``X86_V3`` or ``X86_V4+AVX512_ICL``). numpy's
  reductions round differently with its AVX-512 loops off: with them off (as on an
  AVX2-only CPU) and the same BLAS, 67 of 90 Banana RS/MRS runs changed (issue 38).
  Entries written before this was part of the key carry no ``numpy_simd`` and are
  never served (the dispatch they were computed under is unknown).

A lookup whose key is not in the file is a miss and the cell is recomputed, so an
entry written by older code, with other parameters, another seed or under another
BLAS kernel is never used. When a cell is recomputed, entries for the same cell,
parameters and seed written by other code under the same BLAS (or by a version of
this module that did not record the BLAS) are dropped from the file; entries of other
BLAS kernels stay, as the values for those kernels. ``read=False`` (``sparsekm reproduce
--no-cache``) ignores every entry and recomputes, still writing the fresh cells.

The file is plain JSON with sorted keys (``{"format": 2, "entries": {key: entry}}``),
rewritten atomically after each new cell so an interrupted run keeps what it finished.
Each entry records, besides its key's parts, the commit of the checkout that computed it
(``commit``, :func:`sparsekm._provenance.source_commit`; since session 10 of issue 39).
Older entries carry instead ``code_commits`` (``{"first", "last", "n", "contiguous",
"order", "libraries", "recovered_by"}``), recovered afterwards by
``tools/backfill_cache_provenance.py``: the first and last commit (in ``order``) whose
source gives the entry's code key under the ``libraries`` named, i.e. the commits whose
code is exactly the code that computed the entry. It does not say which checkout ran it
(``null``: no commit searched gives the key). Neither field is part of the key, and the
cache reads and keeps both as they are.
"""

from __future__ import annotations

import ast
import contextlib
import datetime
import hashlib
import inspect
import json
import os
import re
from pathlib import Path

import numpy as np

from .._provenance import numpy_simd_signature, source_commit

__all__ = ["CellCache", "blas_signature", "code_key", "data_fingerprint"]

FORMAT = 2
#: Keys computed by this process: ``read=False`` still reuses them, so that tables sharing
#: cells (Wu Tables 1 and 3) compute each cell once per ``--no-cache`` run.
_FRESH = set()


#: Normalised sources by qualified name, read once per process: ``inspect`` reads the file on
#: disk, which may have been edited since the module was imported; the first reading (made
#: when the module is imported, see :func:`warm`) is the code that actually runs.
_SOURCES = {}


def warm(*objs):
    """Read and remember the sources of ``objs`` now (call right after importing them)."""
    for obj in objs:
        _normalised_source(obj)


def _normalised_source(obj):
    """The AST of ``obj``'s source without docstrings (comments never reach the AST)."""
    name = _name(obj)
    if name not in _SOURCES:
        _SOURCES[name] = _read_normalised(obj)
    return _SOURCES[name]


def _read_normalised(obj):
    src = inspect.getsource(obj)
    tree = ast.parse(_dedent(src))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(getattr(body[0], "value", None), ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


def _dedent(src):
    import textwrap

    return textwrap.dedent(src)


def _name(obj):
    mod = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "?")
    return qual if mod is None or inspect.ismodule(obj) else f"{mod}.{qual}"


def code_key(*objs):
    """Hash of the code of ``objs`` (modules, classes, functions) and the library versions.

    Docstrings, comments and formatting do not change the key; any change of the
    code itself does. Objects are hashed in the order given, each with its name.
    """
    import scipy
    import sklearn

    h = hashlib.sha256()
    for lib in (np, scipy, sklearn):
        h.update(f"{lib.__name__}={lib.__version__};".encode())
    for obj in objs:
        h.update(_name(obj).encode() + b"\0")
        h.update(_normalised_source(obj).encode() + b"\0")
    return h.hexdigest()[:16]


def _code_commits(entries):
    """`` (the code of commit(s) ...)`` for the entries' ``commit`` or, on older entries,
    their recovered ``code_commits`` range (``first..last``); empty when none records one."""
    seen = set()
    for e in entries:
        c = e.get("commit")
        if c:
            seen.add(str(c)[:7] + ("+dirty" if str(c).endswith("+dirty") else ""))
            continue
        r = e.get("code_commits") or {}
        if r.get("first") and r.get("last"):
            seen.add(f"{str(r['first'])[:7]}..{str(r['last'])[:7]}")
    if not seen:
        return ""
    return f" (the code of commit{'s' if len(seen) > 1 else ''} {', '.join(sorted(seen))})"


#: The part of a :meth:`CellCache.provenance` line that gives the cached cells' compute time.
_CACHED_COMPUTE = re.compile(r"cells from the cache \(computed .*?; ([0-9.]+) min of compute then\)")

#: :func:`blas_signature` of this process, computed once (threadpoolctl's scan of the loaded
#: libraries takes milliseconds; the kernel OpenBLAS picked cannot change in a process).
_BLAS = None


def run_commit():
    """The commit this process runs from, asked of git once per process: what a freshly
    computed entry records (provenance only, never part of the key: the key's ``code``
    decides what may be served) and what a results block names."""
    global _COMMIT
    if _COMMIT is _UNSET:
        _COMMIT = source_commit()
    return _COMMIT


_UNSET = object()
_COMMIT = _UNSET


def blas_signature():
    """The BLAS libraries in use, as one string: ``api:prefix:version:kernel`` each, sorted.

    From ``threadpoolctl.threadpool_info()`` (the entries with ``user_api == "blas"``):
    ``internal_api`` (``openblas``, ``mkl``, ...), ``prefix`` (the shared library, e.g.
    ``libscipy_openblas``), ``version`` and ``architecture`` (the compute kernel, e.g.
    ``SkylakeX``, or ``Katmai`` under ``OPENBLAS_CORETYPE=Prescott``). numpy's and
    scipy's BLAS are both loaded first, so the answer does not depend on import order.
    Thread counts are not part of it.
    """
    global _BLAS
    if _BLAS is None:
        import scipy.linalg  # noqa: F401  (loads scipy's BLAS)
        import threadpoolctl

        libs = {":".join(str(info.get(k) or "?")
                         for k in ("internal_api", "prefix", "version", "architecture"))
                for info in threadpoolctl.threadpool_info() if info.get("user_api") == "blas"}
        _BLAS = "+".join(sorted(libs)) or "none"
    return _BLAS


def data_fingerprint(*arrays):
    """Short sha256 of the arrays' dtypes, shapes and bytes."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_jsonable)


def _jsonable(obj):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return repr(obj)


@contextlib.contextmanager
def _file_lock(path):
    """An exclusive advisory lock on ``path`` + ``.lock`` (POSIX ``flock``; none elsewhere)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: writers are not serialised
        yield
        return
    lock = path.with_suffix(path.suffix + ".lock")
    with open(lock, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


class CellCache:
    """Cells keyed by (cell, parameters, seed, code key, BLAS); see the module docstring.

    Parameters
    ----------
    path : path-like or None
        The JSON file (``None``: an in-memory cache).
    read : bool
        ``False`` ignores every stored entry (recompute), still writing fresh ones.
    """

    def __init__(self, path, *, read=True):
        self.path = None if path is None else Path(path)
        self.read = read
        self.entries = self._load()
        self.hits = []      # entries served from the file
        self.computed = []  # entries computed in this process
        self._counted = set()  # keys in hits or computed: a cell counts once per table

    def _count(self, bucket, key, entry):
        if key not in self._counted:
            self._counted.add(key)
            bucket.append(entry)

    @contextlib.contextmanager
    def uncounted(self):
        """Lookups inside are a look, not a use: they leave :meth:`provenance` unchanged.

        Yields a list that holds, on exit, the entries those lookups found.
        """
        n_hits, n_computed, counted = len(self.hits), len(self.computed), set(self._counted)
        seen = []
        try:
            yield seen
        finally:
            seen += self.hits[n_hits:] + self.computed[n_computed:]
            del self.hits[n_hits:], self.computed[n_computed:]
            self._counted = counted

    def _read(self):
        """The file's JSON object (``{}`` when there is none)."""
        if self.path is None or not self.path.exists():
            return {}
        return json.loads(self.path.read_text(encoding="utf-8"))

    def _load(self, data=None):
        data = self._read() if data is None else data
        if data.get("format") != FORMAT:  # an old, unkeyed cache: nothing in it is usable
            return {}
        return dict(data.get("entries", {}))

    @staticmethod
    def key(cell, params, seed, code):
        """The entry key: sha256 of the canonical JSON of all four, :func:`blas_signature`
        and numpy's SIMD dispatch (:func:`~sparsekm._provenance.numpy_simd_signature`)."""
        blob = _canonical({"cell": cell, "params": params, "seed": seed, "code": code,
                           "blas": blas_signature(), "numpy_simd": numpy_simd_signature()})
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    def get(self, cell, params, seed, code):
        """The stored value, or ``None`` (a miss, or ``read=False``)."""
        key = self.key(cell, params, seed, code)
        if not self.read and key not in _FRESH:
            return None
        entry = self.entries.get(key)
        if entry is None and key in _FRESH:
            entry = self._load().get(key)
        if entry is None:
            return None
        self._count(self.computed if key in _FRESH else self.hits, key, entry)
        return entry["value"]

    def put(self, cell, params, seed, code, value, seconds=None):
        """Store a freshly computed value (and drop superseded entries of the same cell)."""
        key = self.key(cell, params, seed, code)
        params_c = _canonical(params)
        blas = blas_signature()
        simd = numpy_simd_signature()
        entry = {"cell": cell, "params": json.loads(params_c), "seed": seed, "code": code,
                 "commit": run_commit(), "blas": blas, "numpy_simd": simd, "computed": datetime.datetime.now(datetime.timezone.utc).strftime(
                     "%Y-%m-%dT%H:%M:%SZ"),
                 "seconds": None if seconds is None else round(float(seconds), 3),
                 "value": json.loads(_canonical(value))}
        self._count(self.computed, key, entry)
        _FRESH.add(key)
        if self.path is None:
            self.entries[key] = entry
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Several processes may share one file: read-modify-write this one entry under a
        # lock. Only the file's entries are kept besides it -- never the ones this process
        # read earlier -- so an entry another process has superseded stays deleted.
        with _file_lock(self.path):
            data = self._read()
            on_disk = self._load(data)
            # the file's other top-level blocks (e.g. a kernel cache's ``provenance``) are
            # kept as they are
            extra = {k: v for k, v in data.items() if k not in ("format", "entries")} \
                if data.get("format") == FORMAT else {}
            merged = {k: e for k, e in on_disk.items()
                      if not (e.get("cell") == cell and e.get("seed") == seed
                              and _canonical(e.get("params")) == params_c and k != key
                              and e.get("blas", blas) == blas
                              and e.get("numpy_simd", simd) == simd)}
            merged[key] = entry
            self.entries = merged
            tmp = self.path.with_suffix(self.path.suffix + f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({**extra, "format": FORMAT, "entries": merged},
                                      indent=1, sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(self.path)

    @staticmethod
    def cached_seconds(provenance):
        """The compute time recorded for the cells a :meth:`provenance` line says came from
        the cache (0.0 when none did); the inverse of the line's "min of compute then"."""
        m = _CACHED_COMPUTE.search(provenance or "")
        return 60.0 * float(m.group(1)) if m else 0.0

    def provenance(self, total=None):
        """One line: how many cells came from the cache, when and with which code key."""
        n_hit, n_new = len(self.hits), len(self.computed)
        total = n_hit + n_new if total is None else total
        parts = []
        if n_hit:
            stamps = sorted(e["computed"] for e in self.hits)
            codes = sorted({e["code"] for e in self.hits})
            secs = sum(e.get("seconds") or 0.0 for e in self.hits)
            first, last = stamps[0].replace("T", " "), stamps[-1].replace("T", " ")
            when = first if first == last else f"{first} to {last}"
            kernels = sorted({lib.rsplit(":", 1)[-1] for e in self.hits
                              for lib in (e.get("blas") or "?:?").split("+")})
            simd = sorted({e.get("numpy_simd") or "?" for e in self.hits})
            by = _code_commits(self.hits)
            parts.append(f"{n_hit} of {total} cells from the cache (computed {when} with code "
                         f"key{'s' if len(codes) > 1 else ''} {', '.join(codes)}{by} under "
                         f"BLAS kernel{'s' if len(kernels) > 1 else ''} {', '.join(kernels)} "
                         f"and numpy SIMD {', '.join(simd)}; {secs / 60:.1f} min of compute "
                         "then)")
        if n_new:
            secs = sum(e.get("seconds") or 0.0 for e in self.computed)
            parts.append(f"{n_new} of {total} cells computed in this run ({secs / 60:.1f} min)")
        missing = total - n_hit - n_new
        if missing > 0:
            parts.append(f"{missing} of {total} cells not run (n/a)")
        return "; ".join(parts)
