"""``docs/results.md`` is generated from the modules: every published number its records
hold (each section's hidden cells) is the number the module transcribed from the paper.
A constant corrected in a module without re-rendering the results, or a cell filed under
the wrong row or column, fails here."""

import re
from pathlib import Path

import pytest

from sparsekm.reproduce import denoising, discover, franc
from sparsekm.reproduce import reduced_set as rs
from sparsekm.reproduce._report import parse_results

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results.md"

pytestmark = pytest.mark.skipif(not RESULTS.is_file(), reason="docs/results.md not found")


@pytest.fixture(scope="module")
def records():
    return parse_results(RESULTS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def wu():
    return __import__(discover()["wu-table1"].module, fromlist=["COLUMNS"])


def _cells(records, name):
    cells = records[name].data["cells"]
    assert cells
    return [c for c in cells if c["paper"] is not None]


def _usps(row_values, rest):
    """The paper's number of a USPS row for ``rest`` = "digit D" or "10-class %"."""
    m = re.fullmatch(r"digit (\d)", rest)
    return row_values[int(m.group(1))] if m else row_values[10]


def _usps_row(table, label):
    if label == "#SVs":
        return rs.PAPER_NSV_T1 if table == rs.T1998 else rs.PAPER_NSV_T2
    if label == "SV (original SVM; paper SV-254)":
        return rs.PAPER_SV
    if label == "RS2-25":
        return rs.PAPER_RS2
    if label == "RS2^gd-25 (traditional)":
        return rs.PAPER_RS2_GD
    kind, n = re.fullmatch(r"(RS|RSS|RSS2)-(\d+)", label).groups()
    table_of = {"RS": rs.PAPER_RS, "RSS": rs.PAPER_RSS}
    return table_of[kind][int(n)] if kind in table_of else rs.PAPER_RSS2[int(n)][1]


@pytest.mark.parametrize("name", ["usps-rs-construct", "usps-rs-select-kpca",
                                  "usps-rs-select-l1"])
def test_the_usps_cells_are_the_papers(records, name):
    for c in _cells(records, name):
        if c["cell"] == "#SVs mean":
            assert c["paper"] == rs.PAPER_N_SV
            continue
        label, rest = re.fullmatch(r"(.+) (digit \d|10-class %)", c["cell"]).groups()
        assert c["paper"] == _usps(_usps_row(c["table"], label), rest), c


def test_the_denoising_ratios_are_table_is(records):
    for c in _cells(records, "table-denoise-gaussians"):
        s, n = re.fullmatch(r"sigma = ([\d.]+), n = (\d) ratio", c["cell"]).groups()
        assert c["paper"] == denoising._TABLE1[float(s)][int(n) - 1], c


def test_the_ripley_cells_are_table_1s(records):
    column = {"TrnErr %": 0, "TestErr %": 1, "n_SV": 2}
    for c in _cells(records, "ripley"):
        kname, method, m, col = re.fullmatch(
            r"(RBF sigma = 1|polynomial d = 2), (SVM|KFD)(?:\+Approx \(m = (\d+)\))? "
            r"(TrnErr %|TestErr %|n_SV)", c["cell"]).groups()
        kernel = "rbf" if kname.startswith("RBF") else "poly"
        key = (kernel, f"{method}+Approx", int(m)) if m else (kernel, method)
        assert c["paper"] == franc._RIPLEY_PAPER[key][column[col]], c


def test_the_ida_cells_are_table_2s(records):
    names = {label: key for key, label in franc.IDA_LABELS.items()}
    column = {"TrnErr %": 0, "TestErr %": 1, "n_SV": 3}
    for c in _cells(records, "ida-franc"):
        if c["table"] != franc.IDA_TABLE:
            continue
        label, method, col = re.fullmatch(r"(.+) (SVM|SVM\+Approx|KFD|KFD\+Approx) "
                                          r"(TrnErr %|TestErr %|n_SV)", c["cell"]).groups()
        assert c["paper"] == franc._IDA_PAPER[names[label]][method][column[col]], c


def _wu_cell(wu, cell):
    """(column, rest) of a Wu et al. cell name "<column label> <rest>"."""
    for col in wu.COLUMNS:
        if cell.startswith(wu.LABELS[col] + " "):
            return col, cell[len(wu.LABELS[col]) + 1:]
    raise AssertionError(f"no column in {cell!r}")


def test_wu_table_1_cells(records, wu):
    methods = {v: k for k, v in wu.NAMES.items()}
    for c in _cells(records, "wu-table1"):
        col, rest = _wu_cell(wu, c["cell"])
        i = wu.COLUMNS.index(col)
        fixed = {"SVM N_SV": wu.PAPER_NSV, "SVM error": wu.PAPER_T1[("svm", None)],
                 "RVM N_z/N_SV %": wu.PAPER_RVM_RATIO, "RVM error": wu.PAPER_RVM}
        if rest in fixed:
            assert c["paper"] == fixed[rest][i], c
            continue
        ratio, method = re.fullmatch(r"(5|10)% (\w+)", rest).groups()
        assert c["paper"] == wu.PAPER_T1[(methods[method], int(ratio) / 100)][i], c


def test_wu_table_2_cells(records, wu):
    for c in _cells(records, "wu-table2"):
        col, rest = _wu_cell(wu, c["cell"])
        ratio, init = re.fullmatch(r"(5|10)% (random|k-means)", rest).groups()
        method = "slmc" if init == "random" else "slmc_kmeans"
        assert c["paper"] == wu.PAPER_T2[(method, int(ratio) / 100)][wu.COLUMNS.index(col)], c


def test_wu_table_3_cells(records, wu):
    methods = {v: k for k, v in wu.NAMES.items()}
    for c in _cells(records, "wu-table3"):
        col, rest = _wu_cell(wu, c["cell"])
        i = wu.IDA_SETS.index(col)
        fixed = {"SVM N_SV": wu.PAPER_NSV[1:], "SVM error": wu.PAPER_T1[("svm", None)][1:],
                 "KFD N_z": wu.PAPER_T3_KFD_NZ, "KFD error": wu.PAPER_T3_KFD,
                 "10% SKFD": wu.PAPER_T3_SKFD}
        if rest in fixed:
            assert c["paper"] == fixed[rest][i], c
            continue
        method = re.fullmatch(r"10% (\w+)", rest).group(1)
        assert c["paper"] == wu.PAPER_T1[(methods[method], 0.10)][1 + i], c
