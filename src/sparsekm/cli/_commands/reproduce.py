"""``sparsekm reproduce``: rerun the papers' tables."""

from __future__ import annotations

import sys
from pathlib import Path

from .._io import usage_error
from .._options import add_command

#: ``<checkout>``, if sparsekm runs from a source checkout: this file is
#: ``<checkout>/src/sparsekm/cli/_commands/reproduce.py``
_CHECKOUT = Path(__file__).resolve().parents[4]


def checkout_docs():
    """The ``docs/`` folder of the source checkout sparsekm runs from, or None.

    Found from the package's own location (``<checkout>/src/sparsekm``), never from the
    working directory: an installed sparsekm has no checkout and gets None.
    """
    root = _CHECKOUT
    if (root / "pyproject.toml").is_file() and (root / "docs").is_dir() and \
            (root / "src" / "sparsekm").is_dir():
        return root / "docs"
    return None


def _reproduce_paths(args, run_all_names):
    """Figures folder and results file: under --out, else under the checkout's docs/."""
    results_path = args.write_results
    if args.out is not None:
        out = Path(args.out)
        if results_path is None and run_all_names:
            results_path = str(out / "results.md")
    else:
        docs = checkout_docs()
        if docs is None:
            raise SystemExit(usage_error(
                "reproduce writes figures and a results file: pass --out DIR (sparsekm is not "
                "running from its source checkout, whose docs/ would be the default)"))
        out = docs / "figures"
        if results_path is None and run_all_names:
            results_path = str(docs / "results.md")
    if results_path == "-":
        results_path = None
    return out, results_path


def _uses_table_options(name):
    """Whether reproduction ``name`` reads ``--datasets`` and ``--seeds`` (Wu et al.'s
    tables, :mod:`sparsekm.reproduce.wu2006`)."""
    return name.startswith("wu-table")


def cmd_reproduce(args):
    from pathlib import Path

    from ...reproduce import Context, discover
    from ...reproduce._report import run_all, write_results

    registry = discover()
    names = args.names
    if not names or names == ["list"]:
        if not registry:
            print("no reproductions are available yet")
        for entry in registry.values():
            slow = " (slow)" if entry.slow else ""
            print(f"{entry.name:<28}{entry.description}{slow}")
        return 0
    run_all_names = names == ["all"]
    if run_all_names:
        names = list(registry)
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise SystemExit(usage_error(f"unknown reproduction(s): {', '.join(unknown)}; "
                                     f"run 'sparsekm reproduce list'"))
    skipped = [n for n in names if registry[n].slow] if args.skip_slow else []
    names = [n for n in names if n not in skipped]
    out, results_path = _reproduce_paths(args, run_all_names)
    if args.no_cache and args.cached_only:
        raise SystemExit(usage_error("--no-cache and --cached-only exclude each other"))
    if args.seeds < 1:
        raise SystemExit(usage_error(f"--seeds must be at least 1; got {args.seeds}"))
    if not any(_uses_table_options(n) for n in names):
        for opt, given in (("--datasets", args.datasets), ("--seeds", args.seeds != 3)):
            if given:
                raise SystemExit(usage_error(
                    f"{opt} applies to the Wu et al. tables (wu-table1, wu-table2, "
                    f"wu-table3); {', '.join(names) or 'nothing'} would ignore it"))
    datasets = None
    if args.datasets:
        from ...reproduce.wu2006 import COLUMNS

        datasets = tuple(d.strip() for d in args.datasets.split(",") if d.strip())
        bad = [d for d in datasets if d not in COLUMNS]
        if bad:
            raise SystemExit(usage_error(f"unknown data set(s) for --datasets: "
                                         f"{', '.join(bad)}; choose from {', '.join(COLUMNS)}"))
    cache = args.cache
    if cache is None:
        repo_cache = (_CHECKOUT / "benchmarks" / "results"
                      / "slmc_reproduction_cache.json")
        cache = repo_cache if repo_cache.parent.is_dir() else None
    ctx = Context(out_dir=Path(out), seed=args.seed, data_path=args.data, quick=args.quick,
                  progress=not args.quiet, cache_path=None if cache is None else Path(cache),
                  no_cache=args.no_cache, cached_only=args.cached_only, datasets=datasets,
                  seeds=args.seeds)
    if args.render_only and not results_path:  # refused before anything is made
        raise SystemExit(usage_error("--render-only needs --write-results FILE or 'all'"))
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    if skipped:
        print(f"--skip-slow: not re-running {', '.join(skipped)}"
              + (f" (their sections in {results_path} are kept)" if results_path else ""))
    if args.render_only:
        write_results(results_path, registry, {}, mark_kept=False)
        print(f"re-rendered {results_path} from the modules' section texts (nothing re-run)")
        return 0
    _, seconds, failed = run_all(registry, names, ctx, results_path=results_path,
                                 keep_going=not args.debug, mark_kept=bool(skipped))
    print(f"sparsekm reproduce: {len(names)} reproduction(s) in {seconds:.0f} s"
          + (f" ({len(skipped)} slow one(s) skipped)" if skipped else ""))
    if results_path:
        print(f"wrote {results_path}")
    if failed:
        print(f"sparsekm: error: {len(failed)} reproduction(s) failed: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


def add_parser(parser):
    """Register ``sparsekm reproduce`` (its options and handler) on ``parser``."""
    p = add_command(parser, "reproduce",
                    "rerun the papers' tables: 'list', NAME... or 'all' (writes docs/results.md "
                    "and every figure into docs/figures)")
    p.add_argument("names", nargs="*", help="reproduction names, 'list' or 'all'")
    p.add_argument("--out", default=None,
                   help="folder for figures (and, for 'all', results.md). Default: the "
                        "checkout's docs/figures and docs/results.md when sparsekm runs from "
                        "its source checkout; required otherwise (never the working "
                        "directory)")
    p.add_argument("--quick", action="store_true", help="smaller, faster variant where available")
    p.add_argument("--skip-slow", action="store_true",
                   help="do not re-run the tables marked slow; keep their sections of the "
                        "results file, marked '(not re-run)'")
    p.add_argument("--render-only", action="store_true",
                   help="re-render the results file from the modules' section texts without "
                        "running anything")
    p.add_argument("--write-results", metavar="FILE", default=None,
                   help="update FILE with the sections of the reproductions run, keeping the "
                        "others (default for 'all': results.md beside --out's figures folder "
                        "in the checkout's docs/, or OUT/results.md; '-' to write nothing)")
    p.add_argument("--no-cache", action="store_true",
                   help="recompute every cached cell (Wu et al. tables) instead of reading the "
                        "cache; the fresh cells are still written to it")
    p.add_argument("--cached-only", action="store_true",
                   help="compute no cell: show 'n/a' for cells without a cache entry for "
                        "today's code, parameters and seed")
    p.add_argument("--cache", metavar="FILE", default=None,
                   help="the keyed cell cache (default: benchmarks/results/"
                        "slmc_reproduction_cache.json in a source checkout, else "
                        "OUT/slmc_cache.json)")
    p.add_argument("--datasets", default=None,
                   help="comma-separated data sets: run the Wu et al. tables for these columns "
                        "only (a long run in pieces; e.g. banana,titanic)")
    p.add_argument("--seeds", type=int, default=3,
                   help="Wu et al. tables: average every seeded cell (RS, MRS, RSVM, MRSVM, "
                        "SLMC, SKFD) over this many seeds, SEED, SEED+1, ... (default 3), "
                        "and show their spread")
    p.set_defaults(func=cmd_reproduce)
