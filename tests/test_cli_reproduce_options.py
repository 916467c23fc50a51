"""``sparsekm reproduce``: the options that exclude each other or name nothing are usage
errors (exit 2) before any reproduction runs, and ``list`` shows every registered one."""

import pytest

from sparsekm.cli import main
from sparsekm.reproduce import discover


def _usage(capsys, tmp_path, *options, made_nothing=True):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", *options, "--out", str(tmp_path / "out")])
    assert exc.value.code == 2
    if made_nothing:
        assert not (tmp_path / "out").exists()  # refused before any folder was made
    return capsys.readouterr().err


def test_list_shows_every_registered_reproduction_once(capsys):
    assert main(["reproduce", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    registry = discover()
    assert len(lines) == len(registry) > 0
    assert [line.split()[0] for line in lines] == list(registry)
    slow = {n for n, e in registry.items() if e.slow}
    assert {line.split()[0] for line in lines if line.endswith("(slow)")} == slow


def test_no_cache_and_cached_only_exclude_each_other(capsys, tmp_path):
    assert "--no-cache and --cached-only exclude each other" in _usage(
        capsys, tmp_path, "wu-table1", "--no-cache", "--cached-only")


def test_seeds_below_one(capsys, tmp_path):
    assert "--seeds must be at least 1; got 0" in _usage(capsys, tmp_path, "wu-table1",
                                                         "--seeds", "0")


def test_an_unknown_data_set_names_the_choices(capsys, tmp_path):
    err = _usage(capsys, tmp_path, "wu-table1", "--datasets", "banana,nosuch")
    assert "unknown data set(s) for --datasets: nosuch" in err and "banana" in err


def test_render_only_needs_a_results_file(capsys, tmp_path):
    assert "--render-only needs --write-results FILE or 'all'" in _usage(
        capsys, tmp_path, "ripley", "--render-only", made_nothing=False)


def test_render_only_refusal_makes_no_folder(capsys, tmp_path):
    _usage(capsys, tmp_path, "ripley", "--render-only")


def test_every_unknown_name_is_listed(capsys, tmp_path):
    err = _usage(capsys, tmp_path, "ripley", "nope-1", "nope-2")
    assert "unknown reproduction(s): nope-1, nope-2" in err
    assert "sparsekm reproduce list" in err
