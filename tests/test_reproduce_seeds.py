"""Wu et al. tables: seeded cells are means over seeds x splits, judged against their spread;
the spread across BLAS kernels is read from per-kernel caches (issue 23)."""

import pytest

from sparsekm.reproduce import Context
from sparsekm.reproduce import _cache as cache_mod
from sparsekm.reproduce._cache import CellCache

from .conftest import requires_ida


def test_cell_seeds():
    from sparsekm.reproduce.wu2006 import SEEDED, cell_seeds

    assert cell_seeds(Context(), "slmc") == [0, 1, 2]  # default: 3 seeds
    assert cell_seeds(Context(seed=5, seeds=4), "rs") == [5, 6, 7, 8]
    assert cell_seeds(Context(seeds=3), "svm") == [0]  # deterministic
    assert cell_seeds(Context(seeds=3), "rvm") == [0]  # first seed only (cost)
    assert {"rs", "mrs", "slmc", "slmc_kmeans", "skfd_cv"} <= SEEDED


def _fake_runs(monkeypatch, errors):
    """``_run`` returning ``errors[seed][split - 1]`` (no data, no computing)."""
    from sparsekm.reproduce import wu2006

    calls = []

    def run(name, split, ratio, method, cache, ctx, compute=True, seed=None):
        calls.append((seed, split))
        return {"error": errors[seed][split - 1], "n_z": 4.0}

    monkeypatch.setattr(wu2006, "_run", run)
    monkeypatch.setattr(wu2006, "_splits", lambda name, quick: [1, 2])
    return calls


def test_mean_over_seeds_and_splits_with_the_spread(monkeypatch):
    from sparsekm.reproduce import wu2006

    calls = _fake_runs(monkeypatch, {0: [0.20, 0.18], 1: [0.16, 0.16], 2: [0.14, 0.16]})
    vals = wu2006._mean("banana", 0.05, "slmc", None, Context(seeds=3))
    assert sorted(calls) == [(s, k) for s in (0, 1, 2) for k in (1, 2)]
    assert wu2006.seed_means(vals) == pytest.approx({0: 19.0, 1: 16.0, 2: 15.0})
    assert wu2006._spread(vals) == (15.0, 19.0)
    assert wu2006._num(vals) == pytest.approx(16.7)  # mean over 3 seeds x 2 splits
    # the paper's 16.5 lies inside 15.0-19.0: a tie ("="), not "better" or "worse"
    assert wu2006._fmt(vals, paper=16.5) == "16.7 (15.0–19.0) ="
    assert wu2006._fmt(vals, paper=14.9).endswith("−")
    assert wu2006._fmt(vals, paper=19.1).endswith("+")
    cell = wu2006._cell("T", "Banana 5% SLMC", wu2006._num(vals), 16.5, None, wu2006._spread(vals))
    assert cell["spread"] == [15.0, 19.0] and "note" not in cell
    # one seed: no spread, the plain mean
    one = wu2006._mean("banana", 0.05, "slmc", None, Context(seeds=1))
    assert wu2006._spread(one) is None and wu2006._fmt(one) == "19.0"


def test_cached_only_shows_the_complete_seeds(monkeypatch):
    """--cached-only: a seed missing a split is left out and the cell says so."""
    from sparsekm.reproduce import wu2006

    def run(name, split, ratio, method, cache, ctx, compute=True, seed=None):
        assert not compute
        return None if (seed, split) == (2, 2) else {"error": 0.1 * (seed + 1)}

    monkeypatch.setattr(wu2006, "_run", run)
    monkeypatch.setattr(wu2006, "_splits", lambda name, quick: [1, 2])
    ctx = Context(seeds=3, cached_only=True)
    vals = wu2006._mean("banana", 0.05, "slmc", None, ctx)
    assert sorted(wu2006.seed_means(vals)) == [0, 1]
    assert wu2006._shown(vals, 12.0, ctx, "slmc") == "15.0 (10.0–20.0) [2 of 3 seeds] = / 12.0"
    monkeypatch.setattr(wu2006, "_run", lambda *a, **k: None)
    assert wu2006._mean("banana", 0.05, "slmc", None, ctx) is None


def test_much_worse_cell_gets_measured_evidence(monkeypatch):
    from sparsekm.reproduce import wu2006

    _fake_runs(monkeypatch, {0: [0.45, 0.40], 1: [0.44, 0.46], 2: [0.40, 0.42]})
    vals = wu2006._mean("image", 0.05, "rs", None, Context(seeds=3))
    svm = [{"error": 0.028, "n_sv": 172.0}, {"error": 0.028, "n_sv": 172.5}]
    cell = wu2006._cell("T", "Image 5% RS", wu2006._num(vals), 37.6, None, wu2006._spread(vals),
                      wu2006._evidence("image", "rs", vals, svm))
    note = cell["note"]
    assert "three RS implementations" in note and "N_SV 172.2 (paper 172.1)" in note
    assert "per-seed means 41.0–45.0 over 3 seeds" in note and "per-split 40.0–46.0" in note


@requires_ida
@pytest.mark.data
def test_kernel_means_read_per_kernel_caches(tmp_path, monkeypatch):
    """Entries computed under another BLAS kernel (its own cache file in slmc_kernels/) feed
    the kernel-spread column; a cache without every seed x split gives nothing."""
    from sparsekm.reproduce import wu2006

    monkeypatch.setattr(cache_mod, "_FRESH", set())
    monkeypatch.setattr(wu2006, "_splits", lambda name, quick: [1])
    main = CellCache(tmp_path / "cache.json")
    ctx = Context(seeds=2)
    folder = tmp_path / wu2006.KERNEL_CACHE_DIR
    for label, err in (("Prescott", 0.25), ("Haswell", 0.27)):
        kc = CellCache(folder / f"{label}.json")
        for seed in (0, 1):
            cell = "banana/1/0.05/rs"
            kc.put(cell, wu2006.cell_params("banana", 1, 0.05, "rs"), seed,
                   wu2006.cell_code_key("rs"), {"error": err + 0.01 * seed, "n_z": 4.0})
    got = wu2006.kernel_means("banana", 0.05, "rs", main, ctx)
    assert got == pytest.approx({"Prescott": 25.5, "Haswell": 27.5})
    # a key that also records the BLAS kernel in the parameters is still found
    kc = CellCache(folder / "Sandybridge.json")
    for seed in (0, 1):
        params = dict(wu2006.cell_params("banana", 1, 0.05, "rs"), blas="openblas Sandybridge")
        kc.put("banana/1/0.05/rs", params, seed, wu2006.cell_code_key("rs"), {"error": 0.3})
    assert wu2006.kernel_means("banana", 0.05, "rs", main, ctx)["Sandybridge"] == pytest.approx(30)
    # only seed 0 cached: incomplete, left out
    CellCache(folder / "Nehalem.json").put("banana/1/0.05/rs",
                                           wu2006.cell_params("banana", 1, 0.05, "rs"), 0,
                                           wu2006.cell_code_key("rs"), {"error": 0.1})
    assert "Nehalem" not in wu2006.kernel_means("banana", 0.05, "rs", main, ctx)


def test_seeds_option(tmp_path):
    from sparsekm.cli import main
    from sparsekm.reproduce._report import command_line

    with pytest.raises(SystemExit):
        main(["reproduce", "wu-table2", "--seeds", "0", "--quiet", "--out", str(tmp_path),
              "--write-results", "-"])
    assert command_line("wu-table2", Context(seeds=5)).endswith("--seeds 5")
    assert "--seeds" not in command_line("wu-table2", Context())


def test_kernel_table_puts_the_kernel_spread_beside_the_seed_spread(monkeypatch):
    from sparsekm.reproduce import wu2006

    _fake_runs(monkeypatch, {0: [0.20, 0.18], 1: [0.16, 0.16], 2: [0.14, 0.16]})
    monkeypatch.setattr(wu2006, "kernel_means", lambda name, ratio, m, cache, ctx: (
        {"Prescott": 17.5, "Haswell": 16.0} if name == "banana" else {}))
    cache = CellCache(None)
    text = wu2006._kernel_table([("5% random", 0.05, "slmc")], ["banana", "titanic"], cache,
                              Context(seeds=3))
    row = next(line for line in text.splitlines() if line.startswith("| Banana"))
    # ours 16.7; seeds 15.0-19.0 (width 4.0); kernels 16.0-17.5 (width 1.5) incl. this run
    assert row == ("| Banana 5% random | 16.7 | 15.0–19.0 (4.0) | 16.0–17.5 (1.5) | "
                   "Haswell 16.0, Prescott 17.5, this run 16.7 |")
    assert "Titanic" not in text and not cache.hits
    assert wu2006._kernel_table([("5% random", 0.05, "slmc")], ["titanic"], cache,
                              Context(seeds=3)) == ""


def test_kernel_table_counts_cells_whose_kernel_spread_is_wider(monkeypatch):
    """The summary under the spread table counts the cells that meet the goal (kernel spread
    no wider than the seed spread) and names the others with both widths."""
    from sparsekm.reproduce import wu2006

    _fake_runs(monkeypatch, {0: [0.20, 0.18], 1: [0.16, 0.16], 2: [0.14, 0.16]})
    # seeds 15.0-19.0 (width 4.0); banana's kernels within it, titanic's 12.0-21.0 (9.0)
    monkeypatch.setattr(wu2006, "kernel_means", lambda name, ratio, m, cache, ctx: (
        {"Prescott": 17.5} if name == "banana" else {"Prescott": 12.0, "Haswell": 21.0}))
    text = wu2006._kernel_table([("5% random", 0.05, "slmc")], ["banana", "titanic"],
                              CellCache(None), Context(seeds=3))
    assert text.rstrip().endswith(
        "met in 1 of 2 cells; wider in 1: Titanic 5% random (9.0 against 4.0, 3 kernels).")
