"""Numbers in the docs' prose, generated from the results file like its tables.

A number that a page quotes from ``docs/results.md`` is written between markers::

    USPS: <!--g:rs2_25_factor-->20.2×<!--/g--> fewer kernel evaluations at ...

:func:`update_generated` replaces the text between ``<!--g:NAME-->`` and ``<!--/g-->``
with :func:`generated_values`' ``NAME``, computed from the records of the results file
(their published cells and the rows of their tables). ``sparsekm reproduce`` rewrites
``docs/index.md`` beside the results file it writes, so that the guide cannot go stale
(issue 38: three rows of "Which method should I use?" contradicted the results).
A name the results do not give (a reproduction not run yet) leaves its text as it is.
"""

from __future__ import annotations

import re

__all__ = ["generated_values", "update_generated", "MARKER"]

#: ``<!--g:NAME-->text<!--/g-->``
MARKER = re.compile(r"<!--g:([a-z0-9_]+)-->(.*?)<!--/g-->", re.S)

#: Wu et al.'s Table 1 columns in the order the guide quotes them
_WU_COLUMNS = ("USPS", "Banana", "Breast Cancer", "Titanic", "Waveform", "German", "Image")


def _row(block, label):
    """The cells of the markdown table row of ``block`` whose first cell is ``label``."""
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells and cells[0] == label:
            return cells
    return None


def _percent(text):
    """The first percentage in ``text`` ("5.38% / 4.7%" -> 5.38)."""
    m = re.search(r"([0-9.]+)\s*%", text)
    return float(m.group(1)) if m else None


def _cells(record):
    data = record.data if isinstance(record.data, dict) else {}
    return {c["cell"]: c for c in data.get("cells", []) if isinstance(c, dict) and "cell" in c}


def generated_values(records):
    """``{name: text}`` for the numbers the docs quote, from parsed results ``records``
    (:func:`sparsekm.reproduce._report.parse_results`). Missing sources give no entry."""
    out = {}
    rs = records.get("usps-rs-construct")
    if rs is not None:
        full, rs2 = _row(rs.block, "SV (original SVM; paper SV-254)"), _row(rs.block, "RS2-25")
        if full and rs2:
            out["usps_svm_error"] = f"{_percent(full[-3]):.2f} %"
            out["rs2_25_factor"] = rs2[2].replace("x", "×")
            out["rs2_25_error"] = f"{_percent(rs2[-3]):.2f} %"
        equal = next(([c.strip() for c in ln.strip().strip("|").split("|")]
                      for ln in rs.block.splitlines() if ln.startswith("| RS2-25 (")), None)
        if equal:  # "| RS2-25 (10.2x) | 4.7% | 5.38% (n = 25) | 4.73% (n = 50) |"
            m = re.search(r"\(([0-9.]+)x\)", equal[0])
            n = re.search(r"n = (\d+)", equal[-1])
            if m and n:
                out["rs2_equal_factor"] = f"{float(m.group(1)):.0f}×"
                out["rs2_equal_n"] = n.group(1)
                out["rs2_equal_error"] = f"{_percent(equal[-1]):.2f} %"
    sel = records.get("usps-rs-select-kpca")
    if sel is not None:
        row = _row(sel.block, "RSS-250 (exact greedy)")
        if row:
            out["exact_greedy_factor"] = row[2].replace("x", "×").replace(".0×", "×")
            out["exact_greedy_error"] = f"{_percent(row[-3]):.2f} %"
    wu = records.get("wu-table1")
    if wu is not None:
        cells = _cells(wu)
        diffs = {}
        for col in _WU_COLUMNS:
            slmc, svm = cells.get(f"{col} 10% SLMC"), cells.get(f"{col} SVM error")
            if slmc and svm and slmc.get("ours") is not None and svm.get("ours") is not None:
                diffs[col] = round(float(slmc["ours"]) - float(svm["ours"]), 1) + 0.0
        if len(diffs) == len(_WU_COLUMNS):
            out["slmc10_max_gap"] = f"{max(abs(d) for d in diffs.values()):.1f}"
            out["slmc10_gaps"] = ", ".join(f"{c} {d:+.1f}" for c, d in diffs.items())
    return out


def update_generated(text, values):
    """``text`` with every marker's content replaced by its value (unknown names kept)."""
    def sub(m):
        name = m.group(1)
        value = values.get(name)
        return m.group(0) if value is None else f"<!--g:{name}-->{value}<!--/g-->"

    return MARKER.sub(sub, text)
