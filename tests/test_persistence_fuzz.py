"""Fuzz test of ``sparsekm.load``: mutated files only ever raise FormatError.

Hypothesis mutates a valid file (truncation, flipped bytes, inserted bytes, garbage
metadata, edits of a fitted model's declared state, class and shapes) and checks that
``load`` either returns an object or raises ``sparsekm.FormatError`` — never another
exception — that peak memory stays bounded (no allocation driven by sizes claimed in
the file), that no undeclared attribute is ever restored, and that a file signed with
a key is accepted only with its original content. ``benchmarks/bench_fuzz_load.py``
runs the same kinds of mutations at scale (>= 10,000).
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


# -- issue 13: declared state, allocation bound and authentication under fuzzing ---------
KEY = b"fuzz key"


def fitted_slmc(rng, n_features=4, n_classes=3, n_per_class=3):
    """A 3-class SLMC with every declared fitted attribute set (random numbers, no fit:
    fitting costs seconds, and the file format is what is fuzzed here)."""
    from sparsekm.models import SparseLargeMarginClassifier

    clf = SparseLargeMarginClassifier(n_vectors=n_per_class, kernel=RBF(0.5))
    n = n_classes * n_per_class
    clf.n_features_in_ = n_features
    clf.expansion_ = KernelExpansion(rng.normal(size=(n, n_features)),
                                     rng.normal(size=(n, n_classes)), RBF(0.5),
                                     rng.normal(size=n_classes))
    clf.classes_ = np.arange(n_classes)
    clf.objective_ = rng.normal(size=n_classes)
    clf.duality_gap_ = np.abs(rng.normal(size=n_classes))
    clf.W_history_ = [rng.normal(size=4) for _ in range(n_classes)]
    clf.n_iter_ = np.full(n_classes, 4)
    return clf


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory):
    """A fitted multi-class SLMC, unsigned and signed."""
    clf = fitted_slmc(np.random.default_rng(1))
    d = tmp_path_factory.mktemp("fuzzmodel")
    save(clf, d / "plain.skm")
    save(clf, d / "signed.skm", key=KEY)
    return clf, (d / "plain.skm").read_bytes(), (d / "signed.skm").read_bytes()


def _content(obj):
    """Everything a file stores about ``obj``: the JSON tree and the arrays' bytes."""
    from sparsekm.persistence import _Encoder

    enc = _Encoder()
    tree = enc.encode(obj)
    return tree, {k: (a.dtype.str, a.shape, a.tobytes()) for k, a in enc.arrays.items()}


_NAMES = ["predict", "__dict__", "__class__", "fit", "transform", "decision_function",
          "classes_", "expansion_", "n_iter_", "W_history_", "objective_", "evil_",
          "_persist_attrs", "__init__", "n_features_in_"]
_CLASSES = ["sparsekm.models.slmc.RSVM", "sparsekm.models.slmc.SparseKFD",
            "sparsekm.models.kfd.KernelFisherDiscriminant", "sparsekm.models.approx_svm.ApproxSVC",
            "sparsekm.models.reduced_set.ReducedSetClassifier", "sklearn.pipeline.Pipeline",
            "sklearn.decomposition.PCA", "os.system", "builtins.eval"]
_VALUES = st.one_of(
    st.integers(-2**70, 2**70), st.floats(), st.text(max_size=5), st.none(),
    st.sampled_from([{"__type__": "kernel", "spec": {"name": "Linear", "params": {}}},
                     {"__type__": "ndarray", "ref": "a0"}, {"__type__": "ndarray", "ref": "a3"},
                     {"__type__": "dict", "items": {"__call__": 1}},
                     {"__type__": "estimator", "class": "sklearn.decomposition.PCA",
                      "params": {"__type__": "dict", "items": {}}, "state": {}}]))

meta_edit = st.one_of(
    st.tuples(st.just("inject"), st.sampled_from(_NAMES), _VALUES),
    st.tuples(st.just("param"), st.sampled_from(_NAMES + ["C", "kernel", "n_vectors"]), _VALUES),
    st.tuples(st.just("class"), st.sampled_from(_CLASSES)),
    st.tuples(st.just("shape"), st.integers(0, 6),
              st.lists(st.sampled_from([0, 1, 2, 3, 7, 2**27, 2**40, 2**62]), max_size=4)),
    st.tuples(st.just("drop"), st.sampled_from(_NAMES)),
    st.tuples(st.just("compress"), st.sampled_from([8, 12, 14])),
)


def _apply(data, edit):
    import io
    import json
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(data))
    meta = json.loads(src.read("meta.json"))
    obj = meta["object"]
    compress = {}
    if edit[0] == "inject":
        obj["state"][edit[1]] = edit[2]
    elif edit[0] == "param":
        obj["params"]["items"][edit[1]] = edit[2]
    elif edit[0] == "class":
        obj["class"] = edit[1]
    elif edit[0] == "shape":
        names = sorted(meta["arrays"])
        meta["arrays"][names[edit[1] % len(names)]]["shape"] = edit[2]
    elif edit[0] == "drop":
        obj["state"].pop(edit[1], None)
    else:
        compress = {"meta.json": edit[1]}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            raw = json.dumps(meta).encode() if info.filename == "meta.json" else src.read(info)
            zf.writestr(info.filename, raw, compress_type=compress.get(info.filename, 0))
    return out.getvalue()


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edit=meta_edit)
def test_meta_edits_never_restore_undeclared_state(model_bytes, tmp_path, edit):
    clf, plain, _ = model_bytes
    p = tmp_path / "edit.skm"
    p.write_bytes(_apply(plain, edit))
    tracemalloc.start()
    try:
        obj = load(p)
    except FormatError:
        obj = None
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 8 * p.stat().st_size + 2**20
    if obj is not None:
        # whatever loaded is a declared, fitted object: no method was replaced
        assert type(obj).predict is not None and "predict" not in vars(obj)
        assert not any(k.startswith("__") for k in vars(obj))
        assert set(vars(obj)) - set(obj.get_params(deep=False)) <= set(
            sparsekm_declaration(type(obj)))


def sparsekm_declaration(cls):
    from sparsekm.persistence import _declaration

    return _declaration(cls)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=mutation | st.tuples(st.just("meta"), meta_edit))
def test_signed_files_accept_no_modification(model_bytes, tmp_path, m):
    clf, _, signed = model_bytes
    data = bytearray(signed)
    if m[0] == "truncate":
        data = data[: int(m[1] * len(data))]
    elif m[0] == "flip":
        for pos, mask in m[1]:
            i = min(int(pos * len(data)), len(data) - 1)
            data[i] ^= mask
    elif m[0] == "insert":
        i = int(m[1] * len(data))
        data = data[:i] + m[2] + data[i:]
    else:
        data = bytearray(_apply(bytes(data), m[1]))
    p = tmp_path / "signed.skm"
    p.write_bytes(bytes(data))
    try:
        obj = load(p, key=KEY)
    except FormatError:
        return
    # accepted only if the stored content is exactly the original (e.g. a ZIP timestamp flip)
    assert _content(obj) == _content(clf)
