"""What load checks before it trusts a file, and how save writes one (first found by issue 26).

Projection sizes from validated integers; constructor parameters checked with the
estimators' own constraints; duplicate JSON keys, a missing object and a non-integer
schema version refused; scaler and PCA state checked; the member count read before the
ZIP directory is parsed; local headers checked against the directory; signed files
without a key warn (``require_key=True`` refuses); orphan temp files cleaned, errors
naming the target, read-only targets refused; overflow named; ``set_output`` and
one-vs-rest / one-vs-one wrappers saved.
"""

import base64
import errno
import io
import json
import os
import stat
import struct
import subprocess
import sys
import time
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from sparsekm import FormatError, KernelExpansion, load, persistence, save
from sparsekm.cli import main as cli_main
from sparsekm.kernels import RBF, ProjectedKernel, RandomProjection
from sparsekm.models import KernelFisherDiscriminant, SparseLargeMarginClassifier

from .test_persistence_hardening import _edit, _members, _write

UnverifiedSignatureWarning = getattr(persistence, "UnverifiedSignatureWarning", UserWarning)

KEY = b"issue 26 key"


def _peak(fn):
    tracemalloc.start()
    try:
        try:
            out = fn()
        except Exception as exc:  # noqa: BLE001 - returned for the assertions
            out = exc
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _find(node, pred, out):
    if isinstance(node, dict):
        if pred(node):
            out.append(node)
        for v in node.values():
            _find(v, pred, out)
    elif isinstance(node, list):
        for v in node:
            _find(v, pred, out)
    return out


# -- 1. projection sizes ------------------------------------------------------------
def _projected_expansion(d=784, s=1000, n=50):
    rng = np.random.default_rng(0)
    k = ProjectedKernel(RBF(1.0 / d), RandomProjection(d, s, random_state=0))
    return KernelExpansion(rng.normal(size=(n, d)), rng.normal(size=n), k, 0.1)


def test_saved_784_to_1000_projection_round_trips(tmp_path):
    psi = _projected_expansion()
    save(psi, tmp_path / "p.skm")
    back = load(tmp_path / "p.skm")
    X = np.random.default_rng(1).normal(size=(5, 784))
    np.testing.assert_array_equal(back(X), psi(X))
    assert back.kernel.projection == psi.kernel.projection


@pytest.mark.parametrize("field, value", [("d", 784.0), ("s", "1000"), ("d", "784"),
                                          ("s", 1000.0), ("d", True)])
def test_projection_sizes_must_be_integers(tmp_path, field, value):
    psi = _projected_expansion(n=5)
    save(psi, tmp_path / "p.skm")

    def mutate(meta, _):
        for proj in _find(meta["object"], lambda n: "signs" in n, []):
            proj[field] = value
    _edit(tmp_path / "p.skm", tmp_path / "q.skm", mutate)
    with pytest.raises(FormatError, match=f"random projection {field} must be an integer"):
        load(tmp_path / "q.skm")


def test_float_sizes_cannot_bypass_the_budget(tmp_path):
    """The review's case: sizes as floats skipped the check; the matrix is now bounded."""
    d, s = 2**12, 2**11  # 8.4 M signs: 1 MiB packed, ~134 MB to rebuild
    spec = ProjectedKernel(RBF(1.0), RandomProjection.from_signs(np.ones((2, 2), np.uint8))
                           ).to_dict()
    spec["params"]["projection"].update(signs=base64.b64encode(bytes(d * s // 8)).decode())
    path = tmp_path / "k.skm"
    for sizes, match in (((float(d), float(s)), "must be an integer"),
                         ((d, s), "over the projection budget")):  # integers: the budget
        spec["params"]["projection"].update(d=sizes[0], s=sizes[1])
        _write(path, {"meta.json": json.dumps({"format": "sparsekm", "schema_version": 1,
                                               "arrays": {}, "object": {"__type__": "kernel",
                                                                        "spec": spec}}).encode()})
        err, peak = _peak(lambda: load(path))
        assert isinstance(err, FormatError) and match in str(err)
        assert peak < 4 * path.stat().st_size + 2**20


def test_save_refuses_a_projection_load_would_refuse(tmp_path):
    psi = _projected_expansion(d=4096, s=2048, n=1)  # 134 MB to rebuild from a ~1.5 MB file
    with pytest.raises(ValueError, match="random projections need about"):
        save(psi, tmp_path / "big.skm")
    assert not os.listdir(tmp_path)


# -- 2. constructor parameters ------------------------------------------------------
@pytest.mark.parametrize("param, value, match", [
    ("C", float("-inf"), "finite"), ("C", -1.0, "'C' parameter"), ("C", float("nan"), "finite"),
    ("C", 2**70, "implausibly large"), ("gamma", -2.0, "'gamma' parameter"),
    ("degree", 0, "'degree' parameter"), ("kernel", 3, "'kernel' parameter")])
def test_constructor_parameters_are_validated(tmp_path, kfd, param, value, match):
    save(kfd, tmp_path / "m.skm")
    _edit(tmp_path / "m.skm", tmp_path / "e.skm",
          lambda m, _: m["object"]["params"]["items"].update({param: value}))
    with pytest.raises(FormatError, match=match):
        load(tmp_path / "e.skm")


def test_pipeline_memory_is_refused(tmp_path, data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), KernelFisherDiscriminant(kernel=RBF(0.5)))
    pipe.fit(X, y == 1)
    save(pipe, tmp_path / "p.skm")
    cache = tmp_path / "cache"
    _edit(tmp_path / "p.skm", tmp_path / "e.skm",
          lambda m, _: m["object"]["params"]["items"].update(memory=str(cache)))
    with pytest.raises(FormatError, match="memory must be None"):
        load(tmp_path / "e.skm")
    assert not cache.exists()
    _edit(tmp_path / "p.skm", tmp_path / "v.skm",
          lambda m, _: m["object"]["params"]["items"].update(verbose=7))
    with pytest.raises(FormatError, match="'verbose' parameter of Pipeline"):
        load(tmp_path / "v.skm")


def test_every_registered_class_declares_constraints_for_its_parameters():
    from sklearn.utils._param_validation import validate_parameter_constraints

    persistence._import_registries()
    for name, cls in persistence._CLASSES.items():
        constraints = cls._parameter_constraints
        assert set(cls._get_param_names()) <= set(constraints), name
        if name.startswith("sparsekm."):  # the defaults satisfy them
            validate_parameter_constraints(constraints, cls().get_params(deep=False), name)


# -- 3, 4, 6. meta.json -------------------------------------------------------------
def test_duplicate_json_keys_are_refused(tmp_path, kfd):
    save(kfd, tmp_path / "m.skm")
    # a second "gamma" inside the kernel spec: json.loads would keep the last one
    _edit(tmp_path / "m.skm", tmp_path / "d.skm", lambda m, _: None,
          raw_meta=lambda t: t.replace('"gamma": 0.5', '"gamma": 0.5, "gamma": 50.0'))
    assert b'"gamma": 50.0' in _members(tmp_path / "d.skm")["meta.json"]
    with pytest.raises(FormatError, match="duplicate JSON key 'gamma'"):
        load(tmp_path / "d.skm")


def test_missing_object_and_bad_schema_versions(tmp_path, kfd):
    save(kfd, tmp_path / "m.skm")
    _edit(tmp_path / "m.skm", tmp_path / "o.skm", lambda m, _: m.pop("object"))
    with pytest.raises(FormatError, match=r"lacks \['object'\]"):
        load(tmp_path / "o.skm")
    for version in (True, 1.0, "1"):
        _edit(tmp_path / "m.skm", tmp_path / "v.skm",
              lambda m, _, v=version: m.update(schema_version=v))
        with pytest.raises(FormatError, match="schema version"):
            load(tmp_path / "v.skm")


def test_meta_parse_cost_is_bounded_before_parsing(tmp_path):
    """A meta.json of empty lists (the worst case: 44 bytes per byte) is refused unparsed."""
    body = "[" + ",".join(["[]"] * 2_000_000) + "]"
    path = tmp_path / "lists.skm"
    _write(path, {"meta.json": ('{"format": "sparsekm", "schema_version": 1, "arrays": {}, '
                                '"object": ' + body + "}").encode()})
    err, peak = _peak(lambda: load(path))
    assert isinstance(err, FormatError) and "would cost about" in str(err)
    assert peak < 4 * path.stat().st_size + 2**20


# -- 5. fitted state of scikit-learn steps -------------------------------------------
@pytest.fixture(scope="module")
def pipeline(data):
    X, y = data
    return make_pipeline(StandardScaler(), PCA(3, random_state=0), MinMaxScaler(),
                         KernelFisherDiscriminant(kernel=RBF(0.5))).fit(X, y == 1)


def _step_state(meta, i):
    return meta["object"]["params"]["items"]["steps"][i]["items"][1]["state"]


def _set_array(meta, members, node, fn):
    name = node["ref"]
    raw = members[f"arrays/{name}.npy"]
    a = np.load(io.BytesIO(raw))
    a = fn(a.copy(order="K"))
    buf = io.BytesIO()
    np.save(buf, a)
    members[f"arrays/{name}.npy"] = buf.getvalue()


@pytest.mark.parametrize("step, edit, match", [
    (0, lambda m, mem: _set_array(m, mem, _step_state(m, 0)["scale_"],
                                  lambda a: np.where(np.arange(a.size) == 1, 0.0, a)),
     "scale_ > 0"),
    (0, lambda m, mem: _set_array(m, mem, _step_state(m, 0)["scale_"],
                                  lambda a: np.where(np.arange(a.size) == 1, np.nan, a)),
     "non-finite"),
    (0, lambda m, mem: _step_state(m, 0).update(mean_=_step_state(m, 0)["scale_"],
                                                scale_=_step_state(m, 0)["mean_"]),
     "scale_"),
    (1, lambda m, mem: _set_array(m, mem, _step_state(m, 1)["explained_variance_"],
                                  lambda a: a * 2), "singular_values_"),
    (1, lambda m, mem: _set_array(m, mem, _step_state(m, 1)["components_"],
                                  lambda a: a * 3), "unit vectors"),
    (2, lambda m, mem: _set_array(m, mem, _step_state(m, 2)["scale_"],
                                  lambda a: a * 2), "scale_ and min_"),
    (2, lambda m, mem: _set_array(m, mem, _step_state(m, 2)["data_range_"],
                                  lambda a: -a), "data_range_"),
])
def test_edited_transformer_state_is_refused(tmp_path, pipeline, step, edit, match):
    save(pipeline, tmp_path / "p.skm")
    _edit(tmp_path / "p.skm", tmp_path / "e.skm", edit)
    with pytest.raises(FormatError, match=match):
        load(tmp_path / "e.skm")


def test_legitimate_transformer_states_load(tmp_path, data):
    X, y = data
    X = X.copy()
    X[:, 2] = 5.0  # a constant feature: scale_ 1 for StandardScaler, range 0 for MinMax
    for pipe in (make_pipeline(StandardScaler(with_mean=False), KernelFisherDiscriminant()),
                 make_pipeline(StandardScaler(with_std=False), KernelFisherDiscriminant()),
                 make_pipeline(StandardScaler(), MinMaxScaler((-1, 2)),
                               PCA(2, whiten=True, svd_solver="full"),
                               KernelFisherDiscriminant())):
        pipe.fit(X, y == 1)
        save(pipe, tmp_path / "ok.skm")
        np.testing.assert_array_equal(load(tmp_path / "ok.skm").decision_function(X),
                                      pipe.decision_function(X))


# -- 7. member count before the directory --------------------------------------------
def _central_directory_of(path, n_entries, claim=None):
    """A directory of ``n_entries`` real entries (no member data): the crafted file of
    ``benchmarks/bench_fuzz_load.py``, one builder for both."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "bench_fuzz_load", Path(__file__).resolve().parents[1] / "benchmarks" / "bench_fuzz_load.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench._central_directory(path, n_entries, claim)


def test_a_million_members_refused_before_the_directory_is_parsed(tmp_path, monkeypatch):
    path = tmp_path / "million.skm"
    _central_directory_of(path, 0, claim=1_000_000)  # 98 bytes
    # refused from the end record alone: zipfile never parses the directory (a count, not a
    # clock: no ``ZipFile`` is opened on the file)
    opened = []
    real = zipfile.ZipFile

    def counting(*args, **kwargs):
        opened.append(args[:1])
        return real(*args, **kwargs)

    monkeypatch.setattr(zipfile, "ZipFile", counting)
    err, peak = _peak(lambda: load(path))
    assert isinstance(err, FormatError) and "declares 1000000 members" in str(err)
    assert peak < 2**20 and opened == []


def test_a_real_oversized_directory_is_refused_in_bounded_memory(tmp_path):
    path = tmp_path / "many.skm"
    _central_directory_of(path, 120_000)  # 7 MB of real entries
    err, peak = _peak(lambda: load(path))
    assert isinstance(err, FormatError) and "120000 members" in str(err)
    assert peak < path.stat().st_size + 2**20  # the directory bytes, no objects per entry
    # an end record that understates the count: counted while walking, nothing kept
    _central_directory_of(path, 120_000, claim=10)
    err, peak = _peak(lambda: load(path))
    assert isinstance(err, FormatError) and "more entries than the 10" in str(err)
    assert peak < path.stat().st_size + 2**20


# -- 9. local headers against the central directory ----------------------------------
def _patch_local(path, member, offset, value, fmt):
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        at = zf.getinfo(member).header_offset
    struct.pack_into(fmt, data, at + offset, value)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("offset, value, fmt, match", [
    (22, 7, "<L", "local header"),           # uncompressed size
    (18, 7, "<L", "local header"),           # compressed size
    (30, ord("x"), "<B", "local header"),    # first byte of the name
    (0, 0, "<L", "no local header"),         # signature
])
def test_local_header_must_match_the_central_directory(tmp_path, kfd, offset, value, fmt,
                                                      match):
    save(kfd, tmp_path / "m.skm")
    load(tmp_path / "m.skm")
    _patch_local(tmp_path / "m.skm", "arrays/a0.npy", offset, value, fmt)
    with pytest.raises(FormatError, match=match):
        load(tmp_path / "m.skm")


def test_prepended_data_is_refused(tmp_path, kfd):
    save(kfd, tmp_path / "m.skm")
    (tmp_path / "p.skm").write_bytes(b"#!/bin/sh\n" + (tmp_path / "m.skm").read_bytes())
    with pytest.raises(FormatError):
        load(tmp_path / "p.skm")


# -- 8. signed files without a key --------------------------------------------------------
def test_signed_file_without_key_warns_and_require_key_refuses(tmp_path, kfd, data):
    X, _ = data
    save(kfd, tmp_path / "s.skm", key=KEY)
    with pytest.warns(UnverifiedSignatureWarning, match="not checked"):
        back = load(tmp_path / "s.skm")
    np.testing.assert_array_equal(back.decision_function(X), kfd.decision_function(X))
    with pytest.raises(FormatError, match="signed; give its key"):
        load(tmp_path / "s.skm", require_key=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(tmp_path / "s.skm", key=KEY, require_key=True)  # verified: no warning
    save(kfd, tmp_path / "u.skm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(tmp_path / "u.skm")  # unsigned, no key: loads silently (as documented)
    with pytest.raises(FormatError, match="not signed"):
        load(tmp_path / "u.skm", require_key=True)


def test_cli_require_key(tmp_path, kfd, data, capsys):
    X, _ = data
    np.save(tmp_path / "x.npy", X)
    save(kfd, tmp_path / "s.skm", key=KEY)
    (tmp_path / "key").write_bytes(KEY + b"\n")
    assert cli_main(["predict", str(tmp_path / "s.skm"), str(tmp_path / "x.npy"),
                     "--require-key"]) == 1
    err = capsys.readouterr().err
    assert "is signed" in err and "--key-file" in err and "corrupt" not in err
    assert cli_main(["predict", str(tmp_path / "s.skm"), str(tmp_path / "x.npy"),
                     "--require-key", "--key-file", str(tmp_path / "key")]) == 0
    capsys.readouterr()
    save(kfd.expansion_, tmp_path / "psi.skm")  # unsigned: reduce --require-key refuses it
    assert cli_main(["reduce", str(tmp_path / "psi.skm"), "-n", "3", "-o",
                     str(tmp_path / "r.skm"), "--require-key", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "not signed" in err and "--require-key" in err and "corrupt" not in err
    assert not (tmp_path / "r.skm").exists()


# -- 10. safe writes --------------------------------------------------------------------
def test_orphan_temp_files_of_a_killed_save_are_removed(tmp_path, kfd):
    target = tmp_path / "model.skm"
    save(kfd, target)
    orphan = tmp_path / ".model.skm.abc123.skm-tmp"
    orphan.write_bytes(b"x" * 1000)  # what kill -9 during a save leaves
    other = tmp_path / ".other.skm.abc123.skm-tmp"  # another target's: kept
    other.write_bytes(b"y")
    unrelated = tmp_path / ".model.skm.abc123.tmp"  # not our pattern: kept
    unrelated.write_bytes(b"z")
    save(kfd, target)
    assert sorted(os.listdir(tmp_path)) == sorted(
        [".other.skm.abc123.skm-tmp", ".model.skm.abc123.tmp", "model.skm"])


def test_a_temp_file_locked_by_a_running_save_is_kept(tmp_path, kfd):
    import fcntl

    busy = tmp_path / ".model.skm.busy42.skm-tmp"
    busy.write_bytes(b"in progress")
    fd = os.open(busy, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        save(kfd, tmp_path / "model.skm")
        assert busy.exists()
    finally:
        os.close(fd)


def test_kill_9_during_save_then_next_save_cleans_up(tmp_path):
    script = ("import numpy as np, sparsekm, sys\n"
              "from sparsekm.kernels import RBF\n"
              "psi = sparsekm.KernelExpansion(np.ones((4000, 2000)), np.ones(4000), RBF(1.0))\n"
              "print('go', flush=True)\n"
              "sparsekm.save(psi, sys.argv[1])\n")
    target = tmp_path / "big.skm"
    proc = subprocess.Popen([sys.executable, "-c", script, str(target)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"go"
    deadline = time.time() + 60
    while time.time() < deadline and not [n for n in os.listdir(tmp_path)
                                          if n.startswith(".big.skm.")]:
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    save(np.arange(3.0), target)
    assert os.listdir(tmp_path) == ["big.skm"]
    np.testing.assert_array_equal(load(target), np.arange(3.0))


def test_read_only_target_is_refused_unless_force(tmp_path, kfd):
    target = tmp_path / "m.skm"
    save(np.arange(2.0), target)
    os.chmod(target, 0o444)
    with pytest.raises(PermissionError, match=r"m.skm.*read-only.*force=True"):
        save(kfd, target)
    np.testing.assert_array_equal(load(target), np.arange(2.0))
    save(kfd, target, force=True)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o444
    assert isinstance(load(target), KernelFisherDiscriminant)


def test_replacing_keeps_the_mode(tmp_path, kfd):
    target = tmp_path / "m.skm"
    save(kfd, target)
    os.chmod(target, 0o600)
    save(kfd, target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_write_errors_name_the_target(tmp_path, kfd, monkeypatch):
    target = tmp_path / "m.skm"
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match=r"cannot save to '.*m\.skm': no space left on device") \
            as info:
        save(kfd, target)
    assert info.value.errno == errno.ENOSPC and "skm-tmp" not in str(info.value)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert os.listdir(tmp_path) == []


# -- 11. overflow named -------------------------------------------------------------------
def test_overflowing_scaler_is_named(data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), SparseLargeMarginClassifier(n_vectors=3, max_iter=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scikit-learn's own overflow warnings
        with pytest.raises(ValueError, match="overflow in a preceding step.*StandardScaler"):
            pipe.fit(X * 1e200, y == 1)


# -- 12. set_output and one-vs-rest / one-vs-one --------------------------------------------
def test_set_output_pandas_is_saved(tmp_path, data):
    pd = pytest.importorskip("pandas")
    X, y = data
    df = pd.DataFrame(X, columns=list("abcd"))
    pipe = make_pipeline(StandardScaler(), KernelFisherDiscriminant(kernel=RBF(0.5)))
    pipe.set_output(transform="pandas").fit(df, y == 1)
    save(pipe, tmp_path / "p.skm")
    back = load(tmp_path / "p.skm")
    assert back.steps[0][1]._sklearn_output_config == {"transform": "pandas"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "X does not have valid feature names"
        np.testing.assert_array_equal(back.predict(df), pipe.predict(df))
    assert isinstance(back[:-1].transform(df), pd.DataFrame)
    _edit(tmp_path / "p.skm", tmp_path / "e.skm", lambda m, _: _step_state(m, 0)[
        "_sklearn_output_config"]["items"].update(transform="pickle"))
    with pytest.raises(FormatError, match="_sklearn_output_config"):
        load(tmp_path / "e.skm")


@pytest.mark.parametrize("wrapper", [OneVsRestClassifier, OneVsOneClassifier])
def test_one_vs_rest_and_one_vs_one_of_registered_estimators(tmp_path, data, wrapper):
    X, y = data
    model = wrapper(KernelFisherDiscriminant(kernel=RBF(0.5))).fit(X, y)
    save(model, tmp_path / "m.skm", key=KEY)
    back = load(tmp_path / "m.skm", key=KEY)
    assert type(back) is wrapper and type(back.estimator) is KernelFisherDiscriminant
    np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    # a member dropped: refused
    save(model, tmp_path / "u.skm")
    _edit(tmp_path / "u.skm", tmp_path / "e.skm", lambda m, _: _drop_member(m))
    with pytest.raises(FormatError, match="fitted estimator"):
        load(tmp_path / "e.skm")
    # the template holds a registered class and its parameters only: no other class,
    # no state, parameters within the class's constraints
    for mutate, match in (
            (lambda t: t.update({"class": "os.system"}), "unknown estimator class 'os.system'"),
            (lambda t: t.update(state={}), "malformed estimator template"),
            (lambda t: t["params"]["items"].update(C=-1.0), "'C' parameter")):
        _edit(tmp_path / "u.skm", tmp_path / "t.skm",
              lambda m, _, f=mutate: f(m["object"]["params"]["items"]["estimator"]))
        with pytest.raises(FormatError, match=match):
            load(tmp_path / "t.skm")


def _drop_member(meta):
    members = meta["object"]["state"]["estimators_"]
    (members["items"] if isinstance(members, dict) else members).pop()


def test_one_vs_rest_of_an_unregistered_estimator_is_refused(tmp_path, data):
    from sklearn.svm import LinearSVC

    X, y = data
    with pytest.raises(TypeError, match="LinearSVC"):
        save(OneVsRestClassifier(LinearSVC()).fit(X, y), tmp_path / "m.skm")
    assert not os.listdir(tmp_path)


def test_pipeline_type_is_kept(tmp_path, pipeline):
    save(pipeline, tmp_path / "p.skm")
    assert type(load(tmp_path / "p.skm")) is Pipeline


def test_zip64_local_headers_are_understood(tmp_path):
    """A member written with ZIP64 local sizes (as save does above 1 GiB) still loads."""
    save({"a": np.arange(5.0), "b": np.ones((3, 2))}, tmp_path / "m.skm")
    with zipfile.ZipFile(tmp_path / "z.skm", "w") as zf:
        for name, raw in _members(tmp_path / "m.skm").items():
            with zf.open(name, "w", force_zip64=True) as fh:
                fh.write(raw)
    assert struct.unpack_from("<L", (tmp_path / "z.skm").read_bytes(), 22)[0] == 0xFFFFFFFF
    np.testing.assert_array_equal(load(tmp_path / "z.skm")["a"], np.arange(5.0))


def test_cli_reduce_refuses_a_read_only_output_unless_force(tmp_path, kfd, capsys):
    save(kfd.expansion_, tmp_path / "psi.skm")
    out = tmp_path / "small.skm"
    save(np.zeros(1), out)
    os.chmod(out, 0o444)
    args = ["reduce", str(tmp_path / "psi.skm"), "-n", "4", "-o", str(out), "--quiet"]
    assert cli_main(args) != 0
    assert "read-only" in capsys.readouterr().err
    np.testing.assert_array_equal(load(out), np.zeros(1))
    assert cli_main(args + ["--force"]) == 0
    assert isinstance(load(out), KernelExpansion)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o444


def test_a_projection_shared_by_kernel_and_expansion_is_counted_once(tmp_path):
    """kernel_ and expansion_.kernel hold the same projection: save and load count it once."""
    rng = np.random.default_rng(0)
    d, s = 784, 2000  # 25 MB estimated peak: twice would exceed the 32 MiB allowance
    X = rng.normal(size=(40, d))
    clf = KernelFisherDiscriminant(
        kernel=ProjectedKernel(RBF(1.0 / d), RandomProjection(d, s, random_state=0)))
    clf.fit(X, np.arange(40) % 2)
    save(clf, tmp_path / "m.skm")
    back = load(tmp_path / "m.skm")
    assert back.kernel_ is back.expansion_.kernel
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
