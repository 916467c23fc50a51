"""A loaded file is bounded and consistent, a saved one whole (first found by issue 38).

Memory counted at every reference and decoded object; nested Pipelines linear; a signed
file verified and decoded from the same bytes, every byte of its container accounted
for; fitted state consistent across attributes; concurrent saves to one path.
"""

import json
import os
import subprocess
import sys
import threading
import zipfile

import numpy as np
import pytest
from sklearn.datasets import make_classification

from sparsekm import FormatError, load, save
from sparsekm._persistence import atomic
from sparsekm.kernels import RBF
from sparsekm.models import KernelFisherDiscriminant

from .test_persistence_hardening import _edit, _members, _write

KEY = b"issue 38 key"


def _tmp_files(d):
    return [n for n in os.listdir(d) if n.endswith(".skm-tmp")]


# -- item 7: concurrent saves to one path ------------------------------------------------
def test_save_survives_its_fresh_temp_file_taken_for_an_orphan(tmp_path, kfd, monkeypatch):
    """Save A creates its temporary file; before A locks it, save B to the same path runs
    to the end and (before issue 38) removed A's unlocked file as an orphan: A then failed
    with FileNotFoundError. Now A sees its name no longer holds its file and makes another."""
    path = tmp_path / "m.skm"
    real_lock = atomic._lock
    created, go = threading.Event(), threading.Event()
    first = []

    def slow_lock(fd):
        if not first:  # only save A's first temporary file waits
            first.append(fd)
            created.set()
            assert go.wait(60)
        real_lock(fd)

    monkeypatch.setattr(atomic, "_lock", slow_lock)
    errors = []

    def save_a():
        try:
            save(kfd, path)
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            errors.append(exc)

    a = threading.Thread(target=save_a)
    a.start()
    assert created.wait(60)
    other = KernelFisherDiscriminant(kernel=RBF(0.25)).fit(*_xy())
    save(other, path)          # B: removes A's fresh, unlocked temporary file
    go.set()
    a.join(60)
    assert not errors, errors
    assert load(path).kernel.gamma == 0.5   # A finished last
    assert _tmp_files(tmp_path) == []


def _xy():
    X, y = make_classification(40, n_features=4, random_state=1)
    return X, y


def test_many_threads_save_to_one_path(tmp_path, data):
    X, y = data
    models = [KernelFisherDiscriminant(kernel=RBF(g)).fit(X, y == 1) for g in (0.1, 0.2, 0.4, 0.8)]
    path = tmp_path / "shared.skm"
    errors = []

    def worker(m):
        for _ in range(15):
            try:
                save(m, path)
            except BaseException as exc:  # noqa: BLE001
                errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(m,)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert load(path).kernel.gamma in (0.1, 0.2, 0.4, 0.8)
    assert _tmp_files(tmp_path) == []


_PROC = """
import sys
from sklearn.datasets import make_classification
from sparsekm import save
from sparsekm.kernels import RBF
from sparsekm.models import KernelFisherDiscriminant
X, y = make_classification(40, n_features=4, random_state=0)
m = KernelFisherDiscriminant(kernel=RBF(float(sys.argv[2]))).fit(X, y)
for _ in range(20):
    save(m, sys.argv[1])
"""


def test_several_processes_save_to_one_path(tmp_path):
    path = tmp_path / "shared.skm"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-c", _PROC, str(path), str(g)], env=env,
                              stderr=subprocess.PIPE, text=True) for g in (0.1, 0.3, 0.9)]
    outs = [(p.wait(300), p.stderr.read()) for p in procs]
    assert [rc for rc, _ in outs] == [0, 0, 0], [err[-500:] for _, err in outs]
    assert load(path).kernel.gamma in (0.1, 0.3, 0.9)
    assert _tmp_files(tmp_path) == []


# -- item 3: nested Pipelines ------------------------------------------------------------
def _nested_pipeline(levels):
    """``levels`` estimators one inside the other: Pipelines around a StandardScaler."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    p = Pipeline([("scale", StandardScaler())])
    for _ in range(levels - 2):
        p = Pipeline([("inner", p)])
    return p.fit(np.random.default_rng(0).normal(size=(20, 3)))


def test_nested_pipelines_load_in_linear_work(tmp_path, monkeypatch):
    """scikit-learn's tag lookup of a Pipeline visits its steps about 3 times per level:
    ``check_is_fitted`` on every loaded Pipeline made load exponential (13 levels, a 9 KB
    file: 96-177 s). Now a Pipeline's steps are checked once each, as they are decoded."""
    from sklearn.pipeline import Pipeline

    from sparsekm._persistence import decoder

    monkeypatch.setattr(decoder, "_MAX_ESTIMATOR_DEPTH", 40, raising=False)
    calls = []
    real = Pipeline.__sklearn_tags__
    monkeypatch.setattr(Pipeline, "__sklearn_tags__", lambda self: calls.append(1) or real(self))
    for levels in (4, 9):
        path = tmp_path / f"n{levels}.skm"
        save(_nested_pipeline(levels), path)
        calls.clear()
        loaded = load(path)
        assert len(calls) <= levels, (levels, len(calls))  # before: 22,113 at 9 levels
        X = np.ones((2, 3))
        np.testing.assert_array_equal(loaded.transform(X), _nested_pipeline(levels).transform(X))


def test_estimators_nested_too_deep_are_refused(tmp_path):
    path = tmp_path / "deep.skm"
    save(_nested_pipeline(6), path)
    load(path)
    save(_nested_pipeline(7), path)
    with pytest.raises(FormatError, match="nested more than 6 deep"):
        load(path)


# -- item 6: fitted state consistent across attributes -----------------------------------
def _state(meta):
    return meta["object"]["state"]


def _replace_array(members, meta, ref_node, array):
    """Store ``array`` (raw, unchecked bytes) in place of the array ``ref_node`` names."""
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=False)
    ref = ref_node["ref"]
    members[f"arrays/{ref}.npy"] = buf.getvalue()
    meta["arrays"][ref].update(dtype=array.dtype.str, shape=list(array.shape))


@pytest.fixture(scope="module")
def ovo_reduced(data):
    from sklearn.svm import SVC

    from sparsekm.models import ReducedSetClassifier

    X, y = data
    return ReducedSetClassifier(SVC(C=10), n_vectors=4, random_state=0).fit(X, y)


def test_deleting_scheme_is_refused(tmp_path, ovo_reduced, data):
    """A one-vs-one model over 3 classes has 3 pairwise outputs, as many as one-vs-rest:
    without scheme_ it loaded as one-vs-rest and its predictions changed."""
    X, _ = data
    assert ovo_reduced.scheme_ == "ovo" and len(ovo_reduced.classes_) == 3
    src, dst = tmp_path / "ovo.skm", tmp_path / "edited.skm"
    save(ovo_reduced, src)
    np.testing.assert_array_equal(load(src).predict(X), ovo_reduced.predict(X))
    _edit(src, dst, lambda m, _: _state(m).pop("scheme_"))
    with pytest.raises(FormatError, match="scheme_"):
        load(dst)
    _edit(src, dst, lambda m, _: _state(m).update(scheme_="binary"))
    with pytest.raises(FormatError, match="scheme_ 'binary' with 3 classes"):
        load(dst)
    _edit(src, dst, lambda m, _: _state(m).update(vote_="majority"))
    with pytest.raises(FormatError, match="vote_"):
        load(dst)


def test_label_binarizer_type_contradicting_classes_refused(tmp_path, data):
    from sklearn.multiclass import OneVsRestClassifier

    X, y = data
    ovr = OneVsRestClassifier(KernelFisherDiscriminant(kernel=RBF(0.5))).fit(X, y == 1)
    src, dst = tmp_path / "ovr.skm", tmp_path / "edited.skm"
    save(ovr, src)
    load(src)
    _edit(src, dst, lambda m, _: _state(m)["label_binarizer_"]["state"].update(
        y_type_="multiclass"))   # before: loaded and always predicted class 0
    with pytest.raises(FormatError, match="y_type_ 'multiclass' contradicts 2 classes_"):
        load(dst)


@pytest.mark.parametrize("attr,value", [("K_fit_all_", float("nan")),
                                        ("K_fit_all_", float("inf")),
                                        ("K_fit_rows_", float("nan")),
                                        ("eigenvalues_", float("-inf"))])
def test_kernel_pca_non_finite_state_refused(tmp_path, data, attr, value):
    from sparsekm.models import KernelPCA

    X, _ = data
    kpca = KernelPCA(n_components=3, kernel=RBF(0.5)).fit(X)
    src, dst = tmp_path / "kpca.skm", tmp_path / "edited.skm"
    save(kpca, src)

    def edit(meta, members):
        node = _state(meta)[attr]
        if isinstance(node, float):
            _state(meta)[attr] = value
        else:
            a = getattr(kpca, attr).copy()
            a[0] = value
            _replace_array(members, meta, node, a)
    _edit(src, dst, edit)   # before: loaded, transform returned all-NaN
    with pytest.raises(FormatError, match=f"{attr}.*non-finite"):
        load(dst)


def test_text_beyond_unicode_refused(tmp_path, data):
    X, y = data
    labels = np.array(["ab", "cd"])[(y == 1).astype(int)]
    clf = KernelFisherDiscriminant(kernel=RBF(0.5)).fit(X, labels)
    src, dst = tmp_path / "text.skm", tmp_path / "edited.skm"
    save(clf, src)

    def edit(meta, members):
        codes = clf.classes_.view(np.uint32).copy()
        codes[0] = 0x110000
        _replace_array(members, meta, _state(meta)["classes_"], codes.view(clf.classes_.dtype))
    _edit(src, dst, edit)   # before: loaded, then SystemError when the labels were used
    with pytest.raises(FormatError, match="code point 0x110000"):
        load(dst)


# -- item 4: verify what you decode -------------------------------------------------------
def test_signed_file_changed_after_the_check_decodes_what_was_checked(tmp_path, kfd,
                                                                      monkeypatch):
    """A writer rewrites the file in place right after the HMAC check. Before, load read
    the file again to decode it (here that failed on a CRC; the review's writer got 33 of
    3,000 tampered models accepted with the key); now it decodes the bytes it verified."""
    from sparsekm._persistence.zipreader import _Archive

    path, evil = tmp_path / "signed.skm", tmp_path / "evil.skm"
    save(kfd, path, key=KEY)

    def shift(meta, _):
        _state(meta)["intercept_"] += 5.0
        _state(meta)["expansion_"]["intercept"] += 5.0
    _edit(path, evil, shift)   # keeps signature.json: the tag no longer matches
    real_verify = _Archive.verify

    def verify_then_swap(self, key):
        real_verify(self, key)
        with open(path, "r+b") as fh:
            fh.write(evil.read_bytes())
            fh.truncate()
    monkeypatch.setattr(_Archive, "verify", verify_then_swap)
    loaded = load(path, key=KEY)
    assert loaded.intercept_ == kfd.intercept_
    monkeypatch.undo()
    with pytest.raises(FormatError, match="authentication failed"):
        load(path, key=KEY)   # the file on disk is now the tampered one


# -- item 5: a signed file's every byte accounted for -------------------------------------
def _rezip(dst, members, *, prefix=b"", gap_before=None, junk_after_data=b""):
    """Write ``members`` (name -> bytes) stored, with raw bytes where the attack wants them."""
    with open(dst, "wb") as fh:
        fh.write(prefix)
        with zipfile.ZipFile(fh, "w") as zf:
            for name, data in members.items():
                if name == gap_before:
                    fh.write(b"\0" * 4096)
                    zf.start_dir = fh.tell()  # where zipfile writes next
                zf.writestr(name, data)
            fh.write(junk_after_data)
            zf.start_dir = fh.tell()


@pytest.mark.parametrize("attack", ["gap", "after_data", "prepended", "nul_name", "comment",
                                    "appended"])
def test_signed_file_with_unauthenticated_bytes_refused(tmp_path, kfd, attack):
    """Each of these loaded with the key before: the tag covers members' names, sizes and
    contents, and these bytes are in none of them."""
    src, dst = tmp_path / "signed.skm", tmp_path / "attack.skm"
    save(kfd, src, key=KEY)
    members = _members(src)
    if attack == "gap":
        _rezip(dst, members, gap_before="arrays/a1.npy")
        match = "4096 byte.*belong to no member"
    elif attack == "after_data":
        _rezip(dst, members, junk_after_data=b"echo owned\n" * 100)
        match = "between the last member's data and the ZIP central directory"
    elif attack == "prepended":
        _rezip(dst, members, prefix=b"#!/bin/sh\necho owned; exit 0\n")
        match = "before member 'meta.json' belong to no member"
    elif attack == "nul_name":
        members = {("meta.jsonXevil" if n == "meta.json" else n): v for n, v in members.items()}
        _rezip(dst, members)
        dst.write_bytes(dst.read_bytes().replace(b"meta.jsonXevil", b"meta.json\0evil"))
        match = "holds a NUL byte"
    elif attack == "comment":
        _rezip(dst, members)
        with zipfile.ZipFile(dst, "a") as zf:
            zf.comment = b"curl evil | sh"
        match = "after the ZIP end record"
    else:
        dst.write_bytes(src.read_bytes() + b"trailing")
        match = "after the ZIP end record|end-of-directory"
    with pytest.raises(FormatError, match=match):
        load(dst, key=KEY)
    with pytest.raises(FormatError, match=match):
        load(dst)   # the container is checked whatever the key


# -- items 1 and 2: memory counted at every reference and decoded object -------------------
def _craft(path, obj, arrays):
    """A file holding ``obj`` (a JSON tree) and ``arrays``, digests correct, as save lays out."""
    import hashlib
    import io

    meta = {"format": "sparsekm", "schema_version": 1, "object": obj, "arrays": {}}
    members = {"meta.json": None}
    for name, a in arrays.items():
        buf = io.BytesIO()
        np.lib.format.write_array(buf, a, allow_pickle=False)
        members[f"arrays/{name}.npy"] = buf.getvalue()
        meta["arrays"][name] = {"dtype": a.dtype.str, "shape": list(a.shape),
                                "sha256": hashlib.sha256(a.tobytes()).hexdigest()}
    members["meta.json"] = json.dumps(meta).encode()
    _write(path, members)


def _traced_load(path, key=None):
    import tracemalloc

    tracemalloc.start()
    try:
        return load(path, key=key)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        _traced_load.peak = peak


def _expansion_node(vectors="a0", coef="a1"):
    return {"__type__": "expansion", "vectors": {"__type__": "ndarray", "ref": vectors},
            "coef": {"__type__": "ndarray", "ref": coef},
            "kernel": {"__type__": "kernel", "spec": {"name": "RBF", "params": {"gamma": 1.0}}},
            "intercept": 0.0}


def test_repeated_references_to_one_array_are_counted(tmp_path):
    """40 expansions referencing one float16 array: a 2.4 MB file allocated 395 MB (161 x;
    each KernelExpansion copies its arrays as float64). Every reference now counts."""
    from sparsekm._persistence.bounds import LOAD_FACTOR, LOAD_SLACK

    arrays = {"a0": np.ones((20_000, 60), np.float16), "a1": np.ones(20_000, np.float16)}
    path = tmp_path / "refs.skm"
    _craft(path, [_expansion_node()] * 40, arrays)
    size = os.path.getsize(path)
    with pytest.raises(FormatError, match="every reference to an array"):
        _traced_load(path)
    assert _traced_load.peak < LOAD_FACTOR * size + LOAD_SLACK
    _craft(path, [_expansion_node()], arrays)   # one reference: within the budget, loads
    psi = _traced_load(path)[0]
    assert psi.vectors.shape == (20_000, 60)
    assert _traced_load.peak < LOAD_FACTOR * os.path.getsize(path) + LOAD_SLACK


def test_feature_names_are_counted_as_python_strings(tmp_path):
    """A unicode array becomes one Python str per element, ~22 times its stored size: a
    4 MB array of one-character names loaded as 88 MB, 5 references as 424 MB."""
    from sklearn.preprocessing import StandardScaler

    from sparsekm._persistence.bounds import LOAD_FACTOR, LOAD_SLACK

    n = 1_000_000
    names = np.array([chr(0x4E00 + i % 20_000) for i in range(n)])
    scaler = StandardScaler(with_mean=False, with_std=False).fit(np.ones((3, 2)))
    src, path = tmp_path / "scaler.skm", tmp_path / "names.skm"
    save(scaler, src)
    node = json.loads(_members(src)["meta.json"])["object"]
    node["state"].update(n_features_in_=n,
                         feature_names_in_={"__type__": "ndarray", "ref": "a0"})
    _craft(path, [node] * 5, {"a0": names})
    with pytest.raises(FormatError, match="allocate more than"):
        _traced_load(path)
    assert _traced_load.peak < LOAD_FACTOR * os.path.getsize(path) + LOAD_SLACK


def test_real_models_with_many_named_features_load(tmp_path):
    """What save writes stays well inside the budget: a pipeline fitted on a DataFrame
    with 5,000 named columns (its feature names stored twice)."""
    pd = pytest.importorskip("pandas")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(30, 5000)),
                     columns=[f"pixel_{i:05d}_intensity" for i in range(5000)])
    y = (X.iloc[:, 0] > 0).to_numpy()
    pipe = make_pipeline(StandardScaler(), KernelFisherDiscriminant(kernel=RBF(1e-3))).fit(X, y)
    path = tmp_path / "wide.skm"
    save(pipe, path)
    loaded = load(path)
    np.testing.assert_array_equal(loaded.decision_function(X), pipe.decision_function(X))
    assert list(loaded.feature_names_in_) == list(X.columns)


def test_extra_fields_hold_zip64_sizes_only(tmp_path, kfd):
    """ZIP64 records (what zipfile writes for large members) load; any other extra field
    (here an extended timestamp: 9 bytes the tag does not cover) is refused."""
    src, dst = tmp_path / "signed.skm", tmp_path / "extra.skm"
    save(kfd, src, key=KEY)
    members = _members(src)
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in members.items():
            with zf.open(name, "w", force_zip64=True) as fh:
                fh.write(data)
    assert load(dst, key=KEY).intercept_ == kfd.intercept_
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.extra = b"UT\x05\x00\x01" + b"evil"
            zf.writestr(info, data)
    with pytest.raises(FormatError, match="extra field.*ZIP64"):
        load(dst, key=KEY)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_signed_expansions_load_within_the_budget(tmp_path, dtype):
    """What save writes loads with its key: the buffer, each array and the expansion's copy
    count about 3 x the file, under LOAD_FACTOR = 4."""
    from sparsekm import KernelExpansion
    from sparsekm._persistence.bounds import LOAD_FACTOR, LOAD_SLACK

    rng = np.random.default_rng(0)
    psi = KernelExpansion(rng.normal(size=(40_000, 50)).astype(dtype),
                          rng.normal(size=40_000).astype(dtype), RBF(0.1))
    path = tmp_path / "big.skm"
    save({"a": psi, "b": psi}, path, key=KEY)
    loaded = _traced_load(path, key=KEY)
    np.testing.assert_array_equal(loaded["b"].vectors, psi.vectors)
    assert _traced_load.peak < LOAD_FACTOR * os.path.getsize(path) + LOAD_SLACK



def test_a_file_asking_for_polars_output_is_refused_where_polars_is_missing(tmp_path,
                                                                           monkeypatch):
    import importlib.util

    from sparsekm.models import KernelPCA

    X = np.random.default_rng(0).normal(size=(30, 3))
    kpca = KernelPCA(n_components=2).fit(X)
    kpca._sklearn_output_config = {"transform": "polars"}  # as set_output writes it
    save(kpca, tmp_path / "polars.skm")
    kpca._sklearn_output_config = {"transform": "pandas"}
    save(kpca, tmp_path / "pandas.skm")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "polars" else real(name, *a))
    with pytest.raises(ValueError, match="polars is not installed"):
        load(tmp_path / "polars.skm")
    assert load(tmp_path / "pandas.skm")._sklearn_output_config == {"transform": "pandas"}
