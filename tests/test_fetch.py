"""The data fetchers against a loopback HTTP server (this machine has no internet).

A ``http.server`` bound to 127.0.0.1 on an ephemeral port serves copies of the
project's ``shared/data`` files from a temporary folder, either in the data-folder
layout (``base_url=``) or in the upstream layout (``HOSTS`` pointed at it: IDA as
plain ``.asc`` files under the GitHub repositories' paths). Skipped when the data
folder is absent.
"""

import functools
import gzip
import hashlib
import http.server
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from sparsekm import _fetch, datasets
from sparsekm._data_registry import CONTENT_SHA256, FILE_SHA256

pooch = pytest.importorskip("pooch")


def _shared():
    for cand in datasets._candidate_dirs():
        if (cand / "ida" / "banana" / "banana_train_data_1.asc.gz").is_file() and \
                (cand / "usps" / "zip.train.gz").is_file() and (cand / "ripley").is_dir():
            return cand
    return None


SHARED = _shared()


def needs_data(test):
    """Mark a test as needing the real data (``-m data``) and skip it without the folder."""
    skip = pytest.mark.skipif(SHARED is None, reason="shared data folder not found")
    return pytest.mark.data(skip(test))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def serve(tmp_path):
    """Start a loopback server over a folder; yields ``start(folder) -> base URL``."""
    servers = []

    def start(folder):
        handler = functools.partial(_Quiet, directory=str(folder))
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                                  daemon=True)
        thread.start()
        servers.append((srv, thread))
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for srv, thread in servers:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)


def _copy(rels, dest):
    for rel in rels:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHARED / rel, dest / rel)


def test_registry_covers_every_file_with_sha256():
    # 2 USPS + 2 Ripley + 8 IDA sets x 10 splits x 4 files
    assert len(CONTENT_SHA256) == 4 + 8 * 10 * 4
    assert all(len(v) == 64 and int(v, 16) >= 0 for v in CONTENT_SHA256.values())
    assert FILE_SHA256["usps/zip.train.gz"] == datasets._USPS_SHA256["zip.train.gz"]


@needs_data
def test_registry_matches_the_shared_copies():
    for rel, sha in CONTENT_SHA256.items():
        raw = (SHARED / rel).read_bytes()
        data = gzip.decompress(raw) if rel.endswith(".gz") else raw
        assert hashlib.sha256(data).hexdigest() == sha, rel


@needs_data
def test_fetch_from_layout_mirror_then_loaders_read_it(tmp_path, serve, monkeypatch):
    mirror, dest = tmp_path / "mirror", tmp_path / "data"
    rels = ["usps/zip.train.gz", "usps/zip.test.gz", "ripley/synth.tr", "ripley/synth.te"]
    rels += [f"ida/titanic/titanic_{p}_{k}_{s}.asc.gz" for s in range(1, 11)
             for p in ("train", "test") for k in ("data", "labels")]
    _copy(rels, mirror)
    url = serve(mirror)
    monkeypatch.setenv("SPARSEKM_DATA_URL", url)  # the environment override
    assert datasets.fetch_usps(dest) == dest
    assert datasets.fetch_ripley(dest) == dest
    assert datasets.fetch_ida("titanic", dest) == dest
    for rel in rels:
        assert (dest / rel).read_bytes() == (SHARED / rel).read_bytes(), rel
    for ours, ref in zip(datasets.load_ida("titanic", 7, path=dest),
                         datasets.load_ida("titanic", 7, path=SHARED)):
        np.testing.assert_array_equal(ours, ref)
    for ours, ref in zip(datasets.load_ripley(path=dest), datasets.load_ripley(path=SHARED)):
        np.testing.assert_array_equal(ours, ref)
    assert datasets.data_available("usps", dest)  # byte-identical to the copy load_usps checks
    # a second fetch finds the verified files and downloads nothing: the server is gone
    monkeypatch.setenv("SPARSEKM_DATA_URL", "http://127.0.0.1:9/")
    assert datasets.fetch_ripley(dest) == dest


@needs_data
def test_fetch_from_upstream_layout_stores_gzipped_layout(tmp_path, serve, monkeypatch):
    up, dest = tmp_path / "upstream", tmp_path / "data"
    monkeypatch.delenv("SPARSEKM_DATA_URL", raising=False)
    for split in (1, 2):
        for part in ("train", "test"):
            for kind in ("data", "labels"):
                rel = f"ida/breast_cancer/breast_cancer_{part}_{kind}_{split}.asc.gz"
                target = (up / "fernando2393/Relevance-Vector-Machine/4692830b/Classification/"
                          f"datasets/breast-cancer/breast-cancer_{part}_{kind}_{split}.asc")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(gzip.decompress((SHARED / rel).read_bytes()))
    # Ripley: the first source (PRNN) is missing -> HTTP 404 -> the GitHub mirror
    (up / _fetch._RIPLEY_MIRROR).mkdir(parents=True)
    for f in ("synth.tr", "synth.te"):
        shutil.copyfile(SHARED / "ripley" / f, up / _fetch._RIPLEY_MIRROR / f)
    url = serve(up)
    monkeypatch.setitem(_fetch.HOSTS, "github", url)
    monkeypatch.setitem(_fetch.HOSTS, "prnn", url + "/no-such-folder")
    datasets.fetch_ida("breast_cancer", dest, splits=[1, 2])
    datasets.fetch_ripley(dest)
    got = datasets.load_ida("breast_cancer", 2, path=dest)
    ref = datasets.load_ida("breast_cancer", 2, path=SHARED)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    stored = (dest / "ida/breast_cancer/breast_cancer_train_data_2.asc.gz").read_bytes()
    assert stored[:2] == b"\x1f\x8b"  # stored gzipped, as the loaders expect
    assert datasets.data_available("ripley", dest)


@needs_data
def test_corrupted_download_is_refused_and_not_cached(tmp_path, serve):
    mirror, dest = tmp_path / "mirror", tmp_path / "data"
    _copy(["ripley/synth.tr"], mirror)
    raw = bytearray((mirror / "ripley/synth.tr").read_bytes())
    raw[40] = ord("9") if raw[40] != ord("9") else ord("8")  # one changed digit
    (mirror / "ripley/synth.tr").write_bytes(bytes(raw))
    url = serve(mirror)
    with pytest.raises(ValueError, match="SHA-256 mismatch") as err:
        datasets.fetch_ripley(dest, base_url=url)
    assert CONTENT_SHA256["ripley/synth.tr"] in str(err.value)
    assert "nothing cached" in str(err.value)
    assert not (dest / "ripley" / "synth.tr").exists()
    assert not list(dest.rglob("*")) or all(p.is_dir() for p in dest.rglob("*"))


@needs_data
def test_corrupted_cached_file_is_downloaded_again(tmp_path, serve):
    mirror, dest = tmp_path / "mirror", tmp_path / "data"
    _copy(["ripley/synth.tr", "ripley/synth.te"], mirror)
    (dest / "ripley").mkdir(parents=True)
    (dest / "ripley/synth.tr").write_text("xs ys yc\n0 0 0\n")  # truncated copy
    datasets.fetch_ripley(dest, base_url=serve(mirror))
    assert (dest / "ripley/synth.tr").read_bytes() == (SHARED / "ripley/synth.tr").read_bytes()


def test_unreachable_source_raises_oserror_naming_the_url(tmp_path):
    with pytest.raises(OSError, match=r"127\.0\.0\.1:9/ripley/synth\.tr"):
        datasets.fetch_ripley(tmp_path, base_url="http://127.0.0.1:9", timeout=2)
    assert not (tmp_path / "ripley" / "synth.tr").exists()


def test_fetch_ida_rejects_unknown_names_and_splits(tmp_path):
    with pytest.raises(ValueError, match="Unknown IDA data set 'diabetis'"):
        datasets.fetch_ida("diabetis", tmp_path)
    with pytest.raises(ValueError, match="splits must be ints in 1..10"):
        datasets.fetch_ida("banana", tmp_path, splits=[11])


def test_not_found_message_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSEKM_DATA", str(tmp_path))
    with pytest.raises(datasets.DataNotFoundError) as err:
        datasets.load_ripley(path=tmp_path)
    msg = str(err.value)
    assert "sparsekm data fetch" in msg and "--data" in msg and "SPARSEKM_DATA" in msg


def test_default_folder_is_searched_by_the_loaders(tmp_path, monkeypatch):
    monkeypatch.delenv("SPARSEKM_DATA", raising=False)
    monkeypatch.setattr(_fetch, "default_data_dir", lambda: tmp_path)
    monkeypatch.setattr(datasets, "default_data_dir", lambda: tmp_path)
    assert tmp_path in list(datasets._candidate_dirs())


@needs_data
def test_cli_data_fetch(tmp_path, serve, capsys):
    from sparsekm.cli import main

    mirror, dest = tmp_path / "mirror", tmp_path / "data"
    _copy(["ripley/synth.tr", "ripley/synth.te"], mirror)
    url = serve(mirror)
    rc = main(["--quiet", "data", "fetch", "ripley", "--data", str(dest), "--base-url", url])
    out = capsys.readouterr().out
    assert rc == 0
    assert "ripley: verified (SHA-256)" in out and f"--data {dest}" in out
    assert Path(dest / "ripley/synth.te").is_file()


def test_without_pooch_the_error_names_the_extra(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pooch", None)  # "import pooch" raises ImportError
    with pytest.raises(ImportError, match=r"sparsekm\[data\]"):
        datasets.fetch_ripley(tmp_path)
