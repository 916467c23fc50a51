"""``tools/backfill_cache_provenance.py``: the commits whose code gives a cache entry's code
key, found on a small git history whose keys are known by construction, and on this
repository's own history for an entry of the Wu cell cache."""

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "benchmarks" / "results" / "slmc_reproduction_cache.json"


@pytest.fixture(scope="module")
def backfill():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        return importlib.import_module("backfill_cache_provenance")
    finally:
        sys.path.remove(str(ROOT / "tools"))


def _git(repo, *args, when=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    if when:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when
    return subprocess.run(["git", *args], cwd=repo, env=env, text=True, capture_output=True,
                          check=True).stdout.strip()


#: the key ``svm`` cells get at each commit of the toy history (one commit every 2 hours)
_TOY_KEYS = ["k1", "k1", "k2", "k2", "k2", "k3", "k1"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A repository whose ``sparsekm.reproduce.slmc.cell_code_key`` (the module's name
    before 2026-11-27) returns ``_TOY_KEYS[i]`` at commit ``i``; the last two commits use
    today's module name, ``wu2006``. Then a side branch gives "k7" (``shas[7]``), merged
    into main by a merge that keeps main's code (``shas[8]``, "k1")."""
    repo = tmp_path_factory.mktemp("toy")
    _git(repo, "init", "-q", "-b", "main")
    pkg = repo / "src" / "sparsekm" / "reproduce"
    pkg.mkdir(parents=True)
    (repo / "src" / "sparsekm" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    shas = []
    for i, key in enumerate(_TOY_KEYS):
        for name in ("slmc", "wu2006"):
            (pkg / f"{name}.py").unlink(missing_ok=True)
        name = "slmc" if i < 5 else "wu2006"
        (pkg / f"{name}.py").write_text(
            f"def cell_code_key(method):\n    return {{'svm': {key!r}}}[method]\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}", when=f"2026-01-01T{2 * i:02d}:00:00+00:00")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    # a side branch with code of its own ("k7"), merged without it (the merge keeps k1)
    _git(repo, "checkout", "-q", "-b", "side")
    (pkg / "wu2006.py").write_text("def cell_code_key(method):\n    return 'k7'\n")
    _git(repo, "commit", "-q", "-am", "side", when="2026-01-01T14:00:00+00:00")
    shas.append(_git(repo, "rev-parse", "HEAD"))
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "-s", "ours", "-m", "merge side", "side",
         when="2026-01-01T15:00:00+00:00")
    shas.append(_git(repo, "rev-parse", "HEAD"))
    return repo, shas


def _entry(code, computed, **extra):
    return {"cell": "banana/1/None/svm", "params": {"method": "svm"}, "seed": 0, "code": code,
            "computed": computed, "value": {"error": 0.1}, **extra}


def test_the_commits_giving_each_key_on_a_known_history(backfill, toy, tmp_path):
    repo, shas = toy
    cache = tmp_path / "cache.json"
    entries = {"a": _entry("k1", "2026-01-01T02:30:00Z"),      # commits 0, 1, 6, merge
               "b": _entry("k2", "2026-01-01T06:30:00Z"),      # commits 2-4
               "c": _entry("k3", "2026-01-01T10:30:00Z"),      # commit 5 (wu2006)
               "d": _entry("k9", "2026-01-01T06:00:00Z"),      # no commit
               "e": _entry("k2", "2026-01-01T08:00:00Z", commit="0123456789ab"),
               "f": _entry("k7", "2026-01-01T14:30:00Z")}      # the side branch only
    cache.write_text(json.dumps({"format": 2, "entries": entries}))
    # a 1-hour margin starts from the commits near the stamps: the window must widen
    report = backfill.backfill([cache], repo=repo, ref="main", margin_hours=1.0, write=True,
                               log=lambda *a: None)
    out = json.loads(cache.read_text())["entries"]
    first_parent = f"first-parent history of {shas[8][:12]}"
    k2 = out["b"]["code_commits"]
    assert (k2["first"], k2["last"], k2["n"], k2["contiguous"], k2["searched"]) == \
        (shas[2][:12], shas[4][:12], 3, True, first_parent)
    k3 = out["c"]["code_commits"]
    assert (k3["first"], k3["last"], k3["n"]) == (shas[5][:12], shas[5][:12], 1)
    k1 = out["a"]["code_commits"]  # k1 came back at commit 6: one record, not contiguous
    assert (k1["first"], k1["last"], k1["n"], k1["contiguous"]) == \
        (shas[0][:12], shas[8][:12], 4, False)
    k7 = out["f"]["code_commits"]  # on no first-parent commit: found among all commits
    assert (k7["first"], k7["last"], k7["n"], k7["searched"]) == \
        (shas[7][:12], shas[7][:12], 1,
         f"first-parent history of {shas[7][:12]}, a side line merged into {shas[8][:12]}")
    assert out["d"]["code_commits"] is None
    assert "code_commits" not in out["e"] and out["e"]["commit"] == "0123456789ab"
    assert report[cache][("svm", "k9")] == (None, 1)
    assert k2["libraries"] == backfill.library_versions()


def test_keys_at_reads_the_commit_not_the_working_tree(backfill, toy):
    repo, shas = toy
    keys = [backfill.keys_at(s, ["svm", "rs"], repo)["svm"] for s in shas]
    assert keys == [*_TOY_KEYS, "k7", "k1"]
    assert backfill.keys_at(shas[0], ["rs"], repo) == {"rs": None}  # a KeyError there


def test_a_recovered_range_gives_the_entrys_key(backfill):
    """The Wu cache's recorded range, checked on this repository's history: both ends
    give the entry's code key, and the commit just before the first does not."""
    entries = json.loads(CACHE.read_text(encoding="utf-8"))["entries"]
    entry = next(e for e in entries.values()
                 if e["params"]["method"] == "svm" and e.get("code_commits"))
    rec = entry["code_commits"]
    if rec["libraries"] != backfill.library_versions():
        pytest.skip(f"recovered under {rec['libraries']}")
    try:
        first = backfill._git("rev-parse", rec["first"]).strip()
        order = [sha for sha, _ in backfill.commits("HEAD")]
    except subprocess.CalledProcessError:
        pytest.skip("the recovered commits are not in this checkout's history")
    if first not in order:
        pytest.skip("the recovered commits are not in this checkout's history")
    i = order.index(first)
    last = backfill._git("rev-parse", rec["last"]).strip()
    keys = {sha: backfill.keys_at(sha, ["svm"])["svm"] for sha in (order[i - 1], first, last)}
    assert keys[first] == keys[last] == entry["code"]
    assert keys[order[i - 1]] != entry["code"]


def test_stamp_gives_a_cache_file_its_block_once(backfill, tmp_path):
    """``--stamp``: a cache file without a top-level block gets the commit that last wrote
    it (git log, asked here independently) and the entries' own commits and ranges; a
    file that has a block is left as it is, and the entries are not touched."""
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    f = repo / "cache.json"
    entries = {"a": _entry("k1", "2026-01-01T00:00:00Z", commit="0123456789ab"),
               "b": _entry("k2", "2026-01-01T00:00:00Z",
                           code_commits={"first": "aaa", "last": "bbb"}),
               "c": _entry("k2", "2026-01-01T00:00:00Z",
                           code_commits={"first": "aaa", "last": "bbb"})}
    f.write_text(json.dumps({"format": 2, "entries": entries}))
    _git(repo, "add", "cache.json")
    _git(repo, "commit", "-qm", "cache")
    head = _git(repo, "log", "-1", "--format=%h", "--", "cache.json")
    assert backfill.stamp([f], repo=repo) == [f]
    block = json.loads(f.read_text())["provenance"]
    assert block["commit"] == head
    assert (block["entries_with_commit"], block["entries_with_code_commits"]) == (1, 2)
    assert block["entry_commits"] == ["0123456789ab"]
    assert block["entry_code_commit_ranges"] == ["aaa..bbb"]
    assert backfill.stamp([f], repo=repo) == []  # once
    assert json.loads(f.read_text())["entries"] == entries
