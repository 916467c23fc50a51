"""Run reproductions and (re)write ``docs/results.md`` from them.

The results file is generated, never edited by hand. Each reproduction owns
one block between ``<!-- sparsekm:begin NAME -->`` and ``<!-- sparsekm:end
NAME -->``; the block ends with a hidden JSON record (targets, raw data, run
time) so that a later run that does not re-run the reproduction (``--skip-slow``,
or a run of only some names) keeps the block verbatim, marks it "(not re-run)"
and still lists its targets in the section's summary table. Section titles,
setting paragraphs and summaries come from each module's ``SECTION``.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import Result, Section, Target, section_of
from ._cache import CellCache, run_commit

__all__ = ["Record", "parse_results", "render_results", "write_results", "run_all", "scoreboard",
           "run_times", "pinned_threads", "figure_link", "classify", "much_worse"]

NOT_RERUN = "(not re-run)"
_BEGIN = re.compile(r"^<!-- sparsekm:begin (\S+) -->$", re.M)
_RECORD = re.compile(r"^<!-- sparsekm:record (\{.*\}) -->$", re.M)
_OTHER = Section(title="Other reproductions", order=10_000)


@dataclass
class Record:
    """A reproduction's block in the results file, fresh or kept from the file."""

    name: str
    block: str
    targets: list[Target] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    seconds: float | None = None
    rerun: bool = True
    quick: bool = False
    #: recorded compute time of the cells this run took from the cell cache (see
    #: :meth:`~sparsekm.reproduce._cache.CellCache.cached_seconds`)
    cached_seconds: float = 0.0
    date: str = ""


def _json_comment(obj):
    # '>' escaped so the JSON can never close the HTML comment.
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, default=_jsonable).replace(
        ">", "\\u003e")


def _jsonable(obj):
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    return str(obj)


def _fmt_seconds(s):
    if s is None:
        return "unknown"
    if s < 120:
        return f"{s:.0f} s"
    return f"{s:.0f} s ({s / 60:.1f} min)"


def _demote(markdown):
    """Headings inside a result sit below its ``###`` heading: at least ``####``."""
    return re.sub(r"^#{1,3} ", "#### ", markdown, flags=re.M)


def command_line(name, ctx):
    cmd = f"sparsekm reproduce {name}"
    if ctx.quick:
        cmd += " --quick"
    if ctx.seed != 0:
        cmd += f" --seed {ctx.seed}"
    if getattr(ctx, "no_cache", False):
        cmd += " --no-cache"
    if getattr(ctx, "cached_only", False):
        cmd += " --cached-only"
    if name.startswith("wu-table"):  # the options only Wu et al.'s tables read
        if getattr(ctx, "datasets", None):
            cmd += f" --datasets {','.join(ctx.datasets)}"
        if getattr(ctx, "seeds", 3) != 3:
            cmd += f" --seeds {ctx.seeds}"
    return cmd


#: Threads every reproduction runs with (BLAS, OpenMP and sparsekm's own pool): a
#: fixed count, so that no result depends on the machine's core count or load.
REPRODUCE_THREADS = 1


@contextlib.contextmanager
def pinned_threads(n=REPRODUCE_THREADS):
    """Pin BLAS/OpenMP (threadpoolctl) and sparsekm's engine to ``n`` threads."""
    from threadpoolctl import threadpool_limits

    from ..config import config_context

    with threadpool_limits(limits=n), config_context(n_threads=n):
        yield


def run_one(entry, ctx):
    """Run one reproduction with pinned threads and seeded global random state."""
    import random

    import numpy as np

    random.seed(ctx.seed)
    np.random.seed(ctx.seed % 2**32)  # noqa: NPY002 -- legacy global state, for libraries using it
    with pinned_threads():
        return entry.func(ctx)


def figure_link(fig, results_dir):
    """The link to figure ``fig`` written into a results file in ``results_dir``.

    Relative to ``results_dir`` (``figures/x.png`` for ``docs/results.md`` and
    ``--out docs/figures``), from the paths as given (symbolic links are not resolved,
    so a link never names the folder another checkout happens to live in). A figure
    outside ``results_dir`` (figures written into another checkout, or to another
    drive) is linked as ``<its folder's name>/<file>``, the layout beside the results
    file, never as ``../..`` into a folder that exists only on this machine.
    """
    fig, results_dir = Path(os.path.abspath(fig)), Path(os.path.abspath(results_dir))
    try:
        rel = Path(os.path.relpath(fig, results_dir)).as_posix()
    except ValueError:  # another drive (Windows)
        rel = "../"
    if rel.startswith("../"):
        rel = f"{fig.parent.name}/{fig.name}"
    return rel


def record_from_result(res: Result, ctx, results_dir, date=None):
    """Render a fresh :class:`Result` as its block."""
    date = date or datetime.date.today().isoformat()
    title = res.title + (" (--quick: smoke-test sizes, not comparable to the paper)"
                         if ctx.quick else "")
    commit = run_commit()
    at = f" at commit {commit}" if commit else ""
    when = f"run time {_fmt_seconds(res.seconds)} · {date}{at}"
    if res.provenance:  # cached cells: say where they come from, not "0 s" and today's date
        when = f"{res.provenance}; this run {_fmt_seconds(res.seconds)} on {date}{at}"
    lines = [f"<!-- sparsekm:begin {res.name} -->", f"### {title}", "",
             f"Command: `{command_line(res.name, ctx)}` · {when}", ""]
    if res.intro:
        lines += [_demote(res.intro.strip()), ""]
    lines += [_demote(res.table.strip()), ""]
    if res.notes:
        lines += [f"- {n}" for n in res.notes] + [""]
    for fig in res.figures:
        lines.append(f"![{Path(fig).stem}]({figure_link(fig, results_dir)})")
    if res.figures:
        lines.append("")
    payload = {"targets": [t.__dict__ for t in res.targets], "data": res.data,
               "seconds": res.seconds, "date": date, "quick": bool(ctx.quick), "seed": ctx.seed,
               "provenance": res.provenance}
    lines += [f"<!-- sparsekm:record {_json_comment(payload)} -->",
              f"<!-- sparsekm:end {res.name} -->"]
    return Record(res.name, "\n".join(lines), list(res.targets), dict(res.data), res.seconds,
                  True, bool(ctx.quick), CellCache.cached_seconds(res.provenance), date)


def parse_results(text):
    """``{name: Record}`` of every block in a results file (``rerun=False``).

    Placeholders of reproductions never run (no hidden record) are skipped.
    """
    out = {}
    for m in _BEGIN.finditer(text):
        name = m.group(1)
        end = text.find(f"<!-- sparsekm:end {name} -->", m.end())
        if end < 0:
            continue
        block = text[m.start():end + len(f"<!-- sparsekm:end {name} -->")]
        rec = _RECORD.search(block)
        if rec is None:  # a "not run yet" placeholder
            continue
        try:
            payload = json.loads(rec.group(1))
        except json.JSONDecodeError:
            payload = {}
        targets = [Target(**t) for t in payload.get("targets", [])
                   if isinstance(t, dict) and {"target", "ours"} <= set(t)]
        out[name] = Record(name, block, targets, payload.get("data") or {},
                           payload.get("seconds"), False, bool(payload.get("quick")),
                           CellCache.cached_seconds(payload.get("provenance")),
                           str(payload.get("date") or ""))
    return out


def _kept(record, mark=True):
    """The kept block with its heading marked "(not re-run)" (once)."""
    if not mark:
        return record.block
    lines = record.block.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("### "):
            if NOT_RERUN not in line:
                lines[i] = f"{line} {NOT_RERUN}"
            break
    return "\n".join(lines)


def _placeholder(entry):
    return "\n".join([f"<!-- sparsekm:begin {entry.name} -->",
                      f"### {entry.description} (not run yet)", "",
                      f"Run `sparsekm reproduce {entry.name}` to fill this section.",
                      f"<!-- sparsekm:end {entry.name} -->"])


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _fmt_num(v):
    if v is None:
        return "-"
    if isinstance(v, float) and not float(v).is_integer():
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{v:g}" if isinstance(v, float) else str(v)


def _decimals(paper):
    """Decimals the paper prints ``paper`` with: 0 for an int, else those of its repr."""
    if isinstance(paper, (int, np.integer)) and not isinstance(paper, bool):
        return 0
    text = repr(float(paper))
    return 0 if "e" in text else len(text.split(".")[1])


#: "Much worse than the paper": more than this many points worse (cells in %) ...
MUCH_WORSE_POINTS = 1.0
#: ... or more than this fraction worse (every cell).
MUCH_WORSE_RELATIVE = 0.20


def classify(cell):
    """``"better"``, ``"tie"`` or ``"worse"``: ours against the paper at the paper's precision.

    ``cell``: ``{"ours", "paper"}`` and optionally ``"spread": [lo, hi]`` (the range of
    the per-seed means) and ``"higher_is_better"`` (default lower is better: errors,
    counts). Without a spread, ours is rounded to the decimals the paper prints: equal
    after rounding is a tie, never "at least as good". With a spread, the paper's value
    inside the rounded range ``[lo, hi]`` is a tie ("within the seed spread"); better or
    worse means every seed's mean is.
    """
    from . import printed_decimals

    paper = float(cell["paper"])
    p = printed_decimals(cell)
    p = _decimals(cell["paper"]) if p is None else p
    eps = 0.5 * 10.0 ** -(p + 3)
    spread = cell.get("spread")
    lo, hi = (spread if spread else (cell["ours"], cell["ours"]))
    lo, hi = round(float(lo), p), round(float(hi), p)
    if cell.get("higher_is_better"):
        lo, hi, paper = -hi, -lo, -paper
    if hi < paper - eps:
        return "better"
    if lo > paper + eps:
        return "worse"
    return "tie"


def _is_percent(cell):
    name = str(cell.get("cell", "")).lower()
    return "%" in name or "error" in name or "err" in name


def much_worse(cell):
    """Worse than the paper (:func:`classify`) by more than 1 point (cells in %) or by
    more than 20 % of the paper's value."""
    if cell.get("ours") is None or classify(cell) != "worse":
        return False
    diff = float(cell["ours"]) - float(cell["paper"])
    if cell.get("higher_is_better"):
        diff = -diff
    rel = diff / max(abs(float(cell["paper"])), 1e-12)
    return rel > MUCH_WORSE_RELATIVE or (_is_percent(cell) and diff > MUCH_WORSE_POINTS)


def _table_notes(registry, records):
    """``{published table: note}`` from every section's ``table_notes(records)``."""
    notes, done = {}, set()
    for entry in registry.values():
        sec = section_of(entry)
        if sec is None or id(sec) in done or getattr(sec, "table_notes", None) is None:
            continue
        done.add(id(sec))
        mine = {e.name: records[e.name] for e in registry.values()
                if section_of(e) is sec and e.name in records}
        for table, note in (sec.table_notes(mine) or {}).items():
            notes.setdefault(table, note)
    return notes


def scoreboard(registry, records):
    """The fidelity scoreboard: per published table, cells published / reproduced / better /
    tie / worse than the paper (:func:`classify`), the worst cell, every cell much worse than
    the paper (:func:`much_worse`) with its note, and every unreproduced cell with its reason.

    Built from ``data["cells"]`` of each record (see :class:`~sparsekm.reproduce.Result`);
    a cell's ``"note"`` (or its section's ``table_notes``) explains a much worse cell.
    """
    tables, seen = {}, set()
    for entry in registry.values():
        rec = records.get(entry.name)
        if rec is None:
            continue
        cells = rec.data.get("cells")
        for c in cells if isinstance(cells, list) else []:
            if not isinstance(c, dict) or not {"table", "cell", "ours", "paper"} <= set(c):
                continue
            key = (c["table"], c["cell"])
            if key in seen or c["paper"] is None:
                continue
            seen.add(key)
            t = tables.setdefault(c["table"], {"cells": [], "from": [], "quick": False})
            t["cells"].append(c)
            if entry.name not in t["from"]:
                t["from"].append(entry.name)
            t["quick"] = t["quick"] or rec.quick
    if not tables:
        return ""
    table_notes = _table_notes(registry, records)
    out = ["## Fidelity scoreboard", "",
           "Every published cell of the papers' tables that a reproduction covers (numbers of "
           "test errors, error rates in %, numbers of vectors: lower is better; denoising "
           "ratios: higher is better): how many we reproduced, and whether ours is better, "
           "tied or worse than the paper's. Ours is rounded to the decimals the paper prints: "
           "a cell equal after rounding is a tie. A cell averaged over seeds is judged by the "
           "range of its per-seed means: the paper's value inside that range is a tie "
           "(\"within the seed spread\"). Worst cell: the largest excess over the paper's "
           f"value, relative. Much worse: worse by more than {MUCH_WORSE_POINTS:g} point (cells "
           f"in %) or by more than {100 * MUCH_WORSE_RELATIVE:.0f} % of the paper's value; each "
           "is listed below the table with the evidence we have. Generated from the tables "
           "below.", "",
           "| published table | cells | reproduced | better | tie / within seed spread | worse "
           "(much worse) | worst cell (ours vs paper) | from |",
           "|---|---|---|---|---|---|---|---|"]
    missing, much = [], []
    for name in sorted(tables):
        t = tables[name]
        cells = t["cells"]
        done = [c for c in cells if c.get("ours") is not None]
        verdicts = [classify(c) for c in done]
        bad = [c for c in done if much_worse(c)]

        def excess(c):
            d = (float(c["ours"]) - float(c["paper"])) / max(abs(float(c["paper"])), 1e-9)
            return -d if c.get("higher_is_better") else d

        worst = max(done, key=lambda c: (excess(c), c["cell"]), default=None)
        worst_s = "-" if worst is None else (
            f"{worst['cell']}: {_fmt_num(worst['ours'])} vs {_fmt_num(worst['paper'])}")
        src = ", ".join(f"`{n}`" for n in t["from"]) + (" (--quick)" if t["quick"] else "")
        out.append(f"| {name} | {len(cells)} | {len(done)} | {verdicts.count('better')} | "
                   f"{verdicts.count('tie')} | {verdicts.count('worse')} ({len(bad)}) | "
                   f"{_cell(worst_s)} | {src} |")
        by_note = {}
        for c in bad:
            note = c.get("note") or table_notes.get(name) or "no explanation recorded"
            by_note.setdefault(note, []).append(c)
        for note, group in by_note.items():
            listed = ", ".join(f"{c['cell']} ({_fmt_num(c['ours'])} vs {_fmt_num(c['paper'])})"
                               for c in group)
            much.append(f"- {name}, {len(group)} cell{'s' if len(group) > 1 else ''}: "
                        f"{listed}. {note}")
        by_reason = {}
        for c in cells:
            if c.get("ours") is None:
                by_reason.setdefault(c.get("reason") or "not run", []).append(c["cell"])
        for reason in sorted(by_reason):
            names = by_reason[reason]
            missing.append(f"- {name}, {len(names)} cell{'s' if len(names) > 1 else ''} not "
                           f"reproduced: {reason}. Cells: {', '.join(names)}.")
    if much:
        out += ["", "Cells much worse than the paper, with the evidence:", "", *much]
    if missing:
        out += ["", "Cells not reproduced, with the reason:", "", *missing]
    return "\n".join(out)


def run_times(registry, records):
    """The "Run times" section: every reproduction's measured time, the one source for them.

    "From scratch" is the wall time of the run that wrote the block plus the compute time
    recorded for the cells it took from the cell cache (when they were computed); README
    and docs link here instead of quoting times.
    """
    out = ["## Run times", "",
           "Measured by the run that wrote each section (`OMP_NUM_THREADS=1` on a shared "
           "2-core development machine with other jobs running, so indicative only; the "
           "load average is in the \"Last run\" line above). *From scratch* adds, to that "
           "run's wall time, the compute time recorded for the cells it served from the "
           "cell cache (`--no-cache` recomputes them); tables that share cells (Wu et al. "
           "Tables 1 and 3) each count the shared cells, so the total overstates a "
           "from-scratch run of all of them.", "",
           "| reproduction | from scratch | that run | cells from the cache | date |",
           "|---|---|---|---|---|"]
    total = n = 0
    for e in registry.values():
        rec = records.get(e.name)
        if rec is None or rec.seconds is None:
            out.append(f"| `{e.name}` | not run | | | |")
            continue
        scratch = rec.seconds + rec.cached_seconds
        total += scratch
        n += 1
        cached = _fmt_seconds(rec.cached_seconds) if rec.cached_seconds else "-"
        out.append(f"| `{e.name}`{' (--quick)' if rec.quick else ''} | {_fmt_seconds(scratch)} "
                   f"| {_fmt_seconds(rec.seconds)} | {cached} | {rec.date or '-'} |")
    out.append(f"| all {n} of {len(registry)} with a recorded time | **{_fmt_seconds(total)}** "
               "| | | |")
    return "\n".join(out)


def render_results(registry, records, *, run_info="", mark_kept=True):
    """The whole results file from the registry's sections and ``{name: Record}``."""
    groups = {}
    for entry in registry.values():
        sec = section_of(entry) or _OTHER
        groups.setdefault(id(sec), (sec, []))[1].append(entry)
    ordered = sorted(groups.values(), key=lambda g: g[0].order)
    out = ["# Reproduced results", "",
           "<!-- Generated by `sparsekm reproduce all`: do not edit by hand. Texts come from "
           "src/sparsekm/reproduce/*.py (SECTION, Result.notes/targets). -->", "",
           "Ours beside the papers'. Every section below is written by `sparsekm reproduce "
           "all --out docs/figures` from the reproduction modules in "
           "`src/sparsekm/reproduce/`: the setting paragraphs, the tables, the notes and the "
           "\"targets: ours vs paper, met?\" summaries. Slow tables can be skipped with "
           "`--skip-slow`; their sections are then kept from the previous file and marked "
           f"\"{NOT_RERUN}\". Run times were measured on a shared 2-core development machine "
           "with other jobs running (`OMP_NUM_THREADS=1`), so they are indicative only.", ""]
    if run_info:
        out += [run_info, ""]
    out += ["Contents:", ""]
    out += [f"- {sec.title}: " + ", ".join(f"`{e.name}`" + (" (slow)" if e.slow else "")
                                         for e in entries) for sec, entries in ordered]
    out += ["", run_times(registry, records), ""]
    board = scoreboard(registry, records)
    if board:
        out += [board, ""]
    for sec, entries in ordered:
        out += [f"## {sec.title}", ""]
        if sec.intro:
            out += [sec.intro.strip(), ""]
        rows = []
        for e in entries:
            rec = records.get(e.name)
            for t in rec.targets if rec else []:
                src = f"`{e.name}`" + ("" if rec.rerun or not mark_kept else f" {NOT_RERUN}")
                rows.append(f"| {_cell(t.target)} | {_cell(t.ours)} | {_cell(t.paper)} | "
                            f"{_cell(t.verdict())} | {src} |")
        if sec.targets is not None:
            for t in sec.targets():
                rows.append(f"| {_cell(t.target)} | {_cell(t.ours)} | {_cell(t.paper)} | "
                            f"{_cell(t.verdict())} | benchmark |")
        if rows:
            out += ["**Targets: ours vs paper, met?**", "",
                    "| target | ours | paper | met? | from |", "|---|---|---|---|---|", *rows, ""]
        for e in entries:
            rec = records.get(e.name)
            if rec is None:
                out += [_placeholder(e), ""]
            else:
                out += [rec.block if rec.rerun else _kept(rec, mark_kept), ""]
        outro = sec.outro
        if callable(outro):
            outro = outro({e.name: records[e.name] for e in entries if e.name in records})
        if outro:
            out += [outro.strip(), ""]
    return "\n".join(out).rstrip() + "\n"


def write_results(path, registry, fresh, *, run_info=None, mark_kept=True):
    """Merge ``fresh`` records with the blocks already in ``path`` and rewrite it.

    ``run_info=None`` keeps the previous file's "Last run" line; ``mark_kept=False``
    only re-renders the section texts around unchanged blocks (``--render-only``).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    old = parse_results(text)
    if run_info is None:
        m = re.search(r"^Last run: .*$", text, re.M)
        run_info = m.group(0) if m else ""
    records = {name: rec for name, rec in old.items() if name in registry}
    records.update(fresh)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    tmp.write_text(render_results(registry, records, run_info=run_info, mark_kept=mark_kept),
                   encoding="utf-8")
    tmp.replace(path)
    update_docs_prose(path.parent / "index.md", records)
    return records


def update_docs_prose(page, records):
    """Rewrite the generated numbers of ``page`` (:mod:`sparsekm.reproduce._prose`) from
    ``records``; nothing when the page does not exist or nothing changes."""
    from ._prose import generated_values, update_generated

    page = Path(page)
    if not page.is_file():
        return False
    text = page.read_text(encoding="utf-8")
    new = update_generated(text, generated_values(records))
    if new == text:
        return False
    tmp = page.with_suffix(page.suffix + f".{os.getpid()}.tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(page)
    return True


def run_all(registry, names, ctx, *, results_path=None, echo=print, keep_going=True,
            mark_kept=True):
    """Run ``names`` in order; after each, print it and (re)write ``results_path``.

    ``mark_kept`` marks the sections that are kept from the previous file "(not
    re-run)" (``--skip-slow``); a run of some names only keeps the others as they are.

    Returns ``(results, seconds, failed_names)``. The file is rewritten after
    every reproduction so an interrupted run keeps what it finished; with
    ``keep_going`` a failing reproduction is reported and its previous block kept.
    """
    fresh, results = {}, []
    t_start = time.perf_counter()
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    failed = []
    for name in names:
        t0 = time.perf_counter()
        try:
            res = run_one(registry[name], ctx)
        except Exception as exc:
            if not keep_going:
                raise
            # One failing table must not lose the others of a long `reproduce all`.
            failed.append(name)
            echo(f"sparsekm reproduce: {name} failed after {time.perf_counter() - t0:.0f} s: "
                 f"{type(exc).__name__}: {exc}")
            continue
        res.seconds = time.perf_counter() - t0
        results.append(res)
        echo(res.to_markdown())
        if results_path is not None:
            results_dir = Path(results_path).parent
            fresh[name] = record_from_result(res, ctx, results_dir)
            elapsed = time.perf_counter() - t_start
            which = ("all" if len(fresh) == len(registry) else
                     f"{len(fresh)} of {len(registry)}")
            listed = "" if which == "all" else f" ({', '.join(f'`{n}`' for n in fresh)})"
            commit = run_commit()
            info = (f"Last run: {started}"
                    + (f" at commit {commit}" if commit else "")
                    + f", re-ran {which} reproductions{listed} in "
                    f"{_fmt_seconds(elapsed)}"
                    + (f", load average {load:.1f} at the start" if load is not None else "")
                    + f"; seed {ctx.seed}" + (", --quick" if ctx.quick else "") + ".")
            write_results(results_path, registry, fresh, run_info=info, mark_kept=mark_kept)
    return results, time.perf_counter() - t_start, failed
