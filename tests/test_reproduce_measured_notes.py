"""The reproductions' notes and rows say what the records measured: each number in a note
or a summary is the one in the record it was built from (given here as stated inputs), a
row that was not run registers cells with a reason and no number, and a section without
its records says nothing rather than something typed."""

from types import SimpleNamespace

import pytest

from sparsekm.reproduce import denoising, discover, franc, section_of
from sparsekm.reproduce import reduced_set as rs


def _records(**data):
    return {name: SimpleNamespace(data=d) for name, d in data.items()}


def test_the_threshold_summary_counts_the_systems_below_eight_percent():
    rows = [("RS-10", 7.0, 6.0), ("RS-20", 5.0, 5.5), ("RS-30", 4.0, 4.0),
            ("RS-5", 12.0, 9.0)]  # the last is above 8 %: not counted
    text = rs._threshold_summary(_records(a={"thresholds": rows}))
    assert "over the 3 reduced systems with an error below 8 %" in text
    assert "lower test error in 1 and a higher one in 1" in text
    # mean of b~ - b kept over the three: (-1.0 + 0.5 + 0.0) / 3
    assert "(mean -0.17 points" in text


def test_no_threshold_rows_no_summary():
    assert rs._threshold_summary(_records(a={"thresholds": [("RS-5", 9.0, 9.5)]})) == ""
    assert rs._threshold_summary(_records(a={})) == ""


def _sv_cells(ours_mean, ours_digit1=None):
    cells = [{"table": rs.T1998, "cell": "#SVs mean", "ours": ours_mean, "paper": 254}]
    if ours_digit1 is not None:
        cells.append({"table": rs.T1998, "cell": "#SVs digit 1", "ours": ours_digit1,
                      "paper": 92})
    return cells


def test_the_usps_table_note_carries_the_measured_sv_ratio():
    notes = rs._table_notes(_records(a={"cells": _sv_cells(508.0, 40)}))
    assert set(notes) == {rs.T1998, rs.T2, rs.T3, rs.T4}
    text = notes[rs.T1998]
    assert "keep 508.0 SVs per classifier against the papers' 254 (2.0x" in text
    assert "Digit 1 (our 40 SVs, the paper's 92)" in text


def test_without_the_sv_cell_there_is_no_usps_note():
    assert rs._table_notes(_records(a={"cells": []})) == {}
    assert rs._table_notes(_records(a={"cells": _sv_cells(None)})) == {}


def test_a_row_not_run_registers_its_cells_without_numbers():
    cells = []
    paper = list(range(10)) + [4.4]
    rs._not_run(cells, [rs.T1998, rs.T2], "RS-100", paper)
    assert len(cells) == 2 * 11
    assert all(c["ours"] is None and c["reason"] == "not in this run (--quick)" for c in cells)
    assert [c["paper"] for c in cells[:11]] == paper


def test_ripley_note_names_the_chosen_regularisers():
    notes = franc._franc_table_notes(_records(ripley={"chosen_C": {
        "rbf": {"SVM": 64.0, "KFD": 0.125}}}))
    assert set(notes) == {franc.RIPLEY_TABLE}
    assert "rbf: SVM C = 64, KFD regulariser 0.125" in notes[franc.RIPLEY_TABLE]


def test_ida_note_gives_the_chosen_sigma_and_C_in_log2():
    notes = franc._franc_table_notes(_records(**{"ida-franc": {"chosen_validation": {
        "heart": {"SVM": [2.0 ** -5, 2.0 ** 7]}}}}))
    assert set(notes) == {franc.IDA_TABLE}
    assert "Heart (-5, 7)" in notes[franc.IDA_TABLE]


def test_franc_notes_need_their_records():
    assert franc._franc_table_notes({}) == {}
    assert franc._franc_table_notes(_records(ripley={})) == {}


def test_the_denoising_note_counts_the_measured_wins():
    notes = denoising._denoise_table_notes(_records(**{
        "table-denoise-gaussians": {"wins": 41, "n_cells": 45}}))
    assert "kernel PCA better in 41 of 45 cells" in notes[denoising.TABLE_I]
    assert denoising._denoise_table_notes({}) == {}


def test_ripley_cells_are_rounded_as_the_table_shows_them():
    trn, test, nsv = franc._ripley_cells("SVM", 10.04, 8.96, 101, (10.4, 8.5, 94))
    assert (trn["ours"], test["ours"], nsv["ours"]) == (10.0, 9.0, 101)
    assert (trn["paper"], test["paper"], nsv["paper"]) == (10.4, 8.5, 94)
    assert {c["table"] for c in (trn, test, nsv)} == {franc.RIPLEY_TABLE}


@pytest.mark.parametrize("C, text", [(64.0, "2^6"), (1.0, "2^0"), (0.125, "2^-3"),
                                     (10.0, "10")])
def test_a_C_is_written_as_a_power_of_two_where_it_is_one(C, text):
    assert franc._fmt_C(C) == text


def test_the_benchmark_targets_follow_the_recorded_numbers():
    import json
    from pathlib import Path

    path = Path(rs.__file__).resolve().parents[3] / "benchmarks" / "results" / "reduce.json"
    targets = rs._benchmark_targets()
    if not path.exists():  # an installed package: one target saying how to measure
        assert len(targets) == 1 and targets[0].met is None
        return
    b = json.loads(path.read_text())
    wall = b["construct"]["RS-25"]["wall_seconds"]
    speed = b["speedup_vs_sklearn_full"]
    err = b["test_error_percent"]["RS2-25"]["b_refit_per_classifier"]
    assert [t.met for t in targets] == [wall < 120, speed >= 50 and err <= 5.3]
    assert f"{wall:.1f} s wall" in targets[0].ours
    assert f"{speed:.0f}x" in targets[1].ours and f"{err:.2f} %" in targets[1].ours


def test_every_section_has_its_own_place_in_the_results_file():
    sections = {id(s): s for s in (section_of(e) for e in discover().values())}
    assert None not in [s for s in sections.values()]
    orders = [s.order for s in sections.values()]
    assert len(orders) == len(set(orders))
    titles = [s.title for s in sections.values()]
    assert len(titles) == len(set(titles))
