"""The keyed reproduction cache, thread pinning and repeatability of `sparsekm reproduce`."""

import importlib
import json
import sys

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from sparsekm.reproduce import Context, discover
from sparsekm.reproduce import _cache as cache_mod
from sparsekm.reproduce._cache import CellCache, code_key, data_fingerprint
from sparsekm.reproduce._report import pinned_threads, record_from_result, run_one

from .conftest import requires_ida, requires_usps


def _module(tmp_path, name, source):
    (tmp_path / f"{name}.py").write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        sys.modules.pop(name, None)
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def test_code_key_ignores_docs_and_comments_but_not_code(tmp_path):
    a = _module(tmp_path, "ck_a", 'def f(x):\n    """Doc."""\n    return x + 1\n')
    b = _module(tmp_path, "ck_b", "def f(x):\n    # a comment\n    return (x +\n            1)\n")
    c = _module(tmp_path, "ck_c", 'def f(x):\n    """Doc."""\n    return x + 2\n')
    # the module name is part of the key: compare the functions' normalised sources
    assert cache_mod._normalised_source(a.f) == cache_mod._normalised_source(b.f)
    assert cache_mod._normalised_source(a.f) != cache_mod._normalised_source(c.f)
    assert code_key(a.f) == code_key(a.f)
    assert code_key(a.f) != code_key(c.f)
    assert code_key(a, c.f) != code_key(c.f, a)  # order matters


def test_data_fingerprint_sees_every_byte():
    x = np.arange(12.0).reshape(3, 4)
    y = x.copy()
    y[2, 3] = np.nextafter(y[2, 3], np.inf)
    assert data_fingerprint(x) == data_fingerprint(x.copy())
    assert data_fingerprint(x) != data_fingerprint(y)
    assert data_fingerprint(x) != data_fingerprint(x.reshape(4, 3))


def test_cell_cache_keys_on_cell_params_seed_and_code(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    path = tmp_path / "cache.json"
    c = CellCache(path)
    params = {"C": 10.0, "data": "abc", "ratio": 0.1}
    c.put("banana/1/0.1/slmc", params, 0, "code1", {"error": 0.11}, seconds=2.0)
    cache_mod._FRESH.clear()  # as in a new process
    again = CellCache(path)
    assert again.get("banana/1/0.1/slmc", dict(reversed(params.items())), 0, "code1") == {
        "error": 0.11}
    assert again.get("banana/1/0.1/slmc", params, 1, "code1") is None        # other seed
    assert again.get("banana/1/0.1/slmc", params, 0, "code2") is None        # other code
    assert again.get("banana/1/0.1/slmc", {**params, "C": 1.0}, 0, "code1") is None
    assert again.get("banana/2/0.1/slmc", params, 0, "code1") is None        # other cell
    assert len(again.hits) == 1
    # a recomputation by new code replaces the superseded entry of the same cell
    again.put("banana/1/0.1/slmc", params, 0, "code2", {"error": 0.12})
    again.put("banana/1/0.1/slmc", params, 1, "code2", {"error": 0.13})
    data = json.loads(path.read_text())
    assert data["format"] == 2
    assert sorted(e["value"]["error"] for e in data["entries"].values()) == [0.12, 0.13]
    # deterministic file: sorted keys, so rewriting the same entries gives the same text
    text = path.read_text()
    assert text == json.dumps(data, indent=1, sort_keys=True) + "\n"


def test_two_writers_of_one_file_never_resurrect_a_superseded_entry(tmp_path, monkeypatch):
    """Writer A read an entry that writer B then superseded: A's next write keeps it gone."""
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    path = tmp_path / "shared.json"
    params = {"C": 10.0}
    CellCache(path).put("c/1/None/rs", params, 0, "old", {"error": 0.3})
    a, b = CellCache(path), CellCache(path)            # both read the old entry
    b.put("c/1/None/rs", params, 0, "new", {"error": 0.2})
    a.put("d/1/None/rs", params, 0, "new", {"error": 0.1})
    entries = json.loads(path.read_text())["entries"].values()
    assert sorted((e["cell"], e["code"]) for e in entries) == [
        ("c/1/None/rs", "new"), ("d/1/None/rs", "new")]
    # and neither writer loses the other's entries
    b.put("e/1/None/rs", params, 0, "new", {"error": 0.0})
    assert len(json.loads(path.read_text())["entries"]) == 3


def _fake_blas(monkeypatch, architecture, version="0.3.30"):
    """threadpoolctl reports one OpenBLAS with the given kernel (and a non-BLAS library)."""
    import threadpoolctl

    info = [{"user_api": "blas", "internal_api": "openblas", "prefix": "libscipy_openblas",
             "version": version, "architecture": architecture, "num_threads": 2,
             "filepath": "/x/libscipy_openblas.so"},
            {"user_api": "openmp", "internal_api": "openmp", "prefix": "libgomp",
             "version": None, "num_threads": 2, "filepath": "/x/libgomp.so"}]
    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: [dict(i) for i in info])
    monkeypatch.setattr(cache_mod, "_BLAS", None)  # as in a new process


def test_blas_signature_reads_threadpoolctl(monkeypatch):
    _fake_blas(monkeypatch, "Haswell")
    assert cache_mod.blas_signature() == "openblas:libscipy_openblas:0.3.30:Haswell"


def test_cell_key_changes_with_the_blas_kernel_and_version(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    cell, params = "banana/1/0.05/slmc", {"C": 10.0}
    _fake_blas(monkeypatch, "SkylakeX")
    skx = CellCache.key(cell, params, 0, "code1")
    _fake_blas(monkeypatch, "Haswell")
    hsw = CellCache.key(cell, params, 0, "code1")
    _fake_blas(monkeypatch, "Haswell", version="0.3.31")
    newer = CellCache.key(cell, params, 0, "code1")
    assert len({skx, hsw, newer}) == 3
    _fake_blas(monkeypatch, "SkylakeX")
    assert CellCache.key(cell, params, 0, "code1") == skx  # deterministic
    # a value computed under SkylakeX is never served under Haswell ...
    path = tmp_path / "cache.json"
    CellCache(path).put(cell, params, 0, "code1", {"error": 0.19})
    cache_mod._FRESH.clear()
    assert CellCache(path).get(cell, params, 0, "code1") == {"error": 0.19}
    _fake_blas(monkeypatch, "Haswell")
    cache_mod._FRESH.clear()
    assert CellCache(path).get(cell, params, 0, "code1") is None
    # ... and computing it there keeps SkylakeX's value (not superseded: another kernel's)
    CellCache(path).put(cell, params, 0, "code1", {"error": 0.16})
    entries = json.loads(path.read_text())["entries"].values()
    assert sorted((e["blas"].rsplit(":", 1)[1], e["value"]["error"]) for e in entries) == [
        ("Haswell", 0.16), ("SkylakeX", 0.19)]
    # new code under Haswell supersedes Haswell's entry only
    CellCache(path).put(cell, params, 0, "code2", {"error": 0.15})
    entries = json.loads(path.read_text())["entries"].values()
    assert sorted((e["code"], e["blas"].rsplit(":", 1)[1]) for e in entries) == [
        ("code1", "SkylakeX"), ("code2", "Haswell")]
    cache_mod._FRESH.clear()
    c = CellCache(path)
    assert c.get(cell, params, 0, "code2") == {"error": 0.15}
    assert "under BLAS kernel Haswell" in c.provenance()


def test_entries_without_blas_miss_and_are_superseded(tmp_path, monkeypatch):
    """Entries written before the key recorded the BLAS: never served, dropped on recompute."""
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    _fake_blas(monkeypatch, "SkylakeX")
    path = tmp_path / "cache.json"
    old = {"cell": "a", "params": {}, "seed": 0, "code": "k", "computed": "2026-01-01T00:00:00Z",
           "seconds": 1.0, "value": {"e": 1}}
    path.write_text(json.dumps({"format": 2, "entries": {"0123abcd": old}}))
    c = CellCache(path)
    assert c.get("a", {}, 0, "k") is None
    c.put("a", {}, 0, "k", {"e": 2})
    entries = json.loads(path.read_text())["entries"]
    assert [e["value"] for e in entries.values()] == [{"e": 2}]


def test_no_cache_recomputes_but_reuses_this_process_cells(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    path = tmp_path / "cache.json"
    CellCache(path).put("x/1/None/svm", {}, 0, "k", {"error": 0.5})
    cache_mod._FRESH.clear()  # as in a new process
    fresh = CellCache(path, read=False)
    assert fresh.get("x/1/None/svm", {}, 0, "k") is None
    fresh.put("x/1/None/svm", {}, 0, "k", {"error": 0.25})
    # a second table of the same --no-cache run reuses the cell computed in this run
    assert CellCache(path, read=False).get("x/1/None/svm", {}, 0, "k") == {"error": 0.25}


def test_old_unkeyed_cache_is_never_used(tmp_path):
    path = tmp_path / "cache.json"
    path.write_text(json.dumps({"banana/1/0.1/slmc": {"error": 0.3, "n_z": 8.0}}))
    c = CellCache(path)
    assert c.entries == {}
    assert c.get("banana/1/0.1/slmc", {}, 0, "k") is None


def test_provenance_says_where_cells_come_from(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    path = tmp_path / "cache.json"
    CellCache(path).put("a", {}, 0, "key1", {"e": 1}, seconds=60.0)
    cache_mod._FRESH.clear()
    c = CellCache(path)
    assert c.get("a", {}, 0, "key1") == {"e": 1}
    c.put("b", {}, 0, "key1", {"e": 2}, seconds=30.0)
    text = c.provenance(total=3)
    assert "1 of 3 cells from the cache" in text and "key1" in text
    assert "1 of 3 cells computed in this run (0.5 min)" in text
    assert "1 of 3 cells not run" in text
    # the run-time line of the results file carries it instead of "0 s"
    from sparsekm.reproduce import Result

    rec = record_from_result(Result("t", "T", "| a |", seconds=0.2, provenance=text),
                             Context(out_dir=tmp_path), tmp_path, date="2026-01-01")
    assert "from the cache" in rec.block and "run time 0 s" not in rec.block


def test_pinned_threads_limits_blas():
    from threadpoolctl import threadpool_info

    from sparsekm.config import effective_n_threads

    with threadpool_limits(2), pinned_threads():
        assert effective_n_threads() == 1
        assert all(lib["num_threads"] == 1 for lib in threadpool_info()
                   if lib["user_api"] == "blas")


def _table(name, outer_threads, tmp_path):
    entry = discover()[name]
    with threadpool_limits(outer_threads):
        res = run_one(entry, Context(out_dir=tmp_path, quick=True, progress=False))
    return res.table


def test_small_reproduction_is_byte_identical_whatever_the_outer_threads(tmp_path):
    # half-circle-square needs no data and runs in about a second
    a = _table("half-circle-square", 1, tmp_path / "a")
    b = _table("half-circle-square", 2, tmp_path / "b")
    assert a == b


@requires_usps
@pytest.mark.slow
@pytest.mark.data
def test_usps_rs_construct_quick_twice_byte_identical(tmp_path):
    a = _table("usps-rs-construct", 1, tmp_path / "a")
    b = _table("usps-rs-construct", 2, tmp_path / "b")
    assert a == b
    assert "RS2^gd-20" in a or "RS2^gd-25" in a


@requires_ida
@pytest.mark.data
def test_run_cell_keys_on_seed_and_computes_a_miss(tmp_path, monkeypatch):
    from sparsekm.reproduce import wu2006

    monkeypatch.setattr(cache_mod, "_FRESH", set())
    cache = CellCache(tmp_path / "c.json")
    a = wu2006.run_cell("banana", 1, 0.05, "rsvm", cache, seed=0)
    b = wu2006.run_cell("banana", 1, 0.05, "rsvm", cache, seed=1)
    assert len(cache.computed) == 2 and not cache.hits
    cache_mod._FRESH.clear()  # as in a new process
    again = CellCache(tmp_path / "c.json")
    assert wu2006.run_cell("banana", 1, 0.05, "rsvm", again, seed=0) == a
    assert wu2006.run_cell("banana", 1, 0.05, "rsvm", again, seed=1) == b
    assert len(again.hits) == 2
    # compute=False never computes: None for a cell not in the cache
    assert wu2006.run_cell("banana", 2, 0.05, "rsvm", again, seed=0, compute=False) is None


def test_code_key_is_the_code_read_at_import_not_a_later_edit(tmp_path):
    m = _module(tmp_path, "ck_edit", "def f(x):\n    return x + 1\n")
    cache_mod.warm(m.f)
    key = code_key(m.f)
    (tmp_path / "ck_edit.py").write_text("# shifted\n\ndef f(x):\n    return x * 7\n")
    assert code_key(m.f) == key  # the running code did not change


# -- issue 38: numpy's SIMD dispatch in the key; cells counted once per table ------------
def test_cell_key_changes_with_numpys_simd_dispatch(tmp_path, monkeypatch):
    """With numpy's AVX-512 loops off (NPY_DISABLE_CPU_FEATURES, or an AVX2-only CPU) a
    value computed with them on is never served, and vice versa."""
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    _fake_blas(monkeypatch, "SkylakeX")
    cell, params = "banana/1/0.1/mrs", {"C": 10.0}
    monkeypatch.setattr(cache_mod, "numpy_simd_signature", lambda: "X86_V3+X86_V4")
    on = CellCache.key(cell, params, 0, "code1")
    path = tmp_path / "cache.json"
    CellCache(path).put(cell, params, 0, "code1", {"error": 0.1643})
    monkeypatch.setattr(cache_mod, "numpy_simd_signature", lambda: "X86_V3")
    assert CellCache.key(cell, params, 0, "code1") != on
    cache_mod._FRESH.clear()
    assert CellCache(path).get(cell, params, 0, "code1") is None
    CellCache(path).put(cell, params, 0, "code1", {"error": 0.1736})  # kept side by side
    entries = json.loads(path.read_text())["entries"].values()
    assert sorted((e["numpy_simd"], e["value"]["error"]) for e in entries) == [
        ("X86_V3", 0.1736), ("X86_V3+X86_V4", 0.1643)]
    cache_mod._FRESH.clear()
    c = CellCache(path)
    assert c.get(cell, params, 0, "code1") == {"error": 0.1736}
    assert "numpy SIMD X86_V3;" in c.provenance()


def test_numpy_simd_signature_is_numpys_enabled_dispatch():
    from sparsekm._provenance import numpy_simd_signature

    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:  # pragma: no cover
        from numpy.core import _multiarray_umath as mu
    on = [d for d in mu.__cpu_dispatch__ if mu.__cpu_features__.get(d)]
    assert numpy_simd_signature() == ("+".join(sorted(on)) or "baseline")


def test_entries_without_numpy_simd_miss(tmp_path, monkeypatch):
    """Entries written before the key had numpy's dispatch: never served."""
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    _fake_blas(monkeypatch, "SkylakeX")
    blob = cache_mod._canonical({"cell": "a", "params": {}, "seed": 0, "code": "k",
                                 "blas": cache_mod.blas_signature()})
    import hashlib

    old_key = hashlib.sha256(blob.encode()).hexdigest()[:24]
    old = {"cell": "a", "params": {}, "seed": 0, "code": "k", "blas": cache_mod.blas_signature(),
           "computed": "2026-01-01T00:00:00Z", "seconds": 1.0, "value": {"e": 1}}
    path = tmp_path / "cache.json"
    path.write_text(json.dumps({"format": 2, "entries": {old_key: old}}))
    assert CellCache(path).get("a", {}, 0, "k") is None


def test_provenance_counts_each_cell_once_across_tables_in_one_process(tmp_path, monkeypatch):
    """Several Wu tables in one process: a cell computed by the first and read again (or
    looked at for a note) by the next counts once, never "260 of 240 cells"."""
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    path = tmp_path / "cache.json"
    t1 = CellCache(path)
    for k in range(3):
        assert t1.get(f"c{k}", {}, 0, "key") is None
        t1.put(f"c{k}", {}, 0, "key", {"e": k}, seconds=60.0)
        t1.get(f"c{k}", {}, 0, "key")  # read back after computing it
    assert t1.provenance(total=3) == "3 of 3 cells computed in this run (3.0 min)"
    t3 = CellCache(path)  # the next table, same process: the cells are this run's
    with t3.uncounted() as seen:  # a look for an evidence note
        assert t3.get("c0", {}, 0, "key") == {"e": 0}
    assert [e["value"] for e in seen] == [{"e": 0}]
    for _ in range(2):
        for k in range(2):
            assert t3.get(f"c{k}", {}, 0, "key") == {"e": k}
    assert t3.provenance(total=2) == "2 of 2 cells computed in this run (2.0 min)"


def test_an_entry_records_its_commit_but_is_not_keyed_on_it(tmp_path, monkeypatch):
    """A fresh entry records the checkout's commit (git, computed here independently);
    an entry of another commit with the same code key is still served (the code decides)."""
    import subprocess
    from pathlib import Path

    import sparsekm

    monkeypatch.setattr(cache_mod, "_FRESH", set())
    root = Path(sparsekm.__file__).resolve().parents[2]
    if not (root / ".git").exists():
        pytest.skip("sparsekm is not run from a git checkout")
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, text=True,
                          capture_output=True, check=True).stdout.strip()
    path = tmp_path / "cache.json"
    CellCache(path).put("banana/1/0.1/slmc", {"C": 1.0}, 0, "code1", {"error": 0.2})
    entry, = json.loads(path.read_text())["entries"].values()
    assert entry["commit"].split("+")[0] == head
    monkeypatch.setattr(cache_mod, "_COMMIT", "0123456789ab")  # as if run elsewhere
    cache_mod._FRESH.clear()
    assert CellCache(path).get("banana/1/0.1/slmc", {"C": 1.0}, 0, "code1") == {"error": 0.2}


def test_an_entry_with_recovered_code_commits_is_served_and_kept(tmp_path, monkeypatch):
    """``code_commits`` (written by tools/backfill_cache_provenance.py on older entries) is
    read as it is: the entry is still served under its key and a later put keeps it."""
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    path = tmp_path / "cache.json"
    CellCache(path).put("banana/1/0.1/slmc", {"C": 1.0}, 0, "code1", {"error": 0.2})
    data = json.loads(path.read_text())
    (key, entry), = data["entries"].items()
    del entry["commit"]
    rec = {"first": "0123456789ab", "last": "ba9876543210", "n": 2, "contiguous": True,
           "order": "git rev-list --date-order HEAD", "libraries": "numpy=x;scipy=y",
           "recovered_by": "tools/backfill_cache_provenance.py"}
    entry["code_commits"] = rec
    path.write_text(json.dumps(data))
    cache_mod._FRESH.clear()
    cache = CellCache(path)
    assert cache.get("banana/1/0.1/slmc", {"C": 1.0}, 0, "code1") == {"error": 0.2}
    assert "1 of 1 cells from the cache" in cache.provenance()
    cache.put("banana/2/0.1/slmc", {"C": 1.0}, 0, "code1", {"error": 0.3})
    assert json.loads(path.read_text())["entries"][key]["code_commits"] == rec


def test_a_put_keeps_the_files_other_top_level_blocks(tmp_path, monkeypatch):
    """A kernel cache carries a top-level ``provenance`` block beside ``format`` and
    ``entries``; writing a fresh cell keeps it as it was (it used to be dropped, and the
    file then failed the results files' provenance check)."""
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    path = tmp_path / "cache.json"
    CellCache(path).put("banana/1/0.1/slmc", {"C": 1.0}, 0, "code1", {"error": 0.2})
    data = json.loads(path.read_text())
    block = {"commit": "0123456789ab", "blas_kernel": "Prescott"}
    data["provenance"] = block
    path.write_text(json.dumps(data))
    CellCache(path).put("banana/2/0.1/slmc", {"C": 1.0}, 0, "code1", {"error": 0.3})
    after = json.loads(path.read_text())
    assert after["provenance"] == block and len(after["entries"]) == 2
    assert set(after) == {"format", "entries", "provenance"}


def test_a_table_names_the_commit_of_its_code(tmp_path, monkeypatch):
    """The provenance line of cached cells names the commit that computed them (``commit``)
    or, for older entries, their recovered range (``code_commits``); a fresh block names the checkout's commit
    (git, asked here independently)."""
    import subprocess
    from pathlib import Path

    import sparsekm
    from sparsekm.reproduce import Result

    monkeypatch.setattr(cache_mod, "_FRESH", set())
    monkeypatch.setattr(cache_mod, "_COMMIT", "0123456789ab")
    path = tmp_path / "cache.json"
    CellCache(path).put("a", {}, 0, "key1", {"e": 1}, seconds=6.0)
    CellCache(path).put("b", {}, 0, "key1", {"e": 2}, seconds=6.0)
    data = json.loads(path.read_text())
    older = next(e for e in data["entries"].values() if e["cell"] == "b")
    del older["commit"]
    older["code_commits"] = {"first": "aaaaaaa111", "last": "bbbbbbb222"}
    path.write_text(json.dumps(data))
    cache_mod._FRESH.clear()
    c = CellCache(path)
    assert c.get("a", {}, 0, "key1") == {"e": 1} and c.get("b", {}, 0, "key1") == {"e": 2}
    text = c.provenance()
    assert "(the code of commits 0123456, aaaaaaa..bbbbbbb)" in text
    assert CellCache.cached_seconds(text) == pytest.approx(12.0)  # still parsed
    root = Path(sparsekm.__file__).resolve().parents[2]
    if not (root / ".git").exists():
        pytest.skip("sparsekm is not run from a git checkout")
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, text=True,
                          capture_output=True, check=True).stdout.strip()
    monkeypatch.setattr(cache_mod, "_COMMIT", cache_mod._UNSET)  # asked of git again
    rec = record_from_result(Result("t", "T", "| a |", seconds=0.2), Context(out_dir=tmp_path),
                             tmp_path, date="2026-01-01")
    assert f"· 2026-01-01 at commit {head}" in rec.block
