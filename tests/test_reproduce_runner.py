"""The reproduction runner: `sparsekm reproduce all` writes the results file.

Two tiny fake reproductions (one slow) stand in for the real ones, so these
tests need no data folder and run in well under a second.
"""

import pytest

import sparsekm.reproduce as rep
from sparsekm.cli import main
from sparsekm.reproduce import Result, Section, Target, _Entry
from sparsekm.reproduce._report import NOT_RERUN, parse_results

from .conftest import requires_ida

FAST_SECTION = Section(title="Fast paper (issue 98)", intro="Setting of the fast paper.",
                       order=1)
SLOW_SECTION = Section(title="Slow paper (issue 99)", intro="Setting of the slow paper.",
                       outro=lambda recs: "Summary over " + ", ".join(
                           f"{n}={r.data.get('value')}" for n, r in sorted(recs.items())),
                       targets=lambda: [Target("benchmark speed", "3x", "-", True)], order=2)


@pytest.fixture
def fake_registry(monkeypatch):
    calls = {"fast": 0, "slow": 0, "value": 1.5}

    def fast(ctx):
        calls["fast"] += 1
        fig = ctx.out_dir / "fast.png"
        fig.write_bytes(b"png")
        return Result("fast", "Fast table", f"| a | b |\n|---|---|\n| {calls['value']} | 2 |",
                      notes=["a note"], figures=[str(fig)], intro="Intro of the fast table.",
                      targets=[Target("error <= 2 %", f"{calls['value']} %", "1.9 %",
                                      isinstance(calls["value"], float)
                                      and calls["value"] <= 2)])

    def slow(ctx):
        calls["slow"] += 1
        return Result("slow", "Slow table", "### (a) part\n\n| x |\n|---|\n| 7 |",
                      targets=[Target("ratio >= 1.6", "1.4", "1.6", False)],
                      data={"value": 7})

    registry = {"fast": _Entry("fast", "a fast table", fast, False, section=FAST_SECTION),
                "slow": _Entry("slow", "a slow table", slow, True, section=SLOW_SECTION)}
    monkeypatch.setattr(rep, "discover", lambda: registry)
    return calls


def _run(tmp_path, *extra):
    results = tmp_path / "docs" / "results.md"
    argv = ["reproduce", *extra, "--quiet", "--out", str(tmp_path / "docs" / "figures"),
            "--write-results", str(results)]
    assert main(argv) == 0
    return results.read_text()


def test_all_writes_every_section_with_targets(fake_registry, tmp_path, capsys):
    text = _run(tmp_path, "all")
    assert fake_registry == {"fast": 1, "slow": 1, "value": 1.5}
    # sections in order, with their intro from the module's Section
    assert text.index("## Fast paper (issue 98)") < text.index("## Slow paper (issue 99)")
    assert "Setting of the fast paper." in text and "Setting of the slow paper." in text
    assert "Intro of the fast table." in text and "- a note" in text
    # summary tables: ours beside the paper's, verdict, and where the row came from
    assert "| error <= 2 % | 1.5 % | 1.9 % | yes | `fast` |" in text
    assert "| ratio >= 1.6 | 1.4 | 1.6 | **no** | `slow` |" in text
    assert "| benchmark speed | 3x | - | yes | benchmark |" in text
    assert "Summary over slow=7" in text  # section outro computed from the records' data
    assert "\n#### (a) part\n" in text  # sub-headings sit below the result's ### heading
    # command and run time per section; figure linked relative to the results file
    assert "Command: `sparsekm reproduce fast` · run time" in text
    assert "![fast](figures/fast.png)" in text
    assert "### Fast table (not re-run)" not in text and "### Slow table (not re-run)" not in text
    out = capsys.readouterr().out
    assert "sparsekm reproduce: 2 reproduction(s) in" in out


def test_skip_slow_keeps_the_previous_section(fake_registry, tmp_path):
    _run(tmp_path, "all")
    fake_registry["value"] = 2.5
    text = _run(tmp_path, "all", "--skip-slow")
    assert fake_registry["fast"] == 2 and fake_registry["slow"] == 1  # slow not re-run
    assert "| error <= 2 % | 2.5 % | 1.9 % | **no** | `fast` |" in text  # fast re-run
    assert "### Slow table (not re-run)" in text
    # the kept section's targets and data still feed the summaries
    assert f"| ratio >= 1.6 | 1.4 | 1.6 | **no** | `slow` {NOT_RERUN} |" in text
    assert "Summary over slow=7" in text
    # keeping twice does not stack the mark; the fresh run removes it again
    text = _run(tmp_path, "all", "--skip-slow")
    assert text.count(NOT_RERUN + " " + NOT_RERUN) == 0
    assert text.count("### Slow table (not re-run)") == 1
    text = _run(tmp_path, "all")
    assert "### Slow table\n" in text and NOT_RERUN not in text.split("## Fast paper")[1]


def test_a_run_of_some_names_keeps_the_others_unmarked(fake_registry, tmp_path):
    _run(tmp_path, "all")
    text = _run(tmp_path, "fast")
    assert fake_registry["fast"] == 2 and fake_registry["slow"] == 1
    assert "### Slow table\n" in text and f"`slow` {NOT_RERUN}" not in text


def test_skip_slow_without_previous_file_leaves_placeholder(fake_registry, tmp_path):
    text = _run(tmp_path, "all", "--skip-slow")
    assert fake_registry["slow"] == 0
    assert "### a slow table (not run yet)" in text
    assert "Run `sparsekm reproduce slow` to fill this section." in text


def test_running_one_name_keeps_the_others(fake_registry, tmp_path):
    _run(tmp_path, "all")
    text = _run(tmp_path, "fast")
    assert fake_registry["slow"] == 1
    blocks = parse_results(text)
    assert set(blocks) == {"fast", "slow"}
    assert blocks["slow"].targets == [Target("ratio >= 1.6", "1.4", "1.6", False)]
    assert blocks["slow"].data == {"value": 7}
    assert isinstance(blocks["fast"].seconds, float)  # the run time is recorded (a field)


def test_quick_runs_are_labelled(fake_registry, tmp_path):
    text = _run(tmp_path, "all", "--quick")
    assert "Command: `sparsekm reproduce fast --quick`" in text
    assert "not comparable to the paper" in text
    assert parse_results(text)["fast"].quick


def test_record_survives_characters_that_close_comments(fake_registry, tmp_path):
    fake_registry["value"] = "--> | x"
    text = _run(tmp_path, "fast")
    rec = parse_results(text)["fast"]
    assert rec.targets[0].ours == "--> | x %"
    assert "| --> \\| x % |" in text  # escaped pipe keeps the summary table intact


def test_write_results_dash_writes_nothing(fake_registry, tmp_path):
    assert main(["reproduce", "fast", "--quiet", "--out", str(tmp_path),
                 "--write-results", "-"]) == 0
    assert not (tmp_path / "docs").exists()


def test_every_real_reproduction_has_a_section():
    registry = rep.discover()
    assert len(registry) >= 10
    for entry in registry.values():
        sec = rep.section_of(entry)
        assert sec is not None, entry.name
        assert sec.title and sec.intro, entry.name


def test_placeholders_are_not_records(fake_registry, tmp_path):
    text = _run(tmp_path, "all", "--skip-slow")
    assert set(parse_results(text)) == {"fast"}


def test_render_only_keeps_blocks_unmarked(fake_registry, tmp_path):
    _run(tmp_path, "all")
    text = _run(tmp_path, "all", "--render-only")
    assert fake_registry["fast"] == 1 and fake_registry["slow"] == 1  # nothing re-run
    assert NOT_RERUN + " |" not in text and "### Slow table\n" in text
    assert "re-ran all reproductions" in text  # the previous "Last run" line is kept


def test_scoreboard_counts_published_cells(monkeypatch, tmp_path):
    from sparsekm.reproduce import published_cell

    def cells_run(ctx):
        cells = [published_cell("Paper A, Table 1", "row 1", 4.0, 4.5),
                 published_cell("Paper A, Table 1", "row 2", 6.0, 5.0),
                 published_cell("Paper A, Table 1", "row 3", 3.0, 2.0),
                 published_cell("Paper A, Table 1", "row 4", None, 1.0, "data not available"),
                 published_cell("Paper A, Table 2", "cell x", 1.0, 1.0)]
        return Result("cells", "Cells table", "| a |\n|---|\n| 1 |", data={"cells": cells},
                      provenance="3 of 4 cells from the cache (computed 2026-01-01 with code "
                                 "key abc)")

    registry = {"cells": _Entry("cells", "a table with cells", cells_run, False,
                                section=FAST_SECTION)}
    monkeypatch.setattr(rep, "discover", lambda: registry)
    text = _run(tmp_path, "all")
    assert "## Fidelity scoreboard" in text
    assert text.index("## Fidelity scoreboard") < text.index("## Fast paper (issue 98)")
    # 4 published, 3 reproduced: 1 better, 0 tied, 2 worse (1 much worse: row 3, +50 %);
    # worst: row 3 (+50 %) beats row 2 (+20 %)
    line1 = "| Paper A, Table 1 | 4 | 3 | 1 | 0 | 2 (1) | row 3: 3 vs 2 | `cells` |"
    assert line1 in text
    assert "| Paper A, Table 2 | 1 | 1 | 0 | 1 | 0 (0) | cell x: 1 vs 1 | `cells` |" in text
    assert "- Paper A, Table 1, 1 cell: row 3 (3 vs 2). no explanation recorded" in text
    assert "Paper A, Table 1, 1 cell not reproduced: data not available. Cells: row 4." in text
    # the run-time line says where the cells come from
    assert "3 of 4 cells from the cache (computed 2026-01-01 with code key abc)" in text
    # the scoreboard survives a re-render from the hidden records alone
    results = tmp_path / "docs" / "results.md"
    assert main(["reproduce", "all", "--render-only", "--quiet", "--write-results",
                 str(results)]) == 0
    assert line1 in results.read_text()


def test_classify_ties_at_the_papers_precision():
    """A cell equal to the paper only after rounding is a tie, not "at least as good"."""
    from sparsekm.reproduce._report import classify

    def v(ours, paper, **kw):
        return classify({"ours": ours, "paper": paper, **kw})

    assert v(4.73, 4.7) == "tie" and v(4.66, 4.7) == "tie"  # 4.7 as printed
    assert v(4.64, 4.7) == "better" and v(4.76, 4.7) == "worse"
    assert v(13, 13) == "tie" and v(12, 13) == "better" and v(14, 13) == "worse"
    assert v(13.4, 13) == "tie"  # an integer paper cell: ours rounded to an integer
    assert v(20.694, 20.69) == "tie" and v(20.68, 20.69) == "better"  # two decimals printed
    assert v(10.04, 10.0) == "tie" and v(9.94, 10.0) == "better"  # "10.0": one decimal
    # higher is better (denoising ratios)
    assert v(1.6, 1.5, higher_is_better=True) == "better"
    assert v(1.4, 1.5, higher_is_better=True) == "worse"
    assert v(1.504, 1.5, higher_is_better=True) == "tie"


def test_classify_judges_a_seeded_cell_by_its_spread():
    from sparsekm.reproduce._report import classify

    def v(lo, hi, paper):
        return classify({"ours": (lo + hi) / 2, "paper": paper, "spread": [lo, hi]})

    assert v(14.9, 19.3, 16.5) == "tie"    # the paper inside the per-seed range
    assert v(16.54, 19.3, 16.5) == "tie"   # 16.54 rounds to the paper's 16.5
    assert v(16.6, 19.3, 16.5) == "worse"  # every seed's mean worse
    assert v(13.0, 16.4, 16.5) == "better"


def test_much_worse_is_one_point_or_twenty_percent():
    from sparsekm.reproduce._report import much_worse

    def m(ours, paper, name="x error"):
        return much_worse({"ours": ours, "paper": paper, "cell": name})

    assert m(27.9, 26.8)              # 1.1 points (a cell in %)
    assert not m(27.8, 26.8)          # 1.0 point, 3.7 %
    assert m(5.9, 4.9)                # 1.0 point but 20.4 % relative
    assert not m(15, 13, "RS-10 digit 4")  # a count: 15.4 % relative, points do not apply
    assert m(16, 13, "RS-10 digit 4")      # 23 %
    assert not m(16.6, 16.5)          # worse, not much worse
    assert not much_worse({"ours": 19.3, "paper": 16.5, "cell": "x error",
                           "spread": [14.9, 19.3]})  # within the seed spread: a tie


def test_cache_flags_are_validated(tmp_path, capsys):
    out = ["--quiet", "--out", str(tmp_path), "--write-results", "-"]
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "wu-table1", "--no-cache", "--cached-only", *out])
    assert exc.value.code == 2 and "exclude each other" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "wu-table1", "--datasets", "banana,nope", *out])
    assert exc.value.code == 2 and "unknown data set(s) for --datasets: nope" in \
        capsys.readouterr().err


@requires_ida
@pytest.mark.data
def test_cached_only_computes_nothing(tmp_path, capsys):
    # an empty cache: every cell is "n/a" and nothing is computed
    cache = tmp_path / "cache.json"
    assert main(["reproduce", "wu-table2", "--cached-only", "--datasets", "banana", "--quiet",
                 "--cache", str(cache), "--out", str(tmp_path), "--write-results", "-"]) == 0
    text = capsys.readouterr().out
    assert "n/a / 16.5" in text and "from the cache" not in text
    assert "120 of 120 cells not run (n/a)" in text  # 4 cells x 10 splits x 3 seeds
    assert not cache.exists()


def test_classify_uses_the_decimals_the_paper_prints():
    """Issue 38: the paper prints Ringnorm's SVM test error as 1.60; stored as the float
    1.6 it lost a decimal, and our 1.63 counted as a tie (1.6 = 1.6)."""
    from sparsekm.reproduce import published_cell
    from sparsekm.reproduce._report import classify
    from sparsekm.reproduce.franc import IDA_TABLE

    cell = {"table": IDA_TABLE, "cell": "Ringnorm SVM TestErr %", "ours": 1.63, "paper": 1.6}
    assert classify(cell) == "worse"  # an old record: decimals from the table's registry
    assert classify({**cell, "ours": 1.604}) == "tie"
    assert classify({**cell, "ours": 1.57}) == "better"
    rec = published_cell(IDA_TABLE, "Ringnorm SVM TestErr %", 1.63, 1.6)
    assert rec["paper_decimals"] == 2 and classify(rec) == "worse"
    assert published_cell(IDA_TABLE, "Ringnorm SVM n_SV", 212.6, 218)["paper_decimals"] == 0
    # an explicit value wins; other tables keep the float's own decimals
    assert classify({"ours": 1.63, "paper": 1.6, "paper_decimals": 1}) == "tie"
    assert classify({"table": "another", "cell": "x TestErr %", "ours": 1.63,
                     "paper": 1.6}) == "tie"
