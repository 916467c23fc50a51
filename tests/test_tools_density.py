"""``tools/test_density.py``: its area map covers the package and the tests exactly once,
and its arithmetic (items per 100 physical lines, the median) on stated inputs."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def density():
    spec = importlib.util.spec_from_file_location("_sparsekm_test_density",
                                                  ROOT / "tools" / "test_density.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_source_module_is_in_exactly_one_area(density):
    files = density.source_files()
    assert "compression/_search.py" in files and "cli/_commands/reduce.py" in files
    wrong = {rel: density.areas_of_source(rel) for rel in files
             if len(density.areas_of_source(rel)) != 1}
    assert wrong == {}


def test_every_source_path_of_the_map_names_something_that_exists(density):
    src = ROOT / "src" / "sparsekm"
    missing = [p for paths, _ in density.AREAS.values() for p in paths
               if not (src / p).exists()]
    assert missing == []


def test_every_test_file_is_in_one_area_or_the_house(density):
    names = sorted(p.name for p in (ROOT / "tests").glob("test_*.py"))
    unplaced = [n for n in names if density.area_of_test(n) is None]
    assert unplaced == []
    assert density.area_of_test("test_tools_density.py") == "house"


def test_the_longest_pattern_wins_and_an_unnamed_file_is_refused(density):
    # test_reduced_set_models.py matches reduced_set's test_reduced_set_*.py too
    assert density.area_of_test("test_reduced_set_models.py") == "models"
    assert density.area_of_test("test_reduced_set_identities.py") == "reduced_set"
    assert density.area_of_test("test_expansion_regressor.py") == "models"
    collected = "tests/test_nothing_known.py::test_a\n"
    with pytest.raises(ValueError, match="test_nothing_known.py belongs to no area"):
        density.items_per_area(collected)


def test_items_are_counted_per_file_and_house_files_are_left_out(density):
    collected = "\n".join([
        "tests/test_cli.py::test_a", "tests/test_cli_guards.py::test_b[x]",
        "tests/test_layering.py::test_c", "src/sparsekm/expansion.py::sparsekm.expansion",
        "", "3 tests collected in 0.1s"])
    items = density.items_per_area(collected)
    assert items["cli"] == 2
    assert sum(items.values()) == 2


def test_lines_are_physical_and_density_is_per_hundred(density, tmp_path):
    f = tmp_path / "m.py"
    f.write_bytes(b"a = 1\n\n# c\n")
    assert density.physical_lines(f) == 3
    areas = list(density.AREAS)
    lines = {a: 200 for a in areas}
    items = {a: i for i, a in enumerate(areas)}       # 0, 1, ..., 18 items
    rows, median = density.table(lines, items)
    assert [r[3] for r in rows] == [i / 2 for i in range(19)]
    assert median == 4.5                              # the 10th of 0, 0.5, ..., 9


def test_the_median_of_the_other_areas_leaves_the_subjects_out(density):
    areas = list(density.AREAS)
    rows, _ = density.table({a: 100 for a in areas}, {a: i for i, a in enumerate(areas)})
    # densities 0..18; without the five largest the others are 0..13, median 6.5
    assert density.median_of_others(rows, areas[-5:]) == 6.5
    with pytest.raises(ValueError, match=r"unknown area\(s\) \['nope'\]"):
        density.median_of_others(rows, ["nope"])
