"""The reproductions' text on known inputs: the verdict of ours against the paper at the
paper's printed precision, "much worse", number and time formatting, markdown cells and
headings, the command line a section shows, the numbers the prose quotes, fingerprints,
and a results file parsed back into its records."""

import json

import numpy as np
import pytest

from sparsekm.reproduce import Context, Target
from sparsekm.reproduce._cache import CellCache, data_fingerprint
from sparsekm.reproduce._prose import _percent, _row, update_generated
from sparsekm.reproduce._report import (
    NOT_RERUN,
    _cell,
    _decimals,
    _demote,
    _fmt_num,
    _fmt_seconds,
    _json_comment,
    _kept,
    classify,
    command_line,
    much_worse,
    parse_results,
)


@pytest.mark.parametrize("cell, verdict", [
    ({"ours": 5.04, "paper": 5.0}, "tie"),            # 5.0 at the paper's one decimal
    ({"ours": 4.94, "paper": 5.0}, "better"),         # 4.9
    ({"ours": 5.06, "paper": 5.0}, "worse"),          # 5.1
    ({"ours": 5.4, "paper": 5}, "tie"),               # an int: no decimals, 5
    ({"ours": 5.6, "paper": 5}, "worse"),             # 6
    ({"ours": 4.75, "paper": 4.75}, "tie"),
    ({"ours": 0.96, "paper": 0.95, "higher_is_better": True}, "better"),
    ({"ours": 0.94, "paper": 0.95, "higher_is_better": True}, "worse"),
    ({"ours": 5.1, "paper": 5.0, "spread": [4.8, 5.2]}, "tie"),     # paper inside the spread
    ({"ours": 5.3, "paper": 5.0, "spread": [5.2, 5.4]}, "worse"),   # every seed worse
    ({"ours": 4.6, "paper": 5.0, "spread": [4.5, 4.8]}, "better"),
    ({"ours": 1.604, "paper": 1.6, "paper_decimals": 2}, "tie"),    # the paper prints 1.60
    ({"ours": 1.61, "paper": 1.6, "paper_decimals": 2}, "worse"),
    ({"ours": 1.64, "paper": 1.6}, "tie"),                          # ... or 1.6
])
def test_classify_at_the_papers_precision(cell, verdict):
    assert classify(cell) == verdict


@pytest.mark.parametrize("cell, expected", [
    ({"cell": "test error %", "ours": 6.2, "paper": 5.0}, True),    # 1.2 points
    ({"cell": "error", "ours": 21.5, "paper": 20.0}, True),         # 1.5 points, 7.5 %
    ({"cell": "vectors", "ours": 21.5, "paper": 20.0}, False),      # 7.5 %, not a percent
    ({"cell": "vectors", "ours": 25, "paper": 20}, True),           # 25 % worse
    ({"cell": "error", "ours": 5.5, "paper": 5.0}, False),          # 0.5 points, 10 %
    ({"cell": "error", "ours": None, "paper": 5.0}, False),         # not reproduced
    ({"cell": "error", "ours": 3.0, "paper": 5.0}, False),          # better
    ({"cell": "accuracy", "ours": 0.5, "paper": 0.8, "higher_is_better": True}, True),
    ({"cell": "accuracy", "ours": 0.75, "paper": 0.8, "higher_is_better": True}, False),
])
def test_much_worse_is_one_point_or_twenty_percent(cell, expected):
    assert much_worse(cell) is expected


@pytest.mark.parametrize("paper, decimals", [
    (5, 0), (np.int64(3), 0), (5.0, 1), (4.75, 2), (0.125, 3), (1e-7, 0), (True, 1)])
def test_decimals_the_paper_prints(paper, decimals):
    assert _decimals(paper) == decimals


@pytest.mark.parametrize("value, text", [
    (None, "-"), (1.5, "1.5"), (1.25, "1.25"), (1.256, "1.26"), (2.0, "2"), (3, "3"),
    (1e20, "1e+20"), ("n/a", "n/a")])
def test_numbers_in_tables(value, text):
    assert _fmt_num(value) == text


@pytest.mark.parametrize("seconds, text", [
    (None, "unknown"), (5.4, "5 s"), (119.4, "119 s"), (120, "120 s (2.0 min)"),
    (3600, "3600 s (60.0 min)")])
def test_run_times(seconds, text):
    assert _fmt_seconds(seconds) == text


@pytest.mark.parametrize("value, text", [("a|b", "a\\|b"), ("x\ny", "x y"), (5, "5")])
def test_markdown_cells_escape_pipes_and_newlines(value, text):
    assert _cell(value) == text


@pytest.mark.parametrize("markdown, demoted", [
    ("# A", "#### A"), ("## B", "#### B"), ("### C", "#### C"), ("#### D", "#### D"),
    ("text # no heading", "text # no heading"), ("#5 is not one", "#5 is not one"),
    ("# A\nbody\n## B", "#### A\nbody\n#### B")])
def test_headings_inside_a_section_sit_below_it(markdown, demoted):
    assert _demote(markdown) == demoted


@pytest.mark.parametrize("name, ctx, cmd", [
    ("ripley", Context(), "sparsekm reproduce ripley"),
    ("ripley", Context(quick=True), "sparsekm reproduce ripley --quick"),
    ("ripley", Context(seed=2), "sparsekm reproduce ripley --seed 2"),
    ("ripley", Context(no_cache=True, cached_only=True),
     "sparsekm reproduce ripley --no-cache --cached-only"),
    ("wu-table1", Context(datasets=("banana", "heart")),
     "sparsekm reproduce wu-table1 --datasets banana,heart"),
    ("wu-table2", Context(seeds=5), "sparsekm reproduce wu-table2 --seeds 5"),
    ("wu-table2", Context(seeds=3), "sparsekm reproduce wu-table2"),  # the default
    ("franc-pca", Context(datasets=("banana",), seeds=5), "sparsekm reproduce franc-pca"),
])
def test_the_command_line_a_section_shows(name, ctx, cmd):
    assert command_line(name, ctx) == cmd


@pytest.mark.parametrize("text, value", [
    ("5.38% / 4.7%", 5.38), ("12 %", 12.0), ("error 0.5%", 0.5), ("none", None)])
def test_the_first_percentage_of_a_cell(text, value):
    assert _percent(text) == value


@pytest.mark.parametrize("label, cells", [
    ("RS2-25", ["RS2-25", "10.2x", "5.38%"]), ("SV", ["SV", "1x", "4.7%"]), ("RS3", None)])
def test_a_table_row_by_its_first_cell(label, cells):
    block = ("| method | factor | error |\n|---|---|---|\n| SV | 1x | 4.7% |\n"
             "| RS2-25 | 10.2x | 5.38% |\n")
    assert _row(block, label) == cells


@pytest.mark.parametrize("text, values, out", [
    ("a <!--g:x-->1<!--/g--> b", {"x": "2"}, "a <!--g:x-->2<!--/g--> b"),
    ("a <!--g:x-->1<!--/g--> b", {}, "a <!--g:x-->1<!--/g--> b"),             # unknown: kept
    ("<!--g:x-->1\n2<!--/g-->", {"x": "3"}, "<!--g:x-->3<!--/g-->"),           # across lines
    ("<!--g:x-->1<!--/g--><!--g:y-->2<!--/g-->", {"y": "5"},
     "<!--g:x-->1<!--/g--><!--g:y-->5<!--/g-->"),
])
def test_generated_numbers_replace_their_markers_only(text, values, out):
    assert update_generated(text, values) == out


@pytest.mark.parametrize("a, b, same", [
    (np.arange(6.0), np.arange(6.0), True),
    (np.arange(6.0), np.arange(6), False),                                # dtype
    (np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2), False),  # shape
    (np.arange(12.0).reshape(3, 4)[:, ::2], np.arange(12.0).reshape(3, 4)[:, ::2].copy(), True),
    (np.zeros(3), np.array([0.0, 0.0, 1e-300]), False),
])
def test_data_fingerprints(a, b, same):
    fa, fb = data_fingerprint(a), data_fingerprint(b)
    assert len(fa) == 16 and int(fa, 16) >= 0
    assert (fa == fb) is same


@pytest.mark.parametrize("provenance, seconds", [
    (None, 0.0), ("", 0.0), ("3 cells computed now", 0.0)])
def test_cached_seconds_without_a_cache_line(provenance, seconds):
    assert CellCache.cached_seconds(provenance) == seconds


def test_cache_keys_differ_in_each_of_their_parts():
    base = ("cell", {"C": 1}, 0, "code")
    keys = {CellCache.key(*base), CellCache.key("cell2", {"C": 1}, 0, "code"),
            CellCache.key("cell", {"C": 2}, 0, "code"), CellCache.key("cell", {"C": 1}, 1, "code"),
            CellCache.key("cell", {"C": 1}, 0, "code2")}
    assert len(keys) == 5 and CellCache.key(*base) == CellCache.key(*base)


@pytest.mark.parametrize("obj", [{"a": "x > y"}, {"a": "-->"}, {"n": np.float64(1.5)}])
def test_a_record_never_closes_its_html_comment(obj):
    text = _json_comment(obj)
    assert ">" not in text
    assert json.loads(text) == json.loads(json.dumps(obj, default=lambda o: o.tolist()))


def _results_file():
    payload = {"targets": [{"target": "error", "ours": "5.0 %", "paper": "4.7 %", "met": True},
                           {"bad": 1}],
               "data": {"cells": [{"cell": "x", "ours": 1}]}, "seconds": 12.5, "quick": True,
               "date": "2026-01-01"}
    return "\n".join([
        "# Results", "",
        "<!-- sparsekm:begin ripley -->", "### Ripley", "",
        f"<!-- sparsekm:record {_json_comment(payload)} -->", "body",
        "<!-- sparsekm:end ripley -->", "",
        "<!-- sparsekm:begin franc-pca -->", "### Franc (not run yet)", "",
        "<!-- sparsekm:end franc-pca -->", "",
        "<!-- sparsekm:begin cut -->", "### never ends"])


def test_a_results_file_parses_back_into_its_records():
    records = parse_results(_results_file())
    assert list(records) == ["ripley"]  # placeholders and unterminated blocks skipped
    rec = records["ripley"]
    assert rec.targets == [Target("error", "5.0 %", "4.7 %", True)]
    assert rec.data == {"cells": [{"cell": "x", "ours": 1}]}
    assert (rec.seconds, rec.quick, rec.rerun, rec.date) == (12.5, True, False, "2026-01-01")
    assert rec.block.startswith("<!-- sparsekm:begin ripley -->")
    assert rec.block.endswith("<!-- sparsekm:end ripley -->")


@pytest.mark.parametrize("mark", [True, False])
def test_a_kept_section_is_marked_not_re_run_once(mark):
    rec = parse_results(_results_file())["ripley"]
    once = _kept(rec, mark)
    assert (f"### Ripley {NOT_RERUN}" in once) is mark
    rec.block = once
    assert _kept(rec, mark).count(NOT_RERUN) == int(mark)


# -- targets, published cells and a result's markdown --------------------------------------
@pytest.mark.parametrize("met, verdict", [(True, "yes"), (False, "**no**"), (None, "-"),
                                          ("yes with sweeps", "yes with sweeps")])
def test_target_verdicts(met, verdict):
    assert Target("t", "1", met=met).verdict() == verdict


@pytest.mark.parametrize("kw, expected", [
    (dict(ours=1.5, paper=2.0), {"table": "T", "cell": "c", "ours": 1.5, "paper": 2.0,
                                 "reason": None}),
    (dict(ours=None, paper=2.0), {"table": "T", "cell": "c", "ours": None, "paper": 2.0,
                                  "reason": "not run"}),
    (dict(ours=None, paper=2.0, reason="too slow"),
     {"table": "T", "cell": "c", "ours": None, "paper": 2.0, "reason": "too slow"}),
    (dict(ours=np.float64(1.25), paper=1.0, spread=(np.float32(1.0), 1.5)),
     {"table": "T", "cell": "c", "ours": 1.25, "paper": 1.0, "reason": None,
      "spread": [1.0, 1.5]}),
    (dict(ours=0.9, paper=0.8, higher_is_better=True, note="n", paper_decimals=2),
     {"table": "T", "cell": "c", "ours": 0.9, "paper": 0.8, "reason": None, "note": "n",
      "higher_is_better": True, "paper_decimals": 2}),
])
def test_published_cells(kw, expected):
    from sparsekm.reproduce import published_cell

    cell = published_cell("T", "c", **kw)
    assert cell == expected
    assert type(cell["ours"]) in (float, type(None))  # numpy scalars become Python's
    json.dumps(cell)


@pytest.mark.parametrize("cell, decimals", [
    ({"paper_decimals": 2}, 2), ({"paper_decimals": "3"}, 3), ({}, None),
    ({"table": "no such table", "cell": "x"}, None)])
def test_printed_decimals_from_the_cell(cell, decimals):
    from sparsekm.reproduce import printed_decimals

    assert printed_decimals(cell) == decimals


@pytest.mark.parametrize("table, cell, decimals", [
    ("T1", "banana SVM error", 2), ("T1", "banana vectors", None), ("T2", "x error", None)])
def test_printed_decimals_from_a_tables_suffixes(monkeypatch, table, cell, decimals):
    from sparsekm import reproduce

    monkeypatch.setitem(reproduce.PRINTED_DECIMALS, "T1", {"error": 2})
    assert reproduce.printed_decimals({"table": table, "cell": cell}) == decimals


def _result(**kw):
    from sparsekm.reproduce import Result

    return Result(**{"name": "ripley", "title": "Ripley", "table": "| a |\n|---|", **kw})


@pytest.mark.parametrize("kw, present, absent", [
    ({}, ["## Ripley (`sparsekm reproduce ripley`)", "| a |"], ["Run time", "Figure", "Cells"]),
    (dict(seconds=12.4), ["- Run time: 12 s on this machine."], []),
    (dict(notes=["one", "two"]), ["- one\n- two"], []),
    (dict(figures=["f.png"]), ["- Figure: `f.png`"], []),
    (dict(provenance="3 cells from the cache"), ["- Cells: 3 cells from the cache."], []),
    (dict(intro="Before."), ["`)\n\nBefore.\n\n| a |"], []),
    (dict(targets=[Target("err", "5 %", "4 %", False)]),
     ["| target | ours | paper | met? |", "| err | 5 % | 4 % | **no** |"], []),
])
def test_a_results_markdown(kw, present, absent):
    md = _result(**kw).to_markdown()
    assert md.endswith("\n")
    for text in present:
        assert text in md
    for text in absent:
        assert text not in md


# -- the cell cache stores JSON values and says where cells came from ---------------------
@pytest.mark.parametrize("value, stored", [
    (1, 1), (1.5, 1.5), ("x", "x"), ([1, 2], [1, 2]), ({"a": [1.0, None]}, {"a": [1.0, None]}),
    (np.float64(2.5), 2.5), (np.arange(3), [0, 1, 2]), ((1, "b"), [1, "b"])])
@pytest.mark.parametrize("on_file", [False, True], ids=["memory", "file"])
def test_a_stored_value_comes_back_as_its_json(tmp_path, value, stored, on_file):
    cell = f"formatting-test-{on_file}-{stored!r}"  # a key no other test writes
    cache = CellCache(tmp_path / "c.json" if on_file else None)
    assert cache.get(cell, {"C": 1}, 0, "code") is None
    cache.put(cell, {"C": 1}, 0, "code", value, seconds=1.5)
    assert cache.get(cell, {"C": 1}, 0, "code") == stored
    if on_file:
        again = CellCache(tmp_path / "c.json")
        assert again.get(cell, {"C": 1}, 0, "code") == stored
        (entry,) = json.loads((tmp_path / "c.json").read_text())["entries"].values()
        assert entry["seconds"] == 1.5 and entry["cell"] == cell


@pytest.mark.parametrize("n, total, line", [
    (1, None, "1 of 1 cells computed in this run (0.1 min)"),
    (3, None, "3 of 3 cells computed in this run (0.2 min)"),
    (2, 5, "2 of 5 cells computed in this run (0.1 min); 3 of 5 cells not run (n/a)"),
])
def test_provenance_of_freshly_computed_cells(n, total, line):
    cache = CellCache(None)
    for i in range(n):
        cache.put(f"prov-{n}-{total}-{i}", {}, 0, "code", i, seconds=4.5)
    assert cache.provenance(total) == line


# -- the fidelity scoreboard and the run times, from records ----------------------------------
def _entry(name):
    from types import SimpleNamespace

    return SimpleNamespace(name=name, section=None, module="no.such.module")


def _record(name, cells=(), seconds=None, quick=False, cached=0.0, date=""):
    from sparsekm.reproduce._report import Record

    return Record(name, "", [], {"cells": list(cells)}, seconds, False, quick, cached, date)


def _board_row(cells, quick=False):
    from sparsekm.reproduce._report import scoreboard

    board = scoreboard({"r": _entry("r")}, {"r": _record("r", cells, quick=quick)})
    return next(line for line in board.splitlines() if line.startswith("| T |"))


@pytest.mark.parametrize("ours, paper, extra, counts", [
    (5.04, 5.0, {}, (1, 0, 1, 0, "0 (0)")),
    (4.94, 5.0, {}, (1, 1, 0, 0, "0 (0)")),
    (5.06, 5.0, {}, (1, 0, 0, 1, "1 (0)")),
    (6.2, 5.0, {}, (1, 0, 0, 1, "1 (1)")),
    (5.3, 5.0, {"spread": [4.8, 5.4]}, (1, 0, 1, 0, "0 (0)")),
    (0.5, 0.8, {"higher_is_better": True}, (1, 0, 0, 1, "1 (1)")),
    (None, 5.0, {"reason": "too slow"}, (0, 0, 0, 0, "0 (0)")),
])
def test_scoreboard_counts_one_cell_by_its_verdict(ours, paper, extra, counts):
    n_done, better, tie, worse, worse_s = counts
    assert worse_s.startswith(str(worse))
    cell = {"table": "T", "cell": "banana error", "ours": ours, "paper": paper, **extra}
    row = [c.strip() for c in _board_row([cell]).strip("|").split("|")]
    # | table | cells | reproduced | better | tie | worse (much worse) | ...
    assert row[1:6] == ["1", str(n_done), str(better), str(tie), worse_s]


def test_scoreboard_names_the_worst_cell_lists_much_worse_and_missing_cells():
    from sparsekm.reproduce._report import scoreboard

    cells = [{"table": "T", "cell": "a", "ours": 5.0, "paper": 5.0},
             {"table": "T", "cell": "b", "ours": 6.5, "paper": 5.0, "note": "noisy data"},
             {"table": "T", "cell": "c", "ours": 5.8, "paper": 5.0},
             {"table": "T", "cell": "d", "ours": None, "paper": 5.0, "reason": "too slow"},
             {"table": "T", "cell": "e", "ours": 1.0, "paper": None}]  # unpublished: ignored
    board = scoreboard({"r": _entry("r")}, {"r": _record("r", cells, quick=True)})
    assert "| T | 4 | 3 | 0 | 1 | 2 (1) | b: 6.5 vs 5 | `r` (--quick) |" in board
    assert "- T, 1 cell: b (6.5 vs 5). noisy data" in board
    assert "- T, 1 cell not reproduced: too slow. Cells: d." in board


@pytest.mark.parametrize("records", [{}, {"r": None}])
def test_no_published_cells_no_scoreboard(records):
    from sparsekm.reproduce._report import scoreboard

    recs = {k: _record(k) for k in records}
    assert scoreboard({"r": _entry("r")}, recs) == ""


@pytest.mark.parametrize("kw, row", [
    (dict(seconds=30.0), "| `r` | 30 s | 30 s | - | - |"),
    (dict(seconds=30.0, cached=150.0, date="2026-01-02"),
     "| `r` | 180 s (3.0 min) | 30 s | 150 s (2.5 min) | 2026-01-02 |"),
    (dict(seconds=5.0, quick=True), "| `r` (--quick) | 5 s | 5 s | - | - |"),
    (dict(seconds=None), "| `r` | not run | | | |"),
])
def test_run_times_row_of_a_reproduction(kw, row):
    from sparsekm.reproduce._report import run_times

    text = run_times({"r": _entry("r")}, {"r": _record("r", **kw)})
    assert row in text.splitlines()


def test_run_times_total_counts_only_recorded_times():
    from sparsekm.reproduce._report import run_times

    reg = {n: _entry(n) for n in ("a", "b", "c")}
    recs = {"a": _record("a", seconds=100.0, cached=20.0), "b": _record("b", seconds=10.0)}
    last = run_times(reg, recs).splitlines()[-1]
    assert last == "| all 2 of 3 with a recorded time | **130 s (2.2 min)** | | | |"


# -- the numbers the prose quotes, read from the results' tables ------------------------------
_WU = {"USPS": (4.9, 4.4), "Banana": (10.6, 10.8), "Breast Cancer": (27.0, 26.0),
       "Titanic": (22.4, 22.4), "Waveform": (10.2, 10.0), "German": (24.0, 23.5),
       "Image": (3.5, 3.0)}  # (SLMC at 10 %, SVM)


def _prose_records():
    rs = ("| SV (original SVM; paper SV-254) | 254 | 1x | 4.4% | 4.0% | - |\n"
          "| RS2-25 | 25 | 10.2x | 5.38% | 5.0% | - |\n"
          "| RS2-25 (10.2x) | 4.7% | 5.38% (n = 25) | 4.73% (n = 50) |\n")
    sel = "| RSS-250 (exact greedy) | 250 | 1.0x | 4.9% | 5.0% | - |\n"
    cells = [c for col, (slmc, svm) in _WU.items()
             for c in ({"cell": f"{col} 10% SLMC", "ours": slmc},
                       {"cell": f"{col} SVM error", "ours": svm})]
    rec = _record("wu-table1", cells)
    from sparsekm.reproduce._report import Record

    return {"usps-rs-construct": Record("usps-rs-construct", rs),
            "usps-rs-select-kpca": Record("usps-rs-select-kpca", sel), "wu-table1": rec}


@pytest.mark.parametrize("name, text", [
    ("usps_svm_error", "4.40 %"), ("rs2_25_factor", "10.2×"), ("rs2_25_error", "5.38 %"),
    ("rs2_equal_factor", "10×"), ("rs2_equal_n", "50"), ("rs2_equal_error", "4.73 %"),
    ("exact_greedy_factor", "1×"), ("exact_greedy_error", "4.90 %"),
    ("slmc10_max_gap", "1.0"),
    ("slmc10_gaps", "USPS +0.5, Banana -0.2, Breast Cancer +1.0, Titanic +0.0, Waveform +0.2, "
                    "German +0.5, Image +0.5"),
])
def test_generated_values_from_the_results_tables(name, text):
    from sparsekm.reproduce._prose import generated_values

    assert generated_values(_prose_records())[name] == text


@pytest.mark.parametrize("missing, gone", [
    ("usps-rs-construct", {"usps_svm_error", "rs2_25_factor", "rs2_equal_n"}),
    ("usps-rs-select-kpca", {"exact_greedy_factor", "exact_greedy_error"}),
    ("wu-table1", {"slmc10_max_gap", "slmc10_gaps"}),
])
def test_a_missing_source_gives_no_value(missing, gone):
    from sparsekm.reproduce._prose import generated_values

    recs = _prose_records()
    del recs[missing]
    values = generated_values(recs)
    assert not gone & set(values) and values  # the other sources still give theirs


# -- a fresh result rendered as its block, and read back ------------------------------------
@pytest.mark.parametrize("fig, results_dir, link", [
    ("docs/figures/x.png", "docs", "figures/x.png"),
    ("docs/x.png", "docs", "x.png"),
    ("elsewhere/figs/x.png", "docs", "figs/x.png"),        # outside: folder/file, never ../
    ("/abs/other/checkout/figures/y.png", "docs", "figures/y.png"),
])
def test_figure_links_are_relative_to_the_results_file(fig, results_dir, link):
    from sparsekm.reproduce._report import figure_link

    assert figure_link(fig, results_dir) == link


_RESULT_CASES = {
    "plain": dict(),
    "seconds": dict(seconds=42.0),
    "targets": dict(targets=[Target("error", "5 %", "4.7 %", True),
                             Target("vectors", "10", "12", "yes with sweeps")]),
    "data": dict(data={"cells": [{"table": "T", "cell": "c", "ours": 1.5, "paper": 2.0}]}),
    "cached": dict(seconds=3.0, provenance="2 of 2 cells from the cache (computed 2026-01-01 "
                   "with code key k under BLAS kernel Haswell and numpy SIMD AVX2; 1.5 min of "
                   "compute then)"),
    "notes+figures": dict(notes=["a note"], figures=["figures/f.png"], intro="# Intro"),
}


@pytest.mark.parametrize("quick", [False, True])
@pytest.mark.parametrize("case", sorted(_RESULT_CASES))
def test_a_rendered_result_parses_back_to_the_same_record(case, quick):
    from sparsekm.reproduce._report import record_from_result

    res = _result(**_RESULT_CASES[case])
    fresh = record_from_result(res, Context(quick=quick), "docs", date="2026-02-03")
    back = parse_results(f"# Results\n\n{fresh.block}\n")["ripley"]
    assert back.block == fresh.block
    assert back.targets == fresh.targets == res.targets
    assert back.data == fresh.data == res.data
    assert (back.seconds, back.quick, back.date) == (res.seconds, quick, "2026-02-03")
    assert back.cached_seconds == fresh.cached_seconds == (90.0 if case == "cached" else 0.0)
    heading = fresh.block.splitlines()[1]
    assert heading.startswith("### Ripley") and ("--quick" in heading) is quick


@pytest.mark.parametrize("case, line", [
    ("plain", "Command: `sparsekm reproduce ripley` · run time unknown · 2026-02-03"),
    ("seconds", "Command: `sparsekm reproduce ripley` · run time 42 s · 2026-02-03"),
    ("cached", "Command: `sparsekm reproduce ripley` · 2 of 2 cells from the cache"),
])
def test_a_blocks_command_line_says_how_long_and_when(case, line):
    from sparsekm.reproduce._report import record_from_result

    fresh = record_from_result(_result(**_RESULT_CASES[case]), Context(), "docs",
                               date="2026-02-03")
    assert fresh.block.splitlines()[3].startswith(line)


def test_a_blocks_intro_headings_are_demoted_and_figures_linked():
    from sparsekm.reproduce._report import record_from_result

    block = record_from_result(_result(**_RESULT_CASES["notes+figures"]), Context(), "docs",
                               date="2026-02-03").block
    assert "#### Intro" in block and "\n# Intro" not in block
    assert "- a note" in block and "![f](figures/f.png)" in block


# -- the whole results file ------------------------------------------------------------------
def _registry():
    from sparsekm.reproduce import Section
    from sparsekm.reproduce import _Entry as Entry

    first = Section("First paper", intro="About the first.", order=2,
                    outro=lambda recs: f"outro of {sorted(recs)}")
    second = Section("Second paper", order=1,
                     targets=lambda: [Target("speed", "2x", "-", True)])
    return {"a": Entry("a", "Table A", None, section=first),
            "b": Entry("b", "Table B", None, slow=True, section=first),
            "c": Entry("c", "Table C", None, section=second)}


def _fresh(name, **kw):
    from sparsekm.reproduce._report import record_from_result

    res = _result(name=name, title=f"Title {name}", **kw)
    return record_from_result(res, Context(), "docs", date="2026-02-03")


def test_sections_in_order_with_contents_placeholders_and_outros():
    from sparsekm.reproduce._report import render_results

    text = render_results(_registry(), {"a": _fresh("a", seconds=2.0)}, run_info="Last run: x")
    assert text.index("## Second paper") < text.index("## First paper")
    assert "- Second paper: `c`\n- First paper: `a`, `b` (slow)" in text
    assert "Last run: x" in text and text.endswith("\n")
    assert "### Table B (not run yet)" in text and "### Title a" in text
    assert "outro of ['a']" in text and "About the first." in text
    assert "| speed | 2x | - | yes | benchmark |" in text


@pytest.mark.parametrize("mark_kept", [True, False])
def test_rewriting_keeps_the_sections_not_re_run(tmp_path, mark_kept):
    from sparsekm.reproduce._report import write_results

    path = tmp_path / "results.md"
    targets = [Target("err", "5 %", "4 %", True)]
    write_results(path, _registry(), {"a": _fresh("a", seconds=2.0, targets=targets)},
                  run_info="Last run: first")
    write_results(path, _registry(), {"c": _fresh("c")}, mark_kept=mark_kept)
    text = path.read_text()
    assert "Last run: first" in text  # kept from the previous file
    assert ("### Title a (not re-run)" in text) is mark_kept
    assert ("| err | 5 % | 4 % | yes | `a` (not re-run) |" in text) is mark_kept
    records = parse_results(text)
    assert sorted(records) == ["a", "c"] and records["a"].targets == targets
    assert not list(tmp_path.glob("*.tmp"))


def test_the_docs_index_numbers_follow_the_results(tmp_path):
    from sparsekm.reproduce._report import update_docs_prose

    page = tmp_path / "index.md"
    assert update_docs_prose(page, _prose_records()) is False  # no page: nothing
    page.write_text("SVM <!--g:usps_svm_error-->9 %<!--/g--> and <!--g:zzz-->?<!--/g-->\n")
    assert update_docs_prose(page, _prose_records()) is True
    assert page.read_text() == "SVM <!--g:usps_svm_error-->4.40 %<!--/g--> and " \
                               "<!--g:zzz-->?<!--/g-->\n"
    assert update_docs_prose(page, _prose_records()) is False  # unchanged the second time


@pytest.mark.parametrize("arrays, other", [
    ((np.zeros(2), np.ones(2)), (np.ones(2), np.zeros(2))),   # order
    ((np.zeros(2),), (np.zeros(2), np.zeros(2))),             # count
    ((np.zeros(4),), (np.zeros(2), np.zeros(2))),             # split
])
def test_a_fingerprint_sees_the_order_count_and_split_of_arrays(arrays, other):
    assert data_fingerprint(*arrays) != data_fingerprint(*other)


_BASE_SRC = 'def f(x):\n    """Doc."""\n    y = x + 1\n    return y * 2\n'


@pytest.mark.parametrize("variant, same", [
    ('def f(x):\n    """Other doc."""\n    y = x + 1\n    return y * 2\n', True),
    ('def f(x):\n    y = x + 1  # a comment\n    return y * 2\n', True),
    ('def f(x):\n\n    y = (x\n         + 1)\n    return y*2\n', True),
    ('def f(x):\n    """Doc."""\n    y = x + 2\n    return y * 2\n', False),
    ('def f(x):\n    """Doc."""\n    z = x + 1\n    return z * 2\n', False),
], ids=["docstring", "comment", "layout", "constant", "name"])
def test_the_code_key_reads_code_not_docs_comments_or_layout(tmp_path, monkeypatch, variant,
                                                              same):
    import importlib.util

    from sparsekm.reproduce._cache import _read_normalised

    def load(src, name):
        (tmp_path / f"{name}.py").write_text(src)
        spec = importlib.util.spec_from_file_location(name, tmp_path / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.f

    base = load(_BASE_SRC, f"codekey_base_{abs(hash(variant))}")
    other = load(variant, f"codekey_variant_{abs(hash(variant))}")
    assert (_read_normalised(base) == _read_normalised(other)) is same


# -- the reproductions' own small helpers, on known inputs --------------------------------
@pytest.mark.parametrize("Z, T, msd", [
    ([[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, 1.0]], 0.0),
    ([[0.0, 0.0], [1.0, 1.0]], [[3.0, 4.0], [1.0, 2.0]], 13.0),   # (25 + 1) / 2
])
def test_mean_squared_distance(Z, T, msd):
    from sparsekm.reproduce.denoising import _msd

    assert _msd(Z, T) == pytest.approx(msd)


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_speckle_noise_flips_a_fraction_p_of_pixels_to_black_or_white(p):
    from sparsekm.reproduce.denoising import add_speckle_noise

    X = np.full((200, 100), 0.25)
    noisy = add_speckle_noise(X, p, np.random.default_rng(0))
    changed = noisy != 0.25
    assert set(np.unique(noisy[changed])) <= {-1.0, 1.0}
    # binomial: 5 standard deviations of 20,000 draws
    assert abs(changed.mean() - p) <= 5 * np.sqrt(p * (1 - p) / X.size) + 1e-12


@pytest.mark.parametrize("sigma", [0.0, 0.5])
def test_gaussian_noise_has_the_asked_standard_deviation(sigma):
    from sparsekm.reproduce.denoising import add_gaussian_noise

    X = np.ones((300, 100))
    noise = add_gaussian_noise(X, sigma, np.random.default_rng(1)) - X
    assert noise.std() == pytest.approx(sigma, abs=5 * sigma / np.sqrt(2 * X.size) + 1e-15)


@pytest.mark.parametrize("name", ["half circle", "square"])
def test_clean_curve_points_lie_on_their_curve(name):
    from sparsekm.reproduce.denoising import _curve_samples, _half_circle, _square

    rng = np.random.default_rng(2)
    for P in (_curve_samples(name, 400), (_half_circle if name == "half circle" else _square)(
            300, 0.0, rng)):
        if name == "half circle":
            np.testing.assert_allclose(np.hypot(P[:, 0], P[:, 1]), 1.0, rtol=1e-12)
            assert np.all(P[:, 1] >= -1e-12)
        else:
            np.testing.assert_allclose(np.abs(P).max(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("shift", [0.0, 0.1, 0.3])
def test_chamfer_distance_of_a_shifted_line_is_the_shift(shift):
    from sparsekm.reproduce.denoising import _chamfer

    C = np.c_[np.linspace(0, 1, 101), np.zeros(101)]
    assert _chamfer(C + [0.0, shift], C) == pytest.approx(shift, abs=1e-12)


def test_chamfer_penalises_points_that_cover_only_part_of_the_curve():
    from sparsekm.reproduce.denoising import _chamfer

    C = np.c_[np.linspace(0, 1, 101), np.zeros(101)]
    assert _chamfer(C[:1], C) == pytest.approx(0.25, abs=1e-12)  # (0 + mean x) / 2


@pytest.mark.parametrize("x, text", [(0, "0"), (4200, "4.2e3"), (1, "1e0"), (123456, "1.2e5"),
                                     (0.05, "5e-2")])
def test_kernel_evaluation_counts_as_mantissa_e_exponent(x, text):
    from sparsekm.reproduce.franc import _fmt_count

    assert _fmt_count(x) == text


@pytest.mark.parametrize("f, y, err", [
    ([1.0, -1.0, 2.0, -0.5], [1, -1, 1, -1], 0.0),
    ([1.0, -1.0, 2.0, -0.5], [-1, -1, 1, 1], 0.5),
    ([0.0, 0.0], [1, -1], 0.5),                      # f = 0 is the negative class
])
def test_franc_error_rate_of_decision_values(f, y, err):
    from sparsekm.reproduce.franc import _err

    assert _err(np.array(f), np.array(y)) == err


@pytest.mark.parametrize("x, text", [(None, "n/a"), ("x", "x"), (float("inf"), "inf"),
                                     (1234.5, "1.23e+03"), (0.5, "0.5"), (2 / 3, "0.667")])
def test_randomized_numbers(x, text):
    from sparsekm.reproduce.randomized import _fmt

    assert _fmt(x) == text


@pytest.mark.parametrize("vals, means, spread", [
    ([{"_seed": 0, "error": 0.1}, {"_seed": 0, "error": 0.2}, {"_seed": 1, "error": 0.3}],
     {0: 15.0, 1: 30.0}, (15.0, 30.0)),
    ([{"error": 0.1}, {"error": 0.3}], {0: 20.0}, None),          # one seed: no spread
    ([{"_seed": 2, "error": 0.05}, {"_seed": 1, "error": 0.15}], {1: 15.0, 2: 5.0},
     (5.0, 15.0)),
])
def test_seed_means_and_their_spread(vals, means, spread):
    from sparsekm.reproduce.wu2006 import _spread, seed_means

    assert seed_means(vals) == pytest.approx(means)
    assert list(seed_means(vals)) == sorted(means)
    assert _spread(vals) == (None if spread is None else pytest.approx(spread))
    assert _spread(None) is None
