"""Fuzz test of ``sparsekm.load``: mutated files only ever raise FormatError.

Hypothesis mutates a valid file (truncation, flipped bytes, inserted bytes, garbage
metadata) and checks that ``load`` either returns an object or raises
``sparsekm.FormatError`` — never another exception — and that peak memory stays
bounded (no allocation driven by sizes claimed in the file).
"""

import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparsekm import FormatError, KernelExpansion, load, save
from sparsekm.kernels import RBF


@pytest.fixture(scope="module")
def valid_bytes(tmp_path_factory):
    rng = np.random.default_rng(0)
    psi = KernelExpansion(rng.normal(size=(20, 5)), rng.normal(size=(20, 2)), RBF(0.5), [0.1, 0.2])
    path = tmp_path_factory.mktemp("fuzz") / "valid.skm"
    save({"model": psi, "note": "fuzz", "tuple": (1, 2.5)}, path)
    return path.read_bytes()


def _load_bytes(tmp_path, data):
    p = tmp_path / "mutant.skm"
    p.write_bytes(data)
    tracemalloc.start()
    try:
        load(p)
    except FormatError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    # The valid file is a few KB; no mutation may make load allocate much more.
    assert peak < 20 * 2**20


mutation = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("flip"), st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)),
                                         min_size=1, max_size=8)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.binary(min_size=1, max_size=64)),
)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=mutation)
def test_mutated_files_raise_only_format_error(valid_bytes, tmp_path, m):
    data = bytearray(valid_bytes)
    if m[0] == "truncate":
        data = data[: int(m[1] * len(data))]
    elif m[0] == "flip":
        for pos, mask in m[1]:
            i = min(int(pos * len(data)), len(data) - 1)
            data[i] ^= mask
    else:
        i = int(m[1] * len(data))
        data = data[:i] + m[2] + data[i:]
    _load_bytes(tmp_path, bytes(data))


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(meta=st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.sampled_from(["__type__", "ref", "items", "name",
                                                                "params", "class", "spec", "state",
                                                                "vectors", "coef", "kernel",
                                                                "intercept", "ndarray", "tuple"]),
                                               children, max_size=5)),
    max_leaves=20))
def test_arbitrary_object_trees_raise_only_format_error(valid_bytes, tmp_path, meta):
    import io
    import json
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(valid_bytes))
    real = json.loads(src.read("meta.json"))
    real["object"] = meta
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            data = json.dumps(real).encode() if info.filename == "meta.json" else src.read(info)
            zf.writestr(info.filename, data)
    _load_bytes(tmp_path, out.getvalue())


def test_deeply_nested_tree_is_rejected(tmp_path):
    import zipfile

    for depth in (100, 50_000):  # within and beyond the JSON parser's recursion limit
        body = "[" * depth + "]" * depth
        out = tmp_path / f"deep{depth}.skm"
        with zipfile.ZipFile(out, "w") as zf:
            zf.writestr("meta.json", '{"format": "sparsekm", "schema_version": 1, "arrays": {}, '
                                     f'"object": {body}}}')
        if depth == 100:
            assert load(out) is not None  # a plain nested list is valid content
        else:
            with pytest.raises(FormatError):
                load(out)
