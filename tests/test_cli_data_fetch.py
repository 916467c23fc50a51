"""``sparsekm data fetch``: what it prints once a data set is verified (and where the
loaders will find it), and how it turns a checksum failure into one line; other errors
are not disguised as checksum failures. The fetchers are stand-ins: nothing is
downloaded."""

import pytest

from sparsekm.cli import main


@pytest.fixture
def fetched(monkeypatch):
    calls = []

    def fetch_ripley(path=None, *, base_url=None, progressbar=False, timeout=60):
        calls.append((path, base_url, progressbar))
        return f"{path or '/cache/sparsekm'}"

    monkeypatch.setattr("sparsekm.datasets.fetch_ripley", fetch_ripley)
    monkeypatch.delenv("SPARSEKM_DATA", raising=False)
    return calls


def test_a_verified_set_into_a_given_folder_says_how_to_point_at_it(fetched, capsys):
    assert main(["--quiet", "data", "fetch", "ripley", "--data", "/d", "--base-url",
                 "http://mirror"]) == 0
    assert fetched == [("/d", "http://mirror", False)]  # --quiet: no progress bar
    assert capsys.readouterr().out.splitlines() == [
        "ripley: verified (SHA-256) in /d",
        "point the loaders at it with --data /d or SPARSEKM_DATA=/d"]


def test_a_verified_set_in_the_default_folder_needs_no_pointing(fetched, capsys):
    assert main(["data", "fetch", "ripley"]) == 0
    assert fetched[0][2] is True  # a progress bar without --quiet
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "ripley: verified (SHA-256) in /cache/sparsekm"
    assert out[1].startswith("the loaders find this folder on their own")


@pytest.mark.parametrize("message, expected", [
    ("ripley.zip: SHA-256 abc != def", "refusing ripley: the downloaded files do not have "
                                       "the expected SHA-256, so nothing was kept"),
    ("the archive holds no ripley.trn", "ValueError: the archive holds no ripley.trn"),
], ids=["checksum", "other"])
def test_only_a_checksum_failure_is_reported_as_one(monkeypatch, capsys, message, expected):
    def fetch_ripley(path=None, **kw):
        raise ValueError(message)

    monkeypatch.setattr("sparsekm.datasets.fetch_ripley", fetch_ripley)
    assert main(["--quiet", "data", "fetch", "ripley"]) == 1
    assert expected in capsys.readouterr().err
