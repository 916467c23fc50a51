"""Reproduction texts tell a user without the data how to get it (issue 18)."""

import pytest

from sparsekm._fetch import FETCH_HINT
from sparsekm.reproduce import denoising, franc, randomized


@pytest.mark.parametrize("module", [denoising, franc, randomized])
def test_intro_names_data_fetch_and_data_option(module):
    intro = module.SECTION.intro
    assert "sparsekm data fetch" in intro and "--data" in intro


def test_data_not_found_hint_names_fetch_and_data_option():
    assert "sparsekm data fetch" in FETCH_HINT and "--data" in FETCH_HINT


# -- issue 38: numbers in the docs' prose are generated from the results ---------------
def test_docs_index_guide_numbers_are_the_results():
    from pathlib import Path

    from sparsekm.reproduce._prose import MARKER, generated_values
    from sparsekm.reproduce._report import parse_results

    docs = Path(__file__).resolve().parents[1] / "docs"
    values = generated_values(parse_results((docs / "results.md").read_text(encoding="utf-8")))
    found = MARKER.findall((docs / "index.md").read_text(encoding="utf-8"))
    assert {name for name, _ in found} >= {"rs2_25_error", "exact_greedy_error",
                                           "slmc10_max_gap"}
    for name, text in found:
        assert values.get(name) == text, (name, text, values.get(name))
    # and they are today's numbers (the review's stale rows: 4.98 %, 4.38 %, "within 0.5")
    assert values["rs2_25_error"] == "5.38 %" and values["exact_greedy_error"] == "4.68 %"
    assert values["slmc10_max_gap"] == "0.8"


def test_update_generated_replaces_only_known_markers():
    from sparsekm.reproduce._prose import update_generated

    text = "a <!--g:x-->1<!--/g--> b <!--g:y-->2<!--/g-->"
    assert update_generated(text, {"x": "3"}) == "a <!--g:x-->3<!--/g--> b <!--g:y-->2<!--/g-->"


def test_render_rewrites_the_guide_beside_the_results(tmp_path):
    import shutil
    from pathlib import Path

    from sparsekm.reproduce import discover
    from sparsekm.reproduce._report import write_results

    docs = Path(__file__).resolve().parents[1] / "docs"
    shutil.copy(docs / "results.md", tmp_path / "results.md")
    (tmp_path / "index.md").write_text("RS2-25: <!--g:rs2_25_error-->4.98 %<!--/g-->\n")
    write_results(tmp_path / "results.md", discover(), {}, mark_kept=False)
    assert (tmp_path / "index.md").read_text() == "RS2-25: <!--g:rs2_25_error-->5.38 %<!--/g-->\n"
