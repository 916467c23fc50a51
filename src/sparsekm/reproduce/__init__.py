"""Paper reproductions, run with ``sparsekm reproduce NAME`` (or ``all``).

Each module in this package registers one or more reproductions with
:func:`register`. A reproduction is a function ``run(ctx) -> Result`` that
prints nothing itself; the CLI prints the returned table (ours beside the
paper's) and the paths of the figures it wrote.

A module also declares ``SECTION = Section(...)``: the title, the setting
paragraph(s) and the order of its part of ``docs/results.md``. Everything in
that file comes from the modules -- the section texts, each result's table,
notes and figures, and the "targets: ours vs paper, met?" summary built from
every :class:`Target` a result reports -- so ``sparsekm reproduce all``
regenerates it (see :mod:`sparsekm.reproduce._report`).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["register", "REGISTRY", "Result", "Context", "Target", "Section", "discover",
           "published_cell", "PRINTED_DECIMALS", "printed_decimals"]

#: The decimals a paper prints in a table, where its values lose them as floats (1.60 is
#: stored as 1.6): ``{table: {cell-name suffix: decimals}}``, filled by the modules that
#: reproduce the table. The scoreboard rounds ours to these, so that Ringnorm's 1.63
#: against the paper's 1.60 is worse, not a tie of 1.6 with 1.6 (issue 38).
PRINTED_DECIMALS: dict = {}


def printed_decimals(cell):
    """The decimals the paper prints for ``cell`` (a :func:`published_cell` record): its
    ``paper_decimals``, else :data:`PRINTED_DECIMALS`' entry for its table, else None."""
    if cell.get("paper_decimals") is not None:
        return int(cell["paper_decimals"])
    for suffix, decimals in PRINTED_DECIMALS.get(cell.get("table"), {}).items():
        if str(cell.get("cell", "")).endswith(suffix):
            return decimals
    return None


def published_cell(table, cell, ours, paper, reason=None, *, spread=None, note=None,
                   higher_is_better=False, paper_decimals=None):
    """One published cell of a paper's table for the fidelity scoreboard.

    ``ours`` is ``None`` when the cell is not reproduced; ``reason`` then says why.
    Lower is better (test errors, numbers of vectors) unless ``higher_is_better``.
    ``spread``: ``(lo, hi)``, the range of the per-seed means when ``ours`` is a mean over
    seeds (judged against it: :func:`~sparsekm.reproduce._report.classify`); ``note``:
    the evidence shown when the cell is much worse than the paper; ``paper_decimals``: the
    decimals the paper prints ``paper`` with, where the float loses them (1.60).
    """
    if ours is not None and hasattr(ours, "item"):
        ours = ours.item()
    out = {"table": table, "cell": cell, "ours": ours, "paper": paper,
           "reason": None if ours is not None else (reason or "not run")}
    if spread is not None:
        out["spread"] = [float(spread[0]), float(spread[1])]
    if note:
        out["note"] = note
    if higher_is_better:
        out["higher_is_better"] = True
    if paper_decimals is None:
        paper_decimals = printed_decimals(out)
    if paper_decimals is not None:
        out["paper_decimals"] = int(paper_decimals)
    return out


@dataclass
class Context:
    """What a reproduction may use: output folder, seed, data folder, verbosity.

    ``cache_path`` is the keyed cell cache (:mod:`sparsekm.reproduce._cache`;
    ``None``: ``<out_dir>/slmc_cache.json``); ``no_cache`` recomputes every
    cell (still writing the fresh ones); ``cached_only`` computes nothing and
    shows "n/a" for cells without an entry for today's code; ``datasets``
    restricts the Wu et al. tables to these columns (a long run in pieces); ``seeds``:
    the number of seeds (``seed``, ``seed + 1``, ...) each seeded cell of the Wu et al.
    tables is averaged over (reduced-set, MRS, RSVM, MRSVM, SLMC, SKFD cells).
    """

    out_dir: Path = Path("figures")
    seed: int = 0
    data_path: str | None = None
    quick: bool = False
    progress: bool = True
    cache_path: Path | None = None
    no_cache: bool = False
    cached_only: bool = False
    datasets: tuple | None = None
    seeds: int = 3


@dataclass
class Target:
    """One row of a section's summary: a target of the issue, ours beside the paper's.

    ``met`` is True/False, None (no verdict, e.g. qualitative) or a short text
    ("yes with sweeps").
    """

    target: str
    ours: str
    paper: str = "-"
    met: bool | str | None = None

    def verdict(self):
        if self.met is True:
            return "yes"
        if self.met is False:
            return "**no**"
        return "-" if self.met is None else str(self.met)


@dataclass
class Result:
    """A reproduction's outcome: a Markdown table with ours beside the paper's.

    Parameters
    ----------
    name, title : str
        Registry name and the heading in ``docs/results.md``.
    table : str
        Markdown (one or more tables, sub-headings allowed).
    notes : list of str
        Bullets after the table: setting, protocol, differences from the paper.
    figures : list of path
        Figures written to ``ctx.out_dir``.
    seconds : float, optional
        Run time; set by the runner.
    intro : str
        A paragraph before the table.
    targets : list of Target
        Rows for the section's "targets: ours vs paper, met?" summary.
    data : dict
        JSON-serialisable raw numbers kept in ``docs/results.md`` (hidden), so a
        section's cross-result summary can be rebuilt without re-running.
        ``data["cells"]``: the published cells for the fidelity scoreboard, each
        ``{"table", "cell", "ours", "paper", "reason"}`` (``ours`` ``None`` with a
        ``reason`` when not reproduced; lower is better).
    provenance : str
        Where the numbers come from when not all were computed in this run
        (e.g. "40 of 54 cells from the cache, computed ... with code key ...").
    """

    name: str
    title: str
    table: str
    notes: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    seconds: float | None = None
    intro: str = ""
    targets: list[Target] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    provenance: str = ""

    def to_markdown(self):
        lines = [f"## {self.title} (`sparsekm reproduce {self.name}`)", ""]
        if self.intro:
            lines += [self.intro, ""]
        lines += [self.table, ""]
        lines += [f"- {n}" for n in self.notes]
        if self.provenance:
            lines.append(f"- Cells: {self.provenance}.")
        if self.seconds is not None:
            lines.append(f"- Run time: {self.seconds:.0f} s on this machine.")
        for f in self.figures:
            lines.append(f"- Figure: `{f}`")
        if self.targets:
            lines += ["", "| target | ours | paper | met? |", "|---|---|---|---|"]
            lines += [f"| {t.target} | {t.ours} | {t.paper} | {t.verdict()} |"
                      for t in self.targets]
        return "\n".join(lines) + "\n"


@dataclass
class Section:
    """One part of ``docs/results.md``: the reproductions of one paper / issue.

    Parameters
    ----------
    title : str
        ``## `` heading.
    intro : str
        Markdown before the summary table: paper, setting, commands.
    outro : str or callable
        Markdown after the results; a callable gets ``{name: record}`` (each
        record has ``targets``, ``data``, ``seconds``; see ``_report.Record``)
        for summaries across the section's results.
    targets : callable, optional
        ``targets() -> list of Target`` for targets not measured by a
        reproduction (e.g. read from ``benchmarks/results/*.json``).
    order : int
        Position in the file (sections sorted by it).
    table_notes : callable, optional
        ``table_notes({name: record}) -> {published table: note}``: the evidence shown
        in the fidelity scoreboard for a cell of that table much worse than the paper
        (when the cell has no ``"note"`` of its own), built from the records' data so that
        it is measured, not typed.
    """

    title: str
    intro: str = ""
    outro: str | Callable = ""
    targets: Callable | None = None
    order: int = 100
    table_notes: Callable | None = None


@dataclass
class _Entry:
    name: str
    description: str
    func: object
    slow: bool = False
    module: str = ""
    section: Section | None = None


REGISTRY: dict[str, _Entry] = {}


def register(name, description, slow=False, section=None):
    """Decorator registering ``func(ctx) -> Result`` as reproduction ``name``.

    ``slow=True`` marks a table that takes minutes: ``reproduce all --skip-slow``
    keeps its previous section instead of re-running it. ``section`` defaults to
    the module's ``SECTION``.
    """

    def deco(func):
        REGISTRY[name] = _Entry(name, description, func, slow, func.__module__, section)
        return func

    return deco


def section_of(entry):
    """The :class:`Section` of a registered entry (its module's ``SECTION``)."""
    if entry.section is None:
        entry.section = getattr(sys.modules.get(entry.module), "SECTION", None)
    return entry.section


#: Deprecated aliases of renamed modules (they hold no reproduction of their own).
_ALIASES = frozenset({"slmc"})


def discover():
    """Import every module of this package so that its reproductions register."""
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_") and mod.name not in _ALIASES:
            importlib.import_module(f"{__name__}.{mod.name}")
    return REGISTRY
