import json
import zipfile

import numpy as np
import pytest

import sparsekm
from sparsekm import FormatError, KernelExpansion, load, save
from sparsekm.kernels import RBF, InverseMultiquadric, Polynomial


@pytest.fixture
def psi(rng):
    return KernelExpansion(rng.normal(size=(25, 4)), rng.normal(size=(25, 3)), RBF(1 / 3),
                           intercept=rng.normal(size=3))


def assert_same_expansion(a, b):
    assert a.kernel == b.kernel
    np.testing.assert_array_equal(a.vectors, b.vectors)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.intercept, b.intercept)
    assert a.vectors.dtype == b.vectors.dtype
    assert a.coef.shape == b.coef.shape


def test_round_trip_is_bit_exact(psi, tmp_path, rng):
    path = tmp_path / "model.skm"
    save(psi, path)
    back = load(path)
    assert_same_expansion(psi, back)
    X = rng.normal(size=(9, 4))
    np.testing.assert_array_equal(back(X), psi(X))


@pytest.mark.parametrize("key", [None, b"k" * 32])
def test_file_is_a_function_of_the_model_not_of_the_clock(psi, tmp_path, monkeypatch, key):
    """Two saves of the same model, a year apart on the clock, are the same bytes: no ZIP
    member carries the time it was written (zipfile would stamp the clock's time)."""
    import time

    kw = {} if key is None else {"key": key}
    save(psi, tmp_path / "a.skm", **kw)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 366 * 86400.0)
    save(psi, tmp_path / "b.skm", **kw)
    monkeypatch.undo()
    a, b = (tmp_path / "a.skm").read_bytes(), (tmp_path / "b.skm").read_bytes()
    assert a == b
    with zipfile.ZipFile(tmp_path / "a.skm") as zf:
        infos = zf.infolist()
    names = [i.filename for i in infos]
    assert "meta.json" in names and ("signature.json" in names) == (key is not None)
    assert sum(name.startswith("arrays/") for name in names) == 3  # vectors, coef, intercept
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert_same_expansion(psi, load(tmp_path / "b.skm", **kw))


def test_round_trip_single_output_float32_and_nested(tmp_path, rng):
    single = KernelExpansion(rng.normal(size=(5, 2)).astype(np.float32),
                             rng.normal(size=5).astype(np.float32), Polynomial(3, 1.0, 0.5),
                             intercept=0.1 + 0.2)
    obj = {"model": single, "kernel": InverseMultiquadric(-1.0), "meta": ("a", 1, 2.5, None, True),
           "arrays": [np.arange(6).reshape(2, 3), np.array(["x", "yy"])], "scalar": np.float64(1 / 3)}
    save(obj, tmp_path / "b.skm")
    back = load(tmp_path / "b.skm")
    assert_same_expansion(single, back["model"])
    assert back["model"].intercept == 0.1 + 0.2  # bit-exact float through JSON
    assert back["kernel"] == InverseMultiquadric(-1.0)
    assert back["meta"] == ("a", 1, 2.5, None, True)
    np.testing.assert_array_equal(back["arrays"][0], np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(back["arrays"][1], ["x", "yy"])
    assert back["scalar"] == 1 / 3


def test_unsavable_objects_raise_type_error(tmp_path):
    with pytest.raises(TypeError, match="dtype object"):
        save(np.array([{}, 1], dtype=object), tmp_path / "x.skm")
    with pytest.raises(TypeError, match="Cannot save object of type SVC"):
        from sklearn.svm import SVC

        save(SVC(), tmp_path / "x.skm")
    with pytest.raises(TypeError, match="keys must be strings"):
        save({1: 2}, tmp_path / "x.skm")


def _rewrite(src, dst, mutate_meta=None, mutate_member=None):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "meta.json" and mutate_meta:
                meta = json.loads(data)
                mutate_meta(meta)
                data = json.dumps(meta).encode()
            elif mutate_member and info.filename.startswith("arrays/"):
                data = mutate_member(info.filename, data)
            zout.writestr(info.filename, data)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="No such file"):
        load(tmp_path / "nope.skm")


def test_not_a_zip(tmp_path):
    p = tmp_path / "junk.skm"
    p.write_bytes(b"this is not a model")
    with pytest.raises(FormatError, match="not a sparsekm file"):
        load(p)


def test_truncated_file(psi, tmp_path):
    p = tmp_path / "m.skm"
    save(psi, p)
    data = p.read_bytes()
    for cut in (len(data) // 3, len(data) - 10, 30):
        q = tmp_path / f"t{cut}.skm"
        q.write_bytes(data[:cut])
        with pytest.raises(FormatError):
            load(q)


def test_flipped_bytes_in_array_data(psi, tmp_path):
    p, q = tmp_path / "m.skm", tmp_path / "q.skm"
    save(psi, p)

    def flip(name, data):
        b = bytearray(data)
        b[-3] ^= 0xFF
        return bytes(b)

    _rewrite(p, q, mutate_member=flip)
    with pytest.raises(FormatError, match="checksum mismatch"):
        load(q)


def test_wrong_schema_version(psi, tmp_path):
    p, q = tmp_path / "m.skm", tmp_path / "q.skm"
    save(psi, p)
    _rewrite(p, q, mutate_meta=lambda m: m.update(schema_version=99))
    with pytest.raises(FormatError, match="schema version 99"):
        load(q)


def test_oversized_array_claim_is_rejected_before_reading(psi, tmp_path):
    p, q = tmp_path / "m.skm", tmp_path / "q.skm"
    save(psi, p)
    _rewrite(p, q, mutate_meta=lambda m: m["arrays"]["a0"].update(shape=[100, 50]))
    with pytest.raises(FormatError, match="claims .* bytes but its archive member holds only"):
        load(q)


def test_tampered_metadata(psi, tmp_path):
    p = tmp_path / "m.skm"
    save(psi, p)
    cases = {
        "format": lambda m: m.update(format="other"),
        "class": lambda m: m.update(object={"__type__": "estimator", "class": "os.system",
                                            "params": {}, "state": {}}),
        "kernel": lambda m: m["object"]["kernel"]["spec"].update(name="Evil"),
        "ref": lambda m: m["object"]["coef"].update(ref="a99"),
        "type": lambda m: m.update(object={"__type__": "pickle"}),
        "dtype": lambda m: m["arrays"]["a0"].update(dtype="|O"),
    }
    for name, mutate in cases.items():
        q = tmp_path / f"{name}.skm"
        _rewrite(p, q, mutate_meta=mutate)
        with pytest.raises(FormatError):
            load(q)


def test_missing_metadata(tmp_path):
    q = tmp_path / "q.skm"
    with zipfile.ZipFile(q, "w") as zf:
        zf.writestr("other.txt", "x")
    with pytest.raises(FormatError, match="no meta.json"):
        load(q)


def test_format_error_is_a_value_error():
    assert issubclass(FormatError, ValueError)
    assert sparsekm.persistence.SCHEMA_VERSION == 1
