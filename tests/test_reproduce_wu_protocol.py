"""Wu et al.'s tables as the reproduction lays them out: the columns are the paper's, in
its order (Tables 1 and 3); cells are means over the first ten splits of each IDA set
(one USPS split); the runs behind a table are splits x seeds for the seeded methods only;
a left-out column says why; the seeds note names the seeds used. The module is reached
through its registered reproductions (it is being renamed)."""

import re
from pathlib import Path

import pytest

from sparsekm.reproduce import Context, discover

PAPER = Path(__file__).resolve().parents[2] / "shared" / "papers" / "003_740dd97123993897.txt"


@pytest.fixture(scope="module")
def wu():
    name = discover()["wu-table1"].module
    return __import__(name, fromlist=["COLUMNS"])


def _header(first_column):
    lines = PAPER.read_text(encoding="utf-8").splitlines()
    line = next(line for line in lines if line.startswith("Data Set\t\t" + first_column))
    return [c for c in line.split("\t")[1:] if c]


@pytest.mark.skipif(not PAPER.is_file(), reason="the papers' text not found")
def test_the_columns_are_the_papers_in_its_order(wu):
    assert [wu.LABELS[c] for c in wu.COLUMNS] == _header("USPS")       # Tables 1-2
    assert [wu.LABELS[c] for c in wu.IDA_SETS] == _header("Banana")    # Table 3


@pytest.mark.skipif(not PAPER.is_file(), reason="the papers' text not found")
def test_cells_average_the_first_ten_splits_of_each_ida_set(wu):
    assert "averages over the first 10 training/test splits" in PAPER.read_text(
        encoding="utf-8")
    assert wu._splits("banana", quick=False) == list(range(1, 11))
    assert wu._splits("usps", quick=False) == [1]
    assert wu._split_text(Context(quick=False)) == "1-10"
    assert wu._splits("banana", quick=True) == [1, 2] and "1-2" in wu._split_text(
        Context(quick=True))


def test_a_full_run_has_every_column_and_datasets_keeps_the_papers_order(wu):
    assert wu._columns(Context()) == list(wu.COLUMNS)
    assert wu._columns(Context(datasets=("image", "banana"))) == ["banana", "image"]
    quick = wu._columns(Context(quick=True))
    assert len(quick) == 3 and set(quick) <= set(wu.IDA_SETS)
    assert wu._not_shown(Context(quick=True)) == "not in this run (--quick)"
    assert wu._not_shown(Context(datasets=("banana",))) == "not in this run (--datasets)"


def test_runs_are_splits_times_seeds_for_seeded_methods_only(wu):
    ctx = Context(seeds=3)
    # usps: 1 split, banana: 10; the SVM is deterministic (one seed), SLMC is seeded
    assert wu._n_runs(["usps", "banana"], ctx, ["svm"]) == 11
    assert wu._n_runs(["usps", "banana"], ctx, ["svm", "slmc"]) == 11 + 3 * 11
    assert wu._n_cells(["usps", "banana"], ctx, 4) == 44


def test_the_seeds_note_names_the_seeds(wu):
    assert "the mean over 3 seeds (seeds 5-7, `--seeds 3`)" in wu._seeds_note(
        Context(seed=5, seeds=3))
    assert "the mean over 1 seed (seed 2, `--seeds 1`)" in wu._seeds_note(
        Context(seed=2, seeds=1))
    assert re.search(r"RVM rows use the first seed only", wu._seeds_note(Context()))
