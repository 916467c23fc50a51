"""The hardened safe format (issue 13): each crafted attack gets a clear FormatError.

Bombs and zero-size amplification are refused before any large allocation; only
declared fitted state is restored; ``key=`` authenticates the whole content; writes
are atomic and never follow symlinks; ``load`` opens regular files only.
"""

import base64
import bz2
import hashlib
import io
import json
import lzma
import os
import threading
import tracemalloc
import zipfile

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_moons
from sklearn.decomposition import PCA
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from sklearn.svm import SVC

import sparsekm
import sparsekm._persistence.bounds
from sparsekm import FormatError, KernelExpansion, load, persistence, save
from sparsekm.cli import main as cli_main
from sparsekm.kernels import RBF, Linear
from sparsekm.models import (
    ApproxSVC,
    KernelFisherDiscriminant,
    KernelPCA,
    ReducedSetClassifier,
    SparseLargeMarginClassifier,
)

KEY = b"correct horse battery staple"
#: the warning of a signed file loaded without a key
UNCHECKED_TAG = r"carries an HMAC-SHA256 tag that was not checked because no key was given"


@pytest.fixture(scope="module")
def moons():
    return make_moons(80, noise=0.2, random_state=0)


@pytest.fixture(scope="module")
def kfd(moons):
    X, y = moons
    return KernelFisherDiscriminant(kernel=RBF(1.0)).fit(X, y)


def _members(path):
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def _write(path, members, compress=None):
    """Write members (name -> bytes); ``compress`` maps a name to a ZIP method."""
    compress = compress or {}
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data, compress_type=compress.get(name, zipfile.ZIP_STORED))


def _edit(src, dst, mutate_meta, recompute_digests=True, raw_meta=None):
    """Edit meta.json of ``src`` into ``dst``; optionally recompute the array digests.

    ``raw_meta(text)``, if given, edits the JSON text last (e.g. to repeat a key).
    """
    members = _members(src)
    meta = json.loads(members["meta.json"])
    mutate_meta(meta, members)
    if recompute_digests:
        for name, spec in meta["arrays"].items():
            raw = members[f"arrays/{name}.npy"]
            f = io.BytesIO(raw)
            np.lib.format.read_magic(f)
            np.lib.format.read_array_header_1_0(f)
            spec["sha256"] = hashlib.sha256(raw[f.tell():]).hexdigest()
    text = json.dumps(meta)
    members["meta.json"] = (raw_meta(text) if raw_meta else text).encode()
    _write(dst, members)


def _peak_load(path, **kw):
    """(exception or None, tracemalloc peak in bytes) of load(path)."""
    tracemalloc.start()
    try:
        load(path, **kw)
        err = None
    except Exception as exc:  # noqa: BLE001 - returned to the caller for checking
        err = exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return err, peak


# -- bounded memory ---------------------------------------------------------------
@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA, zipfile.ZIP_DEFLATED])
def test_compressed_meta_bomb_is_refused_before_decompression(tmp_path, method):
    # 16 MB of JSON whitespace compresses to a few KB: a decompression bomb
    size = 16 * 2**20
    path = tmp_path / "bomb.skm"
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        with zf.open("meta.json", "w", force_zip64=True) as fh:
            fh.write(b'{"format": "sparsekm", "schema_version": 1, "arrays": {}, "object": 1')
            chunk = b" " * 2**20
            for _ in range(size // len(chunk)):
                fh.write(chunk)
            fh.write(b"}")
    assert path.stat().st_size < 200_000
    err, peak = _peak_load(path)
    assert isinstance(err, FormatError) and "compressed" in str(err)
    assert peak < 2**20  # nothing was decompressed


def test_meta_read_is_capped_by_bytes_actually_read(tmp_path, monkeypatch):
    path = tmp_path / "big.skm"
    _write(path, {"meta.json": b'{"format": "sparsekm"' + b" " * 5000 + b"}"})
    monkeypatch.setattr(sparsekm._persistence.bounds, "_MAX_META_BYTES", 1000)
    with pytest.raises(FormatError, match="meta.json' is too large"):
        load(path)


def test_lzma_and_bzip2_arrays_refused(tmp_path, kfd):
    p = tmp_path / "m.skm"
    save(kfd, p)
    members = _members(p)
    for method in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        q = tmp_path / f"c{method}.skm"
        _write(q, members, compress={"arrays/a1.npy": method})
        with pytest.raises(FormatError, match="'arrays/a1.npy' is compressed"):
            load(q)
    assert lzma and bz2  # both codecs are available, so the refusal is ours


def _zero_size_file(path, coef_shape, vec_shape, intercept=0.5):
    """A valid-looking 1 KB file whose arrays are empty but declare huge dimensions."""
    members, arrays = {}, {}
    for name, shape in (("a0", vec_shape), ("a1", coef_shape)):
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
        members[f"arrays/{name}.npy"] = buf.getvalue()
        arrays[name] = {"dtype": "<f8", "shape": list(shape),
                        "sha256": hashlib.sha256(b"").hexdigest()}
    meta = {"format": "sparsekm", "schema_version": 1, "arrays": arrays,
            "object": {"__type__": "expansion", "vectors": {"__type__": "ndarray", "ref": "a0"},
                       "coef": {"__type__": "ndarray", "ref": "a1"},
                       "kernel": {"__type__": "kernel", "spec": RBF(1.0).to_dict()},
                       "intercept": intercept}}
    members = {"meta.json": json.dumps(meta).encode(), **members}
    _write(path, members)


@pytest.mark.parametrize("coef_shape, vec_shape", [((0, 2**27), (0, 3)), ((0, 2), (0, 2**40)),
                                                    ((0, 2**62), (0, 2**62))])
def test_zero_size_arrays_with_huge_dimensions(tmp_path, coef_shape, vec_shape):
    path = tmp_path / "zero.skm"
    _zero_size_file(path, coef_shape, vec_shape)
    assert path.stat().st_size < 2000
    err, peak = _peak_load(path)
    assert isinstance(err, FormatError) and "allocation budget" in str(err)
    assert peak < 2**20


def test_zero_size_arrays_with_small_dimensions_still_load(tmp_path):
    path = tmp_path / "zero.skm"
    _zero_size_file(path, (0,), (0, 2))
    psi = load(path)
    assert psi.intercept == 0.5
    np.testing.assert_array_equal(psi(np.ones((2, 2))), np.full(2, 0.5))
    # a multi-output expansion stores its intercept as an array: a scalar is refused
    _zero_size_file(path, (0, 3), (0, 2))
    with pytest.raises(FormatError, match="intercept does not match coef of shape"):
        load(path)


def test_array_shape_must_match_member_bytes(tmp_path, kfd):
    p, q = tmp_path / "m.skm", tmp_path / "q.skm"
    save(kfd, p)
    # more elements than the member holds / fewer elements than it holds
    for shape in ([80, 3], [40, 2]):
        _edit(p, q, lambda m, _: m["arrays"]["a1"].update(shape=shape))
        with pytest.raises(FormatError, match="a1"):
            load(q)


def test_projection_kernel_allocation_is_bounded(tmp_path):
    from sparsekm.approx import ProjectedKernel, RandomProjection

    proj = RandomProjection.from_signs(np.ones((3, 2), dtype=np.uint8))
    spec = ProjectedKernel(RBF(1.0), proj).to_dict()
    spec["params"]["projection"].update(d=2**20, s=2**12)
    path = tmp_path / "k.skm"
    _write(path, {"meta.json": json.dumps({"format": "sparsekm", "schema_version": 1, "arrays": {},
                                           "object": {"__type__": "kernel", "spec": spec}}).encode()})
    # sizes that disagree with the stored signs are refused before anything is built
    with pytest.raises(FormatError, match="random projection of 1048576 x 4096 needs"):
        load(path)
    # consistent sizes and signs, but a matrix far over the budget for this small file
    d, s = 2**12, 2**11
    spec["params"]["projection"].update(
        d=d, s=s, signs=base64.b64encode(bytes(d * s // 8)).decode("ascii"))
    meta = {"format": "sparsekm", "schema_version": 1, "arrays": {},
            "object": {"__type__": "kernel", "spec": spec}}
    _write(path, {"meta.json": json.dumps(meta).encode()})
    with pytest.raises(FormatError, match="over the projection budget"):
        load(path)


# -- only declared state ----------------------------------------------------------
@pytest.mark.parametrize("name", ["predict", "__dict__", "__class__", "decision_function",
                                  "_persist_attrs", "n_vectors_", "fit", "evil_"])
def test_attribute_injection_is_refused(tmp_path, kfd, name):
    p, q = tmp_path / "m.skm", tmp_path / "q.skm"
    save(kfd, p)
    value = {"__type__": "kernel", "spec": Linear().to_dict()}
    _edit(p, q, lambda m, _: m["object"]["state"].update({name: value}))
    with pytest.raises(FormatError, match=f"does not declare fitted attribute.*{name}"):
        load(q)


def test_parameter_injection_is_refused(tmp_path, kfd):
    p, q = tmp_path / "m.skm", tmp_path / "q.skm"
    save(kfd, p)
    _edit(p, q, lambda m, _: m["object"]["params"]["items"].update(predict=1))
    with pytest.raises(FormatError, match="has no parameter.*predict"):
        load(q)


def test_injected_predict_cannot_hijack_cli(tmp_path, kfd, moons, capsys):
    p, q = tmp_path / "m.skm", tmp_path / "q.skm"
    save(kfd, p)
    _edit(p, q, lambda m, _: m["object"]["state"].update(
        predict={"__type__": "kernel", "spec": Linear().to_dict()}))
    np.save(tmp_path / "x.npy", moons[0][:3])
    assert cli_main(["predict", str(q), str(tmp_path / "x.npy")]) == 1
    assert "does not declare fitted attribute" in capsys.readouterr().err


def test_class_swap_is_refused(tmp_path, kfd):
    p, q = tmp_path / "m.skm", tmp_path / "q.skm"
    save(kfd, p)
    _edit(p, q, lambda m, _: m["object"].update({"class": "sparsekm.models.approx_svm.ApproxSVC"}))
    with pytest.raises(FormatError, match="ApproxSVC has no parameter|missing fitted attribute"):
        load(q)

    def swap(m, _):  # keep ApproxSVC's parameter names: the state still does not fit
        m["object"]["class"] = "sparsekm.models.approx_svm.ApproxSVC"
        m["object"]["params"]["items"] = {"C": 1.0}
    _edit(p, q, swap)
    with pytest.raises(FormatError, match=r"missing fitted attribute\(s\) \['basis_', 'support_'\]"):
        load(q)


def test_inconsistent_attributes_are_refused(tmp_path, kfd):
    p, q = tmp_path / "m.skm", tmp_path / "q.skm"
    save(kfd, p)
    cases = {
        "intercept_ differs from expansion_": lambda m, _: m["object"]["state"].update(
            intercept_=123.0),
        "expected float, found str": lambda m, _: m["object"]["state"].update(intercept_="x"),
        "n_features_in_.*n_features": lambda m, _: m["object"]["state"].update(n_features_in_=5),
        "unexpected keys": lambda m, _: m["object"]["state"]["n_kernel_evaluations_"][
            "items"].update(evil=1),
        r"classes_: dimension 0 of shape \(80,\) is 80, expected 2": lambda m, _: m["object"][
            "state"]["classes_"].update(ref="a1"),
        "does not match its declared dtype/shape": lambda m, _: m["arrays"]["a0"].update(
            shape=[1, 2]),
    }
    for pattern, mutate in cases.items():
        _edit(p, q, mutate)
        with pytest.raises(FormatError, match=pattern):
            load(q)


def test_edited_intercept_with_recomputed_digests_needs_a_key_to_detect(tmp_path, kfd, moons):
    """Without a key, an edit that keeps the file consistent is NOT detected (documented)."""
    p, q = tmp_path / "m.skm", tmp_path / "q.skm"
    save(kfd, p, key=KEY)

    def edit(m, _):
        m["object"]["state"]["intercept_"] = 5.0
        m["object"]["state"]["expansion_"]["intercept"] = 5.0
    _edit(p, q, edit)
    with pytest.warns(persistence.UnverifiedSignatureWarning, match=UNCHECKED_TAG):
        tampered = load(q)  # no key: structurally valid, so accepted (and says so)
    assert tampered.intercept_ == 5.0
    assert not np.array_equal(tampered.decision_function(moons[0]), kfd.decision_function(moons[0]))
    with pytest.raises(FormatError, match="authentication failed"):
        load(q, key=KEY)


def test_unfitted_or_undeclared_objects_cannot_be_saved(tmp_path, kfd):
    with pytest.raises(ValueError, match="not fitted"):
        save(KernelFisherDiscriminant(), tmp_path / "u.skm")
    with pytest.raises(TypeError, match="Cannot save object of type SVC"):
        save(SVC(), tmp_path / "u.skm")
    clf = KernelFisherDiscriminant(kernel=RBF(1.0)).fit(*make_moons(30, random_state=1))
    clf.extra_ = 1
    with pytest.raises(TypeError, match=r"\['extra_'\] not declared"):
        save(clf, tmp_path / "u.skm")
    assert not list(tmp_path.iterdir())


def test_declarations_are_checked():
    class Bad(KernelFisherDiscriminant):
        _persist_attrs = {"predict": persistence.spec.kernel()}

    persistence.register(Bad, name="tests.Bad")
    with pytest.raises(TypeError, match="'predict' is not a fitted attribute name"):
        persistence._declaration(Bad)

    class NoDecl(KernelFisherDiscriminant):
        pass

    NoDecl._persist_attrs = None
    persistence.register(NoDecl, name="tests.NoDecl")
    with pytest.raises(TypeError, match="declares no fitted attributes"):
        persistence._declaration(NoDecl)
    for name in ("tests.Bad", "tests.NoDecl"):
        persistence._NAMES.pop(persistence._CLASSES.pop(name))


def test_every_registered_class_has_a_valid_declaration():
    persistence._import_registries()
    for name, cls in persistence._CLASSES.items():
        attrs = persistence._declaration(cls)
        assert all(not k.startswith("__") and k not in dir(cls) for k in attrs), name


# -- authenticity -----------------------------------------------------------------
def test_signed_round_trip_and_refusals(tmp_path, kfd, moons):
    p = tmp_path / "s.skm"
    save(kfd, p, key=KEY)
    X = moons[0]
    np.testing.assert_array_equal(load(p, key=KEY).decision_function(X), kfd.decision_function(X))
    with pytest.warns(persistence.UnverifiedSignatureWarning, match=UNCHECKED_TAG):
        unverified = load(p)  # no key: loaded, with a warning that the tag went unchecked
    np.testing.assert_array_equal(unverified.decision_function(X), kfd.decision_function(X))
    with pytest.raises(FormatError, match="authentication failed"):
        load(p, key=b"wrong key")
    # unsigned file, signature removed, array byte flipped (digests recomputed)
    save(kfd, tmp_path / "u.skm")
    with pytest.raises(FormatError, match="no authentication tag"):
        load(tmp_path / "u.skm", key=KEY)
    members = _members(p)
    _write(tmp_path / "r.skm", {k: v for k, v in members.items() if k != "signature.json"})
    with pytest.raises(FormatError, match="no authentication tag"):
        load(tmp_path / "r.skm", key=KEY)

    def flip(m, members):
        raw = bytearray(members["arrays/a2.npy"])
        raw[-1] ^= 1
        members["arrays/a2.npy"] = bytes(raw)
    _edit(p, tmp_path / "f.skm", flip)
    with pytest.warns(persistence.UnverifiedSignatureWarning, match=UNCHECKED_TAG):
        load(tmp_path / "f.skm")  # consistent after recomputing the digest ...
    with pytest.raises(FormatError, match="authentication failed"):
        load(tmp_path / "f.skm", key=KEY)  # ... but not authentic
    with pytest.raises(ValueError, match="key must not be empty"):
        save(kfd, p, key=b"")


# -- safe writes and reads --------------------------------------------------------
def test_save_never_follows_symlinks(tmp_path, kfd):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    target = tmp_path / "m.skm"
    os.symlink(victim, str(target) + ".tmp")  # the old fixed temp name
    save(kfd, target)
    assert victim.read_text() == "precious"
    assert os.path.islink(str(target) + ".tmp")
    link = tmp_path / "link.skm"  # the destination itself a symlink: replaced, not followed
    os.symlink(victim, link)
    save(kfd, link)
    assert victim.read_text() == "precious" and not os.path.islink(link)
    assert isinstance(load(link), KernelFisherDiscriminant)


def test_save_to_directory_is_an_error_and_leaves_nothing(tmp_path, kfd):
    d = tmp_path / "dir"
    d.mkdir()
    with pytest.raises(IsADirectoryError, match="is a directory"):
        save(kfd, d)
    assert sorted(os.listdir(tmp_path)) == ["dir"] and not os.listdir(d)


def test_failed_save_leaves_previous_file_intact(tmp_path, kfd, monkeypatch):
    p = tmp_path / "m.skm"
    save(kfd, p)
    before = p.read_bytes()
    with pytest.raises(TypeError):
        save({"bad": object()}, p)

    def boom(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(np.lib.format, "write_array", boom)
    with pytest.raises(OSError, match="disk full"):
        save(kfd, p)
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.skm"]


def test_saved_file_permissions_follow_umask(tmp_path, kfd):
    p = tmp_path / "m.skm"
    save(kfd, p)
    mask = os.umask(0)
    os.umask(mask)
    assert p.stat().st_mode & 0o777 == 0o666 & ~mask


def test_load_refuses_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.skm"
    os.mkfifo(fifo)
    result = []
    t = threading.Thread(target=lambda: result.append(_peak_load(fifo)[0]), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "load blocked on a FIFO"
    assert isinstance(result[0], FormatError) and "not a regular file" in str(result[0])


def test_load_refuses_directory(tmp_path):
    with pytest.raises(FormatError, match="is a directory"):
        load(tmp_path)


def test_archive_structure_is_checked(tmp_path, kfd):
    p = tmp_path / "m.skm"
    save(kfd, p)
    members = _members(p)
    q = tmp_path / "q.skm"
    _write(q, {**members, "evil.py": b"print(1)"})
    with pytest.raises(FormatError, match="unexpected archive member 'evil.py'"):
        load(q)
    _write(q, {**members, "arrays/a99.npy": members["arrays/a0.npy"]})
    with pytest.raises(FormatError, match="undeclared array member"):
        load(q)
    with zipfile.ZipFile(q, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("meta.json", members["meta.json"])
    with pytest.raises(FormatError, match="duplicate archive member"):
        load(q)


# -- exact round trips, pipelines -------------------------------------------------
def test_fortran_ordered_arrays_round_trip_bit_exactly(tmp_path, moons):
    X = moons[0]
    kp = KernelPCA(n_components=4, kernel=RBF(1.0)).fit(X)
    save(kp, tmp_path / "k.skm")
    back = load(tmp_path / "k.skm")
    assert back.eigenvectors_.flags.f_contiguous == kp.eigenvectors_.flags.f_contiguous
    np.testing.assert_array_equal(back.transform(X), kp.transform(X))


def test_pipelines_round_trip_bit_exactly(tmp_path):
    X, y = make_classification(120, n_features=6, n_classes=3, n_informative=4,
                               random_state=0)
    pipes = [
        make_pipeline(StandardScaler(), PCA(3, random_state=0),
                      SparseLargeMarginClassifier(n_vectors=4, max_iter=40, tol=1e-3,
                                                  random_state=0)),  # converges
        make_pipeline(MinMaxScaler((-1, 1)), ReducedSetClassifier(n_vectors=4, random_state=0)),
        make_pipeline(StandardScaler(with_mean=False), PCA(whiten=True),
                      KernelPCA(n_components=3)),
    ]
    for i, pipe in enumerate(pipes):
        pipe.fit(X, y)
        path = tmp_path / f"p{i}.skm"
        save(pipe, path, key=KEY)
        back = load(path, key=KEY)
        assert [type(s) for _, s in back.steps] == [type(s) for _, s in pipe.steps]
        if hasattr(pipe[-1], "predict"):
            np.testing.assert_array_equal(back.predict(X), pipe.predict(X))
            np.testing.assert_array_equal(back.decision_function(X), pipe.decision_function(X))
        else:
            np.testing.assert_array_equal(back.transform(X), pipe.transform(X))


def test_pipeline_with_dataframe_feature_names(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = make_moons(60, noise=0.2, random_state=0)
    df = pd.DataFrame(X, columns=["u", "v"])
    pipe = make_pipeline(StandardScaler(), ApproxSVC(kernel=RBF(1.0), random_state=0)).fit(df, y)
    save(pipe, tmp_path / "p.skm")
    back = load(tmp_path / "p.skm")
    assert back[0].feature_names_in_.dtype == object
    np.testing.assert_array_equal(back[0].feature_names_in_, ["u", "v"])
    np.testing.assert_array_equal(back.predict(df), pipe.predict(df))


def test_pipeline_checks(tmp_path):
    X, y = make_moons(60, noise=0.2, random_state=0)
    with pytest.raises(TypeError, match="of type SVC"):
        save(make_pipeline(StandardScaler(), SVC()).fit(X, y), tmp_path / "p.skm")
    pipe = make_pipeline(StandardScaler(), PCA(1),
                         KernelFisherDiscriminant(kernel=RBF(1.0))).fit(X, y)
    save(pipe, tmp_path / "p.skm")

    def widen(m, _):  # PCA now claims 2 components' worth of input to KFD: 1 != 2
        steps = m["object"]["params"]["items"]["steps"]
        steps[1]["items"][1]["state"]["n_components_"] = 2
    _edit(tmp_path / "p.skm", tmp_path / "q.skm", widen)
    with pytest.raises(FormatError, match="n_components"):
        load(tmp_path / "q.skm")


def test_cli_key_file(tmp_path, moons, capsys):
    X, y = moons
    svc = SVC(kernel="rbf", gamma=1.0).fit(X, y)
    psi = KernelExpansion.from_estimator(svc)
    keyfile = tmp_path / "key"
    keyfile.write_bytes(KEY + b"\n")
    save(psi, tmp_path / "full.skm", key=KEY)
    save(psi, tmp_path / "unsigned.skm")
    np.save(tmp_path / "x.npy", X[:4])
    kf = ["--key-file", str(keyfile)]
    assert cli_main(["--quiet", "reduce", str(tmp_path / "full.skm"), "-n", "4", "-o",
                     str(tmp_path / "r.skm"), *kf]) == 0
    load(tmp_path / "r.skm", key=KEY)  # the output is signed with the same key
    assert cli_main(["predict", str(tmp_path / "r.skm"), str(tmp_path / "x.npy"), *kf]) == 0
    capsys.readouterr()
    assert cli_main(["predict", str(tmp_path / "unsigned.skm"), str(tmp_path / "x.npy"), *kf]) == 1
    assert "no authentication tag" in capsys.readouterr().err
    assert cli_main(["reduce", str(tmp_path / "unsigned.skm"), "-n", "4", "-o",
                     str(tmp_path / "r2.skm"), "--trust-pickle", *kf]) == 1
    assert not (tmp_path / "r2.skm").exists()


def test_module_namespace():
    assert sparsekm.persistence.ALLOCATION_FACTOR >= 2
