"""Signed models on the command line: ``--require-key`` refuses an unsigned file and a
signed one it cannot check, each with the line that says what to do; a signed file read
without a key predicts with one warning that its tag was not checked, and with the key
without any."""

import warnings

import numpy as np
import pytest

import sparsekm
from sparsekm import KernelExpansion
from sparsekm.cli import main
from sparsekm.kernels import RBF


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(12)
    psi = KernelExpansion(rng.normal(size=(4, 3)), rng.normal(size=4), RBF(0.4), 0.5)
    sparsekm.save(psi, tmp_path / "plain.skm")
    sparsekm.save(psi, tmp_path / "signed.skm", key=b"a secret")
    (tmp_path / "key").write_bytes(b"a secret\n")
    X = rng.normal(size=(3, 3))
    np.save(tmp_path / "x.npy", X)
    return tmp_path, psi.decision_function(X)


def _predict(d, model, *options):
    return main(["predict", str(d / model), str(d / "x.npy"), *options])


def test_require_key_refuses_an_unsigned_file(files, capsys):
    d, _ = files
    assert _predict(d, "plain.skm", "--require-key") == 1
    err = capsys.readouterr().err
    assert "plain.skm is not signed, and --require-key accepts only files verified" in err
    assert "drop --require-key if you trust the file" in err


def test_require_key_without_a_key_asks_for_one(files, capsys):
    d, _ = files
    assert _predict(d, "signed.skm", "--require-key") == 1
    assert "signed, but --require-key was given without a key: pass --key-file" in (
        capsys.readouterr().err)


def test_a_signed_file_without_a_key_predicts_with_one_warning(files, capsys):
    d, expected = files
    # the caller's warning filters (-W error) are not this test's subject: it sets its own
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("always")
        assert _predict(d, "signed.skm") == 0
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.startswith("sparsekm: warning:")]
    assert len(lines) == 1 and "was not checked because no key was given" in lines[0]
    np.testing.assert_allclose([float(v) for v in captured.out.split()], expected, rtol=1e-9)


def test_a_signed_file_with_its_key_predicts_silently(files, capsys):
    d, expected = files
    assert _predict(d, "signed.skm", "--key-file", str(d / "key"), "--require-key") == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    np.testing.assert_allclose([float(v) for v in captured.out.split()], expected, rtol=1e-9)
