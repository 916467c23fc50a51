"""Every bound the reader applies, in one place (see ``docs/persistence.md``)."""

from __future__ import annotations

import math

_MAX_META_BYTES = 64 * 2**20
_MAX_MEMBERS = 100_000
_MAX_NDIM = 32
#: Estimators inside estimators (a Pipeline's steps, a wrapper's members), outermost = 1.
_MAX_ESTIMATOR_DEPTH = 6
_CHUNK = 2**20

#: Derived allocations (array dimensions, outputs of an expansion) may not exceed
#: ``ALLOCATION_FACTOR * file_size + ALLOCATION_SLACK`` bytes. Real arrays hold at most
#: the file's size, so only sizes written in the file (zero-size arrays' dimensions)
#: can reach the budget.
ALLOCATION_FACTOR = 2
ALLOCATION_SLACK = 2**20
#: Random projections are stored packed (one bit per sign) and rebuilt as float64
#: matrices, 64 times larger: their estimated peak (:data:`_PROJECTION_PEAK_PER_SIGN`
#: bytes per sign, all distinct projections of a file together) may use
#: ``ALLOCATION_FACTOR * file_size + PROJECTION_ALLOWANCE`` bytes. 32 MiB holds a
#: 784 x 2,000 projection whatever the file size.
PROJECTION_ALLOWANCE = 32 * 2**20
_PROJECTION_PEAK_PER_SIGN = 16  # measured 13.1 (packed, unpacked, uint8 copy, float64 P)
#: Parsing meta.json costs Python objects. Before parsing, its cost is bounded from its
#: structural characters: ``_META_COST_PER_TOKEN`` bytes per ``[ { , :`` plus
#: ``_META_COST_PER_BYTE`` per byte (measured worst: 66 bytes per ``[]`` token, twice
#: that with the decoded tree), within ``ALLOCATION_FACTOR * file_size + META_ALLOWANCE``.
_META_COST_PER_TOKEN = 160
_META_COST_PER_BYTE = 2
_META_ALLOWANCE = 16 * 2**20

#: Everything :func:`load` allocates that grows with a file's content is counted where
#: it is allocated (:class:`_Memory`), at every reference: all together at most
#: ``LOAD_FACTOR * file_size + LOAD_SLACK`` bytes. Counted: the file itself when read
#: into memory (``key=``), the parse cost of ``meta.json`` (estimated as above), each
#: array at each reference to it, the copies a kernel expansion makes of its arrays,
#: each Python ``str`` a text array becomes (``feature_names_in_``), and each estimator,
#: expansion and kernel built. A file ``save`` wrote counts at most about twice its size
#: (three times with ``key=``).
LOAD_FACTOR = 4
LOAD_SLACK = 16 * 2**20
#: A Python ``str`` decoded from a text array: object header, the pointer to it and
#: alignment (measured: 76-80 bytes for a one-character str, 50 for ASCII) plus at most
#: the 4 bytes per character the array stores.
_STR_OVERHEAD = 88
_ESTIMATOR_COST = 4096   # instance, its __dict__, parameters, validation (measured ~2 KB)
_NODE_COST = 1024        # a kernel or an expansion object


class _Memory:
    """The load's memory account: ``charge`` before (or as) each allocation."""

    def __init__(self, file_size, fail):
        self.file_size, self.fail = file_size, fail
        self.limit = LOAD_FACTOR * file_size + LOAD_SLACK
        self.used = 0

    def charge(self, n_bytes, what):
        self.used += int(n_bytes)
        if self.used > self.limit:
            self.fail(f"loading it would allocate more than {self.limit} bytes ({what} brings "
                      f"the count to {self.used}): over LOAD_FACTOR x file size + LOAD_SLACK "
                      f"for a {self.file_size}-byte file; every reference to an array and every "
                      "decoded object counts.")

    def text(self, arr, what):
        """A text array about to become Python ``str`` objects."""
        self.charge(arr.size * (_STR_OVERHEAD + arr.dtype.itemsize), what)


def _nominal_bytes(shape, itemsize):
    """Bytes of the array with every zero dimension counted as one."""
    n = itemsize
    for s in shape:
        n *= max(s, 1)
    return n



def _int_field(value, name, fail):
    """A size written in a file: a JSON integer (not bool, float or string) in [1, 2**40]."""
    if type(value) is not int or not 1 <= value <= 2**40:
        fail(f"random projection {name} must be an integer in [1, 2**40]; found "
             f"{str(value)[:40]!r} ({type(value).__name__}).")
    return value


def _projection_bytes(node, fail, depth=0):
    """Estimated peak bytes to rebuild the random projection(s) a kernel spec describes.

    Every dict carrying ``signs`` (a :class:`~sparsekm.kernels.RandomProjection`) must
    give its sizes ``d`` and ``s`` as validated integers, and its packed signs must
    have exactly ``ceil(d s / 8)`` bytes: the size check is computed from those
    integers, never from what a later ``int()`` would make of a float or a string.
    """
    total = 0
    if depth > 64:
        fail("kernel description nested too deeply.")
    if isinstance(node, dict):
        if node.get("name") == "ProjectedKernel":
            params = node.get("params")
            projection = params.get("projection") if isinstance(params, dict) else None
            if not isinstance(projection, dict) or "signs" not in projection:
                fail("ProjectedKernel without a stored random projection.")
        if "signs" in node:
            d = _int_field(node.get("d"), "d", fail)
            s = _int_field(node.get("s"), "s", fail)
            signs = node.get("signs")
            n_packed = (d * s + 7) // 8
            if not isinstance(signs, str) or len(signs) != 4 * ((n_packed + 2) // 3):
                fail(f"random projection of {d} x {s} needs {n_packed} packed sign bytes "
                     f"({4 * ((n_packed + 2) // 3)} base64 characters); the file gives "
                     f"{len(signs) if isinstance(signs, str) else type(signs).__name__}.")
            for name in ("eps", "beta"):
                v = node.get(name)
                if v is not None and (type(v) not in (int, float) or not math.isfinite(v)):
                    fail(f"random projection {name} must be a finite number; found "
                         f"{str(v)[:40]!r}.")
            n_points = node.get("n_points")
            if n_points is not None:
                _int_field(n_points, "n_points", fail)
            total += _PROJECTION_PEAK_PER_SIGN * d * s
        for v in node.values():
            total += _projection_bytes(v, fail, depth + 1)
    elif isinstance(node, list):
        for v in node:
            total += _projection_bytes(v, fail, depth + 1)
    return total

