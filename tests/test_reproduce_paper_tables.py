"""The papers' tables as the reproductions transcribe them agree with themselves and with
what the papers and data sets say elsewhere: means with their rows, the rows of two
tables that differ in one number, lambda falling along Table III, the count of ratios
above 1 that Table I's note quotes, the support sizes the protocols fix (m in the row's
name, m = 0.1 n and 0.25 n, the full KFD's n) and the full KFD's n^2 kernel evaluations.
A typo in a transcribed number fails one of these."""

import numpy as np
import pytest

from sparsekm.reproduce import denoising, discover, franc, section_of
from sparsekm.reproduce import reduced_set as rs

#: Training-set sizes of the IDA benchmark (Raetsch et al.; 100 splits each).
IDA_TRAIN_SIZE = {"breast_cancer": 200, "heart": 170, "ringnorm": 400, "titanic": 150,
                  "waveform": 400}


def _usps_rows():
    rows = {"SV": rs.PAPER_SV, "RS2": rs.PAPER_RS2, "RS2 gd": rs.PAPER_RS2_GD}
    rows.update({f"RS-{n}": r for n, r in rs.PAPER_RS.items()})
    rows.update({f"RSS-{n}": r for n, r in rs.PAPER_RSS.items()})
    rows.update({f"RSS2-{n}": r for n, (_, r) in rs.PAPER_RSS2.items()})
    return rows


def test_the_usps_sv_counts_average_to_the_papers_254():
    for row in (rs.PAPER_NSV_T1, rs.PAPER_NSV_T2):
        assert len(row) == 11 and row[10] == rs.PAPER_N_SV == 254
        assert round(np.mean(row[:10])) == 254


def test_the_two_sv_rows_differ_in_digit_1_only():
    diff = [d for d in range(11) if rs.PAPER_NSV_T1[d] != rs.PAPER_NSV_T2[d]]
    assert diff == [1] and (rs.PAPER_NSV_T1[1], rs.PAPER_NSV_T2[1]) == (92, 91)


def test_every_usps_row_is_ten_error_counts_and_a_ten_class_percentage():
    for name, row in _usps_rows().items():
        assert len(row) == 11, name
        assert all(isinstance(v, int) and 0 <= v <= 2007 for v in row[:10]), name
        assert 0 < row[10] < 100, name  # 2007 test digits


def test_lambda_falls_as_table_iii_keeps_more_vectors():
    ns = sorted(rs.PAPER_RSS2)
    lams = [rs.PAPER_RSS2[n][0] for n in ns]
    assert all(a > b for a, b in zip(lams, lams[1:], strict=False))


def test_table_i_has_44_of_45_ratios_above_one_as_its_note_says():
    ratios = np.array(list(denoising._TABLE1.values()))
    assert ratios.shape == (5, 9)
    assert int(np.sum(ratios > 1)) == 44
    assert sorted(denoising._TABLE1) == [0.05, 0.1, 0.2, 0.4, 0.8]


def test_ripley_rows_keep_the_support_sizes_the_protocol_fixes():
    for key, (trn, test, n_sv) in franc._RIPLEY_PAPER.items():
        kernel, method = key[0], key[1]
        assert kernel in ("rbf", "poly") and 0 < trn < 50 and 0 < test < 50
        if len(key) == 3:  # "+Approx" with m basis vectors
            assert n_sv == key[2]
        elif method == "KFD":
            assert n_sv == 250  # every training point of Ripley's set
        else:
            assert n_sv < 250


def test_the_full_kfd_uses_every_ida_training_point_and_n_squared_evaluations():
    for name, rows in franc._IDA_PAPER.items():
        n = IDA_TRAIN_SIZE[name]
        trn, test, ker_eval, n_sv = rows["KFD"]
        assert n_sv == n
        assert float(ker_eval) == pytest.approx(n * n, rel=0.01)


def test_the_approximations_use_at_most_their_share_of_the_ida_training_set():
    # m = 0.1 n for SVM+Approx and 0.25 n for KFD+Approx (fewer when the greedy basis
    # reaches its accuracy earlier)
    for name, rows in franc._IDA_PAPER.items():
        n = IDA_TRAIN_SIZE[name]
        assert 0 < rows["SVM+Approx"][3] <= round(0.1 * n)
        assert 0 < rows["KFD+Approx"][3] <= round(0.25 * n)
        assert rows["SVM+Approx"][3] < rows["SVM"][3]


def test_the_ida_sets_are_the_five_of_the_table():
    assert set(franc._IDA_PAPER) == set(franc.IDA_SETS) == set(IDA_TRAIN_SIZE)
    assert all(set(rows) == set(franc.METHODS) for rows in franc._IDA_PAPER.values())


def test_a_registered_reproduction_gets_its_modules_section(monkeypatch):
    from sparsekm import reproduce

    registry = discover()
    assert discover() is registry  # importing again registers nothing twice
    monkeypatch.setattr(reproduce, "REGISTRY", dict(registry))

    @reproduce.register("test-only", "a stand-in", slow=True)
    def run(ctx):
        return None

    entry = reproduce.REGISTRY["test-only"]
    assert (entry.func, entry.slow, entry.description) == (run, True, "a stand-in")
    assert entry.module == __name__ and section_of(entry) is None  # no SECTION here
    assert section_of(registry["ripley"]) is franc.SECTION
