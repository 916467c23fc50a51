"""Generated run times and figure links of docs/results.md (issue 23, item 6)."""

import os

from sparsekm.reproduce import Context, Result
from sparsekm.reproduce import _cache as cache_mod
from sparsekm.reproduce._cache import CellCache
from sparsekm.reproduce._report import figure_link, parse_results, record_from_result, run_times


def test_figure_links_are_relative_to_the_results_folder(tmp_path):
    docs = tmp_path / "wt" / "docs"
    assert figure_link(docs / "figures" / "a.png", docs) == "figures/a.png"
    # a figure written into another checkout is linked where it lies beside the results
    # file, never as ../../main/docs/figures/a.png
    other = tmp_path / "main" / "docs" / "figures" / "a.png"
    assert figure_link(other, docs) == "figures/a.png"
    # symbolic links are not resolved: docs/figures -> another checkout stays figures/
    other.parent.mkdir(parents=True)
    docs.mkdir(parents=True)
    os.symlink(other.parent, docs / "figures")
    assert figure_link(docs / "figures" / "a.png", docs) == "figures/a.png"


def test_cached_seconds_inverts_the_provenance_line(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    path = tmp_path / "c.json"
    CellCache(path).put("a", {}, 0, "k", {"e": 1}, seconds=90.0)
    CellCache(path).put("b", {}, 0, "k", {"e": 2}, seconds=30.0)
    cache_mod._FRESH.clear()
    c = CellCache(path)
    c.get("a", {}, 0, "k")
    c.get("b", {}, 0, "k")
    c.put("c", {}, 0, "k", {"e": 3}, seconds=600.0)  # computed in this run: not "cached"
    assert CellCache.cached_seconds(c.provenance(total=3)) == 120.0
    assert CellCache.cached_seconds("") == 0.0
    assert CellCache.cached_seconds("3 of 3 cells computed in this run (1.0 min)") == 0.0


def test_run_times_table_adds_the_cached_compute_time(tmp_path):
    class Entry:
        def __init__(self, name):
            self.name = name

    registry = {n: Entry(n) for n in ("fast", "cached", "never")}
    ctx = Context(out_dir=tmp_path)
    recs = {
        "fast": record_from_result(Result("fast", "F", "| a |", seconds=12.0), ctx, tmp_path,
                                   date="2026-11-20"),
        "cached": record_from_result(
            Result("cached", "C", "| a |", seconds=3.0,
                   provenance="40 of 40 cells from the cache (computed 2026-11-23 00:00:00Z "
                              "with code key abc under BLAS kernel SkylakeX; 20.0 min of "
                              "compute then)"), ctx, tmp_path, date="2026-11-24"),
    }
    text = run_times(registry, recs)
    assert "| `fast` | 12 s | 12 s | - | 2026-11-20 |" in text
    assert "| `cached` | 1203 s (20.1 min) | 3 s | 1200 s (20.0 min) | 2026-11-24 |" in text
    assert "| `never` | not run |" in text
    assert "all 2 of 3 with a recorded time | **1215 s (20.2 min)**" in text
    # the same numbers come back from the rendered blocks (kept sections of a later run)
    parsed = parse_results("\n".join(r.block for r in recs.values()))
    assert run_times(registry, parsed) == text
