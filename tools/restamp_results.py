#!/usr/bin/env python3
"""Give every results file in ``benchmarks/results/`` a provenance block, recomputing nothing.

Files written since issue 38 carry ``"provenance"`` from
:func:`sparsekm._provenance.stamp` (via ``benchmarks/_benchutil.write_results``). Older
files get a block that says what is known and what is not::

    "provenance": {"restamped": true,
                   "commit": "<the commit that last wrote the file, per git log>",
                   "found_in_file": {"load_average_1_5_15_min": "machine.load_average_...",
                                     ...},
                   "unknown": ["blas_kernel", "numpy_cpu_features", ...]}

``found_in_file`` maps each provenance key to where the file itself already records it
(a dotted path; ``runs[*]`` for every run); the values stay where they are. Keys found
nowhere are ``unknown``: they were not recorded when the numbers were computed and
cannot be learned now. A file's own ``commit`` field, when it has one, is named too.
The caches of cells (``pareto_cache/``, ``slmc_reproduction_cache.json``) are not
results files and are left alone.

Usage: ``python tools/restamp_results.py [--check]`` (``--check``: list the files
without a block and exit 1 if any).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "src"))

from sparsekm._provenance import STAMP_KEYS  # noqa: E402

#: not results: keyed caches of computed cells, read back by the code
CACHES = ("pareto_cache", "slmc_reproduction_cache.json")

#: for each provenance key, the field names under which older files recorded it
_ALIASES = {
    "commit": ("commit", "git_commit", "git"),
    "versions": ("versions", "numpy", "numpy_version", "sparsekm_version", "sklearn",
                 "scikit-learn", "scipy", "python"),
    "blas": ("blas", "native_blas", "blas_reported", "blas_info"),
    "blas_kernel": ("architecture", "blas_kernel", "openblas_coretype", "kernel_requested"),
    "numpy_cpu_features": ("numpy_cpu_features", "cpu_features"),
    "threads": ("omp_num_threads", "OMP_NUM_THREADS", "threads", "num_threads", "n_jobs",
                "blas_threads"),
    "load_average_1_5_15_min": ("load_average_1_5_15_min", "loadavg", "loadavg_at_start",
                                "load_average", "load_1min", "load", "loadavg_start",
                                "loadavg_end", "load_before", "load_after"),
    "platform": ("platform", "os"),
    "cpu": ("cpu", "cpu_model", "processor", "cpus", "cpu_count", "machine"),
}


def results_files(root=RESULTS):
    """Every results JSON under ``root`` (caches excluded), sorted."""
    return sorted(p for p in root.rglob("*.json")
                  if not any(part in CACHES for part in p.relative_to(root).parts))


def _walk(obj, path="", depth=0):
    """(dotted path, key, value) of every dict entry, lists as ``[*]`` (first 3 items)."""
    if depth > 6:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "provenance":
                continue
            p = f"{path}.{k}" if path else str(k)
            yield p, k, v
            yield from _walk(v, p, depth + 1)
    elif isinstance(obj, list):
        for v in obj[:3]:
            yield from _walk(v, f"{path}[*]", depth + 1)


def found_in_file(obj):
    """``{provenance key: dotted path}`` of the fields that already record it."""
    found = {}
    for path, key, value in _walk(obj):
        if value is None or value == "" or value == []:
            continue
        for pkey, aliases in _ALIASES.items():
            if pkey not in found and key in aliases:
                if key == "machine" and not isinstance(value, str):
                    continue  # a "machine" block is a container, not the CPU
                found[pkey] = path
    return found


def last_commit(path):
    """The short hash of the commit that last changed ``path`` (git log), or None."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%h", "--", str(path)], cwd=ROOT,
                             text=True, capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return out or None


def restamp_block(obj, path):
    found = found_in_file(obj)
    block = {"restamped": True,
             "restamped_by": "tools/restamp_results.py (issue 38): nothing recomputed; "
                             "values that the file records stay where they are "
                             "(found_in_file), the rest were not recorded (unknown)",
             "commit": last_commit(path),
             "commit_is": "the commit that last wrote this file (git log); the code that "
                          "computed the numbers is that commit or older",
             "found_in_file": found,
             "unknown": [k for k in STAMP_KEYS if k not in found and k != "commit"]}
    return block


def _indent(text):
    lines = text.splitlines()
    if len(lines) > 1:
        second = lines[1]
        n = len(second) - len(second.lstrip(" "))
        return n or None
    return None


def restamp(path):
    """Add a block to ``path`` where it lacks one; returns True when the file changed."""
    text = path.read_text()
    obj = json.loads(text)
    changed = False
    if isinstance(obj, dict):
        if "provenance" not in obj:
            obj["provenance"] = restamp_block(obj, path)
            changed = True
    elif isinstance(obj, list):
        for item in obj:
            if isinstance(item, dict) and "provenance" not in item:
                item["provenance"] = restamp_block(item, path)
                changed = True
    if changed:
        out = json.dumps(obj, indent=_indent(text))
        path.write_text(out + ("\n" if text.endswith("\n") else ""))
    return changed


def missing(root=RESULTS):
    """Results files (or runs of a list file) without a provenance block."""
    bad = []
    for p in results_files(root):
        obj = json.loads(p.read_text())
        items = obj if isinstance(obj, list) else [obj]
        if any(not isinstance(i, dict) or "provenance" not in i for i in items):
            bad.append(p)
    return bad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only list files without a block")
    args = ap.parse_args(argv)
    if args.check:
        bad = missing()
        for p in bad:
            print(p.relative_to(ROOT))
        return 1 if bad else 0
    n = 0
    for p in results_files():
        if restamp(p):
            n += 1
            print(f"re-stamped {p.relative_to(ROOT)}")
    print(f"{n} file(s) re-stamped; {len(results_files())} results files in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
