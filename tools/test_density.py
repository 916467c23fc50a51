"""Test density: collected test items of the default run per 100 source lines, per area.

The package is split into the 19 areas of ``AREAS`` below. Each area names

* its **source**: paths relative to ``src/sparsekm`` (a file, or a folder ending in
  ``/`` that takes every ``.py`` file under it); every module of the package belongs to
  exactly one area (``tests/test_tools_density.py`` checks this);
* its **tests**: ``fnmatch`` patterns for file names in ``tests/``. A test file belongs to
  the area of its *longest* matching pattern (so ``test_reduced_set_models.py``, listed
  under ``models``, is not counted by ``reduced_set``'s ``test_reduced_set_*.py``); a tie
  is an error. Test files of the whole house (layering, documentation links, benchmark
  smoke runs) are listed in ``HOUSE`` and counted in no area; any other test file that no
  pattern matches is an error, so a new test file must be named after its area.

**Source lines** are physical lines (``wc -l``: docstrings, comments and blank lines
included) of every ``.py`` file of the area. **Items** are the test items of the default
selection as ``pytest --collect-only -q tests`` lists them (``pyproject.toml``'s
``addopts``: ``-m 'not slow'``, so slow items are not counted); the doctests of
``src/sparsekm`` (33 items on 588b525) are not counted in any area. These are the
definitions of the CHANGELOG's earlier measurement (issue 35, part two), whose numbers the
mapping reproduces for plotting, reproduce, reduced_set and compress.

Usage::

    PYTHONPATH=src python tools/test_density.py            # collects, prints the table
    python tools/test_density.py --collected co.txt        # from a saved collect output
    python tools/test_density.py --root /tmp/old-checkout  # another checkout's tree

The median is taken over the 19 areas' densities (the mean of the two middle ones for an
even count). ``--subjects a,b,...`` also prints the median of the *other* areas: raising
areas that sit below the median raises the median itself (with 19 areas, every one of a
group of subjects can sit at or above the median of all 19 only if each is above the
areas that would otherwise fill the places below the middle), so the level of the rest
of the library is the target that does not move with the subjects. Nothing here reads a
clock or the network.
"""

from __future__ import annotations

import argparse
import fnmatch
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: area -> (source paths under ``src/sparsekm``, test-file patterns under ``tests/``).
AREAS = {
    "foundation": (("__init__.py", "_version.py", "_constraints.py", "_provenance.py",
                    "_apidoc.py", "config.py", "direct.py", "utils/"),
                   ("test_provenance.py", "test_apidoc.py", "test_robustness_foundation.py",
                    "test_solver_restarts.py", "test_validation*.py")),
    "kernels": (("backend.py", "kernels/"),
                ("test_kernels*.py", "test_engine*.py", "test_backend*.py",
                 "test_torch_solvers.py")),
    "expansion": (("expansion.py", "convert.py"), ("test_expansion.py",)),
    "geometry": (("geometry.py",), ("test_geometry*.py",)),
    "preimage": (("preimage.py",), ("test_preimage*.py",)),
    "reduced_set": (("reduced_set/",),
                    ("test_reduced_set.py", "test_reduced_set_*.py",
                     "test_construction_orthogonal.py")),
    "approx": (("approx/",),
               ("test_approx*.py", "test_greedy_basis*.py", "test_randomized*.py",
                "test_ridge_landmarks.py", "test_dask*.py")),
    "sparse_learning": (("sparse_learning/",), ("test_slmc*.py",)),
    "models": (("models/",),
               ("test_common.py", "test_sklearn_conventions.py", "test_robustness_estimators.py",
                "test_estimator_inputs.py", "test_kernel_pca.py", "test_rvm.py",
                "test_fast_rvm.py", "test_reduced_set_models.py",
                "test_expansion_regressor.py")),
    "multiclass": (("multiclass.py",), ("test_multiclass*.py", "test_fused_predict.py")),
    "persistence": (("persistence.py", "_persistence/"), ("test_persistence*.py",)),
    "interop": (("interop.py",), ("test_interop*.py",)),
    "parallel": (("parallel.py",), ("test_parallel*.py",)),
    "datasets": (("datasets.py", "_data_registry.py", "_fetch.py"),
                 ("test_datasets*.py", "test_fetch*.py", "test_virtual_examples.py")),
    "export": (("c_export.py", "onnx_export.py", "deploy.py", "quantize.py"),
               ("test_c_export*.py", "test_onnx*.py", "test_deploy*.py", "test_quantize*.py")),
    "compress": (("compression/",), ("test_compress*.py",)),
    "cli": (("cli/",), ("test_cli*.py",)),
    "reproduce": (("reproduce/",), ("test_reproduce*.py",)),
    "plotting": (("plotting.py",), ("test_plotting*.py",)),
}

#: Test files of the whole house, counted in no area.
HOUSE = ("test_layering.py", "test_docs_links.py", "test_benchmarks_smoke.py",
         "test_bench_*.py", "test_tools_*.py")


def source_files(root=ROOT):
    """Every ``.py`` file of the package, relative to ``src/sparsekm`` (posix strings)."""
    src = Path(root) / "src" / "sparsekm"
    return sorted(p.relative_to(src).as_posix() for p in src.rglob("*.py"))


def areas_of_source(rel):
    """The areas whose source paths contain the module ``rel`` (one, when the map is right)."""
    return [area for area, (paths, _) in AREAS.items()
            if any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in paths)]


def area_of_test(name):
    """The area of test file ``name`` (longest matching pattern), ``"house"`` or ``None``."""
    if any(fnmatch.fnmatch(name, p) for p in HOUSE):
        return "house"
    matches = [(len(p), area) for area, (_, patterns) in AREAS.items()
               for p in patterns if fnmatch.fnmatch(name, p)]
    if not matches:
        return None
    best = max(length for length, _ in matches)
    winners = {area for length, area in matches if length == best}
    if len(winners) > 1:
        raise ValueError(f"{name} matches areas {sorted(winners)} equally well")
    return winners.pop()


def physical_lines(path):
    with open(path, "rb") as f:
        return f.read().count(b"\n")


def source_lines(root=ROOT):
    """area -> physical lines of its modules; a module in no area or in two is an error."""
    src = Path(root) / "src" / "sparsekm"
    lines = dict.fromkeys(AREAS, 0)
    for rel in source_files(root):
        areas = areas_of_source(rel)
        if len(areas) != 1:
            raise ValueError(f"src/sparsekm/{rel} is in {len(areas)} areas: {areas}")
        lines[areas[0]] += physical_lines(src / rel)
    return lines


def collect(root=ROOT):
    """``pytest --collect-only -q tests`` in ``root`` (the default selection), as text."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "tests"], cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"collection failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def items_per_area(collected):
    """area -> collected items, from ``--collect-only -q`` output (``tests/x.py::name``)."""
    per_file = Counter(line.split("::", 1)[0] for line in collected.splitlines()
                       if line.startswith("tests/") and "::" in line)
    items = dict.fromkeys(AREAS, 0)
    for path, count in per_file.items():
        area = area_of_test(Path(path).name)
        if area is None:
            raise ValueError(f"{path} belongs to no area; name it after one or list it in HOUSE")
        if area != "house":
            items[area] += count
    return items


def table(lines, items):
    """Rows ``(area, lines, items, items per 100 lines)``, and the median density."""
    rows = [(a, lines[a], items[a], 100.0 * items[a] / lines[a]) for a in AREAS]
    return rows, statistics.median(r[3] for r in rows)


def median_of_others(rows, subjects):
    """The median density of the areas not in ``subjects`` (unknown names are an error)."""
    unknown = sorted(set(subjects) - set(AREAS))
    if unknown:
        raise ValueError(f"unknown area(s) {unknown}; the areas are {list(AREAS)}")
    return statistics.median(r[3] for r in rows if r[0] not in subjects)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to measure")
    parser.add_argument("--collected", type=Path,
                        help="saved `pytest --collect-only -q tests` output to use")
    parser.add_argument("--subjects", default="",
                        help="comma-separated areas: also print the median of the others")
    args = parser.parse_args(argv)
    subjects = [s.strip() for s in args.subjects.split(",") if s.strip()]
    collected = (args.collected.read_text() if args.collected else collect(args.root))
    rows, median = table(source_lines(args.root), items_per_area(collected))
    print("| area | source lines | items | per 100 lines |")
    print("|---|---|---|---|")
    for area, n_lines, n_items, density in sorted(rows, key=lambda r: r[3]):
        print(f"| {area} | {n_lines:,} | {n_items} | {density:.1f} |")
    print(f"median over {len(rows)} areas: {median:.2f} items per 100 lines")
    if subjects:
        others = median_of_others(rows, subjects)
        print(f"median over the {len(rows) - len(subjects)} areas other than "
              f"{', '.join(subjects)}: {others:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
