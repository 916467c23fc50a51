#!/usr/bin/env python3
"""Recover which commits computed the entries of a Wu et al. cell cache, recomputing no cell.

Entries of ``benchmarks/results/slmc_reproduction_cache.json`` (and the per-kernel caches
``benchmarks/results/slmc_kernels/*.json``) written before the cache recorded ``commit``
carry only their code key: ``code``, the hash that
:func:`sparsekm.reproduce.wu2006.cell_code_key` gives for the entry's method (the syntax
trees of the code that computes the cell, plus the numpy / scipy / scikit-learn
versions; :func:`sparsekm.reproduce._cache.code_key`). That key is a fingerprint of the
code, so the commits that computed an entry can be found again: extract ``src/`` of each
candidate commit (``git archive``), compute ``cell_code_key(method)`` there in a
subprocess (that checkout's ``src`` first on ``PYTHONPATH``, this interpreter's
libraries), and keep the commits whose key equals the entry's.

Each entry then gets::

    "code_commits": {"first": "<12 hex>", "last": "<12 hex>", "n": 53, "contiguous": true,
                     "searched": "first-parent history of <12 hex>",
                     "libraries": "numpy=2.4.6;scipy=1.17.1;scikit-learn=1.9.1",
                     "recovered_by": "tools/backfill_cache_provenance.py"}

``first`` and ``last`` are the oldest and newest commit of the first-parent history of
``--ref`` (``git rev-list --first-parent``: the branch's own line, merges as one step)
whose ``src`` gives the entry's code key under the ``libraries`` named; ``n`` counts them
and ``contiguous`` says that every commit of that line between them gives the key too.
Commits of merged side branches can give the same key (they share the code); they are
searched only for a key that no first-parent commit gives: among all commits (date
order), and the record is then the run on the first-parent line of the newest commit
found (``"searched": "first-parent history of <side>, a side line merged into <tip>"``).

The record is *not* a ``commit``: which of those commits (or an uncommitted tree with the
same code) the computing checkout was is not known; the code that computed the entry is
the code of every one of them. An entry whose key no searched commit gives gets
``"code_commits": null`` and is reported. A match also confirms the library versions:
the key hashes them, so a match under this interpreter's versions means the entry was
computed under the same versions.

The search starts at the commits within ``--margin-hours`` of the entries' ``computed``
timestamps and widens (by the same margin) while a key's match touches an edge of the
window, so ``first`` / ``last`` are the ends of each run (a key that comes back after a
run of other keys beyond the window would be missed: code keys hash the code, so that
needs the same code again). Keys per commit can be memoised in ``--keys FILE`` (JSON
``{sha: {method: key}}``) so that a rerun costs nothing.

Usage::

    python tools/backfill_cache_provenance.py [CACHE ...] [--ref main] [--keys FILE] [--write]
    python tools/backfill_cache_provenance.py [CACHE ...] --stamp

Without ``--write`` the tool only reports; with it each cache file is rewritten (sorted
keys, ``indent=1``, as :class:`~sparsekm.reproduce._cache.CellCache` writes it). Entries that
already carry ``commit`` (computed since the cache records it) are left alone. With
``--stamp`` a file without a top-level ``provenance`` block gets one (:func:`file_block`:
the commit that last wrote the file, and the entries' own commits and recovered ranges);
:class:`~sparsekm.reproduce._cache.CellCache` keeps such a block on later writes.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = ROOT / "benchmarks" / "results" / "slmc_reproduction_cache.json"

#: run inside the extracted checkout: ``{method: key or None}`` for the methods in argv
_PROBE = r"""
import json, os, sys
import sparsekm
here = os.path.realpath(sparsekm.__file__)
if not here.startswith(os.path.realpath(sys.argv[1])):
    raise SystemExit(f"imported {here}, not the checkout")
import importlib
cell_code_key = None
for name in ("sparsekm.reproduce.wu2006", "sparsekm.reproduce.slmc"):  # renamed 2026-11-27
    try:
        cell_code_key = importlib.import_module(name).cell_code_key
        break
    except (ImportError, AttributeError):
        pass
if cell_code_key is None:
    print(json.dumps({}))
    raise SystemExit(0)
out = {}
for m in sys.argv[2:]:
    try:
        out[m] = cell_code_key(m)
    except Exception:
        out[m] = None
print(json.dumps(out))
"""


def _git(*args, repo=ROOT):
    return subprocess.run(["git", *args], cwd=repo, text=True, capture_output=True,
                          check=True).stdout


def commits(ref="HEAD", repo=ROOT, first_parent=True):
    """``[(sha, committer datetime)]`` of ``ref``'s history, oldest first: its first-parent
    line, or (``first_parent=False``) every commit reachable, in date order."""
    how = ["--first-parent"] if first_parent else ["--date-order"]
    out = []
    for line in _git("rev-list", *how, "--reverse", "--format=%H %cI", ref,
                     repo=repo).splitlines():
        if line.startswith("commit "):
            continue
        sha, when = line.split()
        out.append((sha, datetime.datetime.fromisoformat(when)))
    return out


def library_versions():
    """The versions :func:`~sparsekm.reproduce._cache.code_key` hashes, as one string."""
    import numpy
    import scipy
    import sklearn

    return f"numpy={numpy.__version__};scipy={scipy.__version__};scikit-learn={sklearn.__version__}"


def keys_at(sha, methods, repo=ROOT, python=sys.executable):
    """``{method: cell_code_key(method)}`` of ``sha``'s ``src`` (None where it fails)."""
    with tempfile.TemporaryDirectory(prefix="prov-") as tmp:
        archive = subprocess.run(["git", "archive", "--format=tar", sha, "src"], cwd=repo,
                                 capture_output=True, check=True).stdout
        tar_path = Path(tmp) / "src.tar"
        tar_path.write_bytes(archive)
        with tarfile.open(tar_path) as tar:
            tar.extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src"), "OMP_NUM_THREADS": "1",
               "PYTHONDONTWRITEBYTECODE": "1"}
        run = subprocess.run([python, "-c", _PROBE, tmp, *methods], cwd=tmp, env=env,
                             text=True, capture_output=True)
    if run.returncode != 0:
        return {m: None for m in methods}
    got = json.loads(run.stdout.strip().splitlines()[-1])
    return {m: got.get(m) for m in methods}


def entry_pairs(entries):
    """``{(method, code): [entry keys]}`` of the entries without a recorded ``commit``."""
    pairs = {}
    for k, e in entries.items():
        if e.get("commit"):
            continue
        pairs.setdefault((e["params"]["method"], e["code"]), []).append(k)
    return pairs


def match_runs(order, keys, method, code):
    """Indices (into ``order``) of the commits giving ``code`` for ``method``, and whether
    they are one run: every commit between the first and the last gives ``code`` too."""
    hits = [i for i, sha in enumerate(order) if keys.get(sha, {}).get(method) == code]
    contiguous = bool(hits) and len(hits) == hits[-1] - hits[0] + 1
    return hits, contiguous


def search(pairs, stamps, history, *, repo=ROOT, margin_hours=24.0, memo=None,
            python=sys.executable, log=print):
    """Compute keys over a widening window of ``history`` until every pair's matches are
    bounded by commits of another key (or the ends of history). Returns (order, keys)."""
    order = [sha for sha, _ in history]
    keys = {} if memo is None else memo
    methods = sorted({m for m, _ in pairs})
    margin = datetime.timedelta(hours=margin_hours)
    lo_t = min(stamps) - margin
    hi_t = max(stamps) + margin
    lo = next((i for i, (_, t) in enumerate(history) if t >= lo_t), len(history) - 1)
    hi = max((i for i, (_, t) in enumerate(history) if t <= hi_t), default=0)
    while True:
        for i in range(lo, hi + 1):
            sha = order[i]
            if sha not in keys or any(m not in keys[sha] for m in methods):
                keys[sha] = {**keys.get(sha, {}), **keys_at(sha, methods, repo, python)}
                log(f"  {sha[:12]} {history[i][1].isoformat()} computed")
        grow_lo = grow_hi = False
        for (m, code) in pairs:
            hits, _ = match_runs(order[lo:hi + 1], keys, m, code)
            if hits and hits[0] == 0 and lo > 0:
                grow_lo = True
            if hits and hits[-1] == hi - lo and hi < len(order) - 1:
                grow_hi = True
        if not (grow_lo or grow_hi):
            return order[lo:hi + 1], keys
        if grow_lo:
            t = history[lo][1] - margin
            lo = min(lo - 1, next(i for i, (_, tt) in enumerate(history) if tt >= t))
        if grow_hi:
            t = history[hi][1] + margin
            hi = max(hi + 1, max(i for i, (_, tt) in enumerate(history) if tt <= t))


def code_commits(order, keys, method, code, searched, libraries):
    """The ``code_commits`` record of a (method, code) pair, or None when no commit gives it."""
    hits, contiguous = match_runs(order, keys, method, code)
    if not hits:
        return None
    return {"first": order[hits[0]][:12], "last": order[hits[-1]][:12], "n": len(hits),
            "contiguous": contiguous, "searched": searched, "libraries": libraries,
            "recovered_by": "tools/backfill_cache_provenance.py"}


def recover(pairs, stamps, *, ref="HEAD", repo=ROOT, margin_hours=24.0, memo=None,
            python=sys.executable, log=print):
    """``{(method, code): record or None}``: first-parent history first, then every commit
    for the keys that no first-parent commit gives."""
    tip = _git("rev-parse", ref, repo=repo).strip()
    libraries = library_versions()
    memo = {} if memo is None else memo  # shared by the searches below
    kw = dict(repo=repo, margin_hours=margin_hours, memo=memo, python=python, log=log)
    order, keys = search(pairs, stamps, commits(tip, repo), **kw)
    records = {pair: code_commits(order, keys, *pair, f"first-parent history of {tip[:12]}",
                                  libraries) for pair in pairs}
    rest = [pair for pair, rec in records.items() if rec is None]
    if rest:  # keys of side branches: found among all commits, told on their own line
        order, keys = search(rest, stamps, commits(tip, repo, first_parent=False), **kw)
        for pair in rest:
            hits, _ = match_runs(order, keys, *pair)
            if not hits:
                continue
            side = order[hits[-1]]
            line, keys = search([pair], stamps, commits(side, repo), **kw)
            records[pair] = code_commits(line, keys, *pair, f"first-parent history of "
                                         f"{side[:12]}, a side line merged into {tip[:12]}",
                                         libraries)
    return records


def file_block(data, commit):
    """A top-level ``provenance`` block for a cache file that has none: ``commit`` is the
    commit that last wrote the file (as ``tools/restamp_results.py`` records it for a
    results file), and the block says where each entry's own code is named (its ``commit``
    or recovered ``code_commits``), with the ranges found."""
    entries = data.get("entries", {}).values()
    own = sorted({str(e["commit"]) for e in entries if e.get("commit")})
    ranges = sorted({f"{e['code_commits']['first']}..{e['code_commits']['last']}"
                     for e in entries if not e.get("commit") and e.get("code_commits")})
    return {"commit": commit,
            "commit_is": "the commit that last wrote this file (git log); the code that "
                         "computed each entry is named by the entry: its commit, or the "
                         "code_commits range recovered by tools/backfill_cache_provenance.py",
            "entries_with_commit": sum(1 for e in entries if e.get("commit")),
            "entries_with_code_commits": sum(1 for e in entries if not e.get("commit")
                                             and e.get("code_commits")),
            "entry_commits": own, "entry_code_commit_ranges": ranges}


def stamp(paths, repo=ROOT):
    """Give each cache file in ``paths`` without a top-level ``provenance`` block the block
    of :func:`file_block` (nothing searched, nothing recomputed); returns the files
    changed."""
    changed = []
    for path in map(Path, paths):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "provenance" in data:
            continue
        rel = path.resolve().relative_to(Path(repo).resolve()).as_posix()
        commit = _git("log", "-1", "--format=%h", "--", rel, repo=repo).strip() or None
        data["provenance"] = file_block(data, commit)
        tmp = path.with_suffix(path.suffix + ".stamp.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)
        changed.append(path)
    return changed


def backfill(paths, *, ref="HEAD", repo=ROOT, margin_hours=24.0, memo=None, write=False,
             python=sys.executable, log=print):
    """Find and (``write``) record ``code_commits`` for every entry without ``commit``.

    Returns ``{path: {(method, code): (record or None, n entries)}}``.
    """
    caches = {Path(p): json.loads(Path(p).read_text(encoding="utf-8")) for p in paths}
    pairs, stamps = set(), []
    for data in caches.values():
        for pair, ks in entry_pairs(data["entries"]).items():
            pairs.add(pair)
            stamps += [datetime.datetime.strptime(data["entries"][k]["computed"],
                                                  "%Y-%m-%dT%H:%M:%S%z") for k in ks]
    if not pairs:
        return {}
    records = recover(sorted(pairs), stamps, ref=ref, repo=repo, margin_hours=margin_hours,
                      memo=memo, python=python, log=log)
    report = {}
    for path, data in caches.items():
        report[path] = {}
        for pair, ks in entry_pairs(data["entries"]).items():
            report[path][pair] = (records[pair], len(ks))
            for k in ks:
                data["entries"][k]["code_commits"] = records[pair]
        if write:
            tmp = path.with_suffix(path.suffix + ".backfill.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(path)
    return report


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("caches", nargs="*", default=[str(DEFAULT_CACHE)])
    ap.add_argument("--ref", default="HEAD", help="the history searched (default HEAD)")
    ap.add_argument("--margin-hours", type=float, default=24.0)
    ap.add_argument("--keys", help="JSON memo of {sha: {method: key}} (read and updated)")
    ap.add_argument("--write", action="store_true", help="rewrite the cache files")
    ap.add_argument("--stamp", action="store_true",
                    help="only give files without one a top-level provenance block "
                         "(file_block; nothing searched)")
    args = ap.parse_args(argv)
    if args.stamp:
        for path in stamp(args.caches):
            print(f"stamped {path}")
        return 0
    memo = {}
    if args.keys and Path(args.keys).exists():
        memo = json.loads(Path(args.keys).read_text())
    try:
        report = backfill(args.caches, ref=args.ref, margin_hours=args.margin_hours,
                          memo=memo, write=args.write)
    finally:
        if args.keys:
            Path(args.keys).write_text(json.dumps(memo, indent=1, sort_keys=True) + "\n")
    missing = 0
    for path, rows in report.items():
        print(path)
        for (method, code), (rec, n) in sorted(rows.items()):
            if rec is None:
                missing += n
                print(f"  {method:12s} {code} {n:5d} entries: no searched commit gives it")
            else:
                print(f"  {method:12s} {code} {n:5d} entries: {rec['first']}..{rec['last']} "
                      f"({rec['n']} commits{'' if rec['contiguous'] else ', NOT contiguous'})")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
