"""``usps-rs-shared`` on a stand-in (300 embedded digits, --quick): its baseline row is the
one-vs-rest SVM's own test error, every size is a prefix of one shared construction so the
error can only fall as vectors are added, and the table states the numbers its data keeps."""

import re

import numpy as np
import pytest
from sklearn.datasets import load_digits

from sparsekm.reproduce import Context, discover
from sparsekm.reproduce import reduced_set as rs


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    data = (X[:300], y[:300], X[300:500], y[300:500])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rs, "_load", lambda ctx: data)
        result = discover()["usps-rs-shared"].func(
            Context(out_dir=tmp_path_factory.mktemp("shared"), quick=True, progress=False))
    return result, data


def _rows(result):
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in result.table.splitlines()[2:]]


def test_the_baseline_row_is_the_svms_own_test_error(shared):
    result, (Xtr, ytr, Xte, yte) = shared
    ovr, _ = rs.usps_svm(Xtr, ytr)
    baseline = _rows(result)[0]
    assert baseline[0] == "SV (baseline)"
    assert float(baseline[4].rstrip("%")) == pytest.approx(
        100 * np.mean(ovr.predict(Xte) != yte), abs=0.005)


def test_the_error_falls_as_shared_vectors_are_added(shared):
    result, _ = shared
    rows = _rows(result)[1:]
    assert [int(r[1]) for r in rows] == [50, 100]  # the --quick sizes, total vectors
    rel = [float(r[5]) for r in rows]
    assert rel == sorted(rel, reverse=True) and rel[-1] < rel[0]


def test_the_table_states_the_thresholds_its_data_keeps(shared):
    result, _ = shared
    for row, (name, keep, per) in zip(_rows(result)[1:], result.data["thresholds"],
                                      strict=True):
        assert row[0] == name and re.fullmatch(r"RS-shared-\d+", name)
        assert float(row[3].rstrip("%")) == pytest.approx(per, abs=0.005)
        assert float(row[4].rstrip("%")) == pytest.approx(keep, abs=0.005)
