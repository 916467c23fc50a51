"""What :func:`sparsekm.compress` tried: :class:`CompressReport`, its table and plot,
and :class:`CompressCurve` (the report of models saved by earlier versions).

:meth:`CompressReport.plot` uses matplotlib directly: :mod:`sparsekm.plotting` imports
from here (its ``compress_curve``), never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["CompressReport", "CompressCurve"]

#: Keys of a report row (the file format of ``compress_report_``).
ROW_KEYS = ("method", "variant", "budget", "n_vectors", "val_error", "agreement", "seconds",
            "status", "reason")


def _pct(v):
    return "–" if v is None or not np.isfinite(v) else f"{100 * v:.2f} %"


def _num(v):
    return "–" if v is None or not np.isfinite(v) else f"{v:.3g}"


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path):
    """Save ``fig`` to ``path`` (folders created), close it, return the path as str."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    _plt().close(fig)
    return str(path)


@dataclass
class CompressCurve:
    """The error-budget curve of models saved by earlier versions of :func:`compress`.

    Those models hold it as ``compress_curve_`` (a dictionary;
    :func:`sparsekm.plotting.compress_curve` plots it). :func:`compress` now returns a
    :class:`CompressedClassifier` whose ``compress_report_`` (:class:`CompressReport`)
    replaces it; this class is kept so that such files still load and plot.

    Attributes
    ----------
    n_vectors : list of int
        The ``n_vectors`` parameter of every size walked (per class unless shared), in
        the order walked.
    budget : list of int
        Kernel evaluations per prediction (distinct vectors) of each size.
    error : list of float
        Validation error (fraction) of each size.
    full_error : float
        Validation error of the machine that was compressed.
    full_budget : int
        Its kernel evaluations per prediction.
    target_error : float
        ``full_error + max_error_increase``.
    chosen : int
        Index (into the lists) of the returned model.
    met : bool
        Whether the returned model meets the tolerance (False only when no size
        walked did: then the full-size exact copy is returned).
    search : str
        ``"prefix"`` (one construction, prefixes evaluated) or ``"refit"``.
    """

    n_vectors: list = field(default_factory=list)
    budget: list = field(default_factory=list)
    error: list = field(default_factory=list)
    full_error: float = float("nan")
    full_budget: int = 0
    target_error: float = float("nan")
    chosen: int = -1
    met: bool = False
    search: str = "prefix"

    def sorted(self):
        """``(budget, error)`` arrays sorted by budget (the curve to plot)."""
        order = np.argsort(self.budget, kind="stable")
        return np.asarray(self.budget)[order], np.asarray(self.error)[order]

    def as_dict(self):
        """Plain-Python dictionary (JSON-serialisable)."""
        return {"n_vectors": [int(v) for v in self.n_vectors],
                "budget": [int(v) for v in self.budget],
                "error": [float(v) for v in self.error],
                "full_error": float(self.full_error), "full_budget": int(self.full_budget),
                "target_error": float(self.target_error), "chosen": int(self.chosen),
                "met": bool(self.met), "search": self.search}


class CompressReport(dict):
    """What :func:`compress` tried: a plain dictionary with a table and a plot.

    Keys: ``"mode"`` (``"budget"`` or ``"tolerance"``), ``"budget"`` (requested, or
    the one found), ``"full_error"`` and ``"full_n_vectors"`` (the original machine),
    ``"target_error"`` (tolerance mode), ``"selection"`` (what errors were measured on:
    the validation data or k-fold CV inside the training data), ``"time_limit"`` (NaN:
    none), ``"total_seconds"`` (NaN unless timed: ``compress(timing=True)``, the CLI),
    ``"chosen"`` (row index), ``"messages"`` (list of str: warnings and notes) and
    ``"rows"``: one dict per candidate with ``method``, ``variant`` (e.g. the C chosen),
    ``budget``, ``n_vectors`` (distinct kernel evaluations per prediction),
    ``val_error``, ``agreement`` (fraction of the validation points on which it predicts
    as the original machine), ``seconds`` (build time; NaN unless timed), ``status``
    (``"chosen"``, ``"ok"``, ``"screened"`` (dropped by the screening: its numbers are
    the screening fit's), ``"skipped"``, ``"refused"``, ``"failed"``, ``"reference"``)
    and ``reason``. Missing numbers are NaN. Saved with the model by
    :func:`sparsekm.save` (a loaded model holds the plain dict:
    ``CompressReport(model.compress_report_)``).
    """

    @property
    def rows(self):
        return self.get("rows", [])

    def table(self):
        """The report as text (what ``sparsekm reduce`` prints)."""
        sel = self.get("selection", "validation")
        # a regressor's report (issue 36) holds RMSE values, not fractions
        err = _num if self.get("kind") == "regressor" else _pct
        lines = [f"original machine: {self.get('full_n_vectors', 0)} distinct vectors, "
                 f"{self.get('metric', 'error')} {err(self.get('full_error'))} on the {sel}"]
        if self.get("mode") == "tolerance":
            lines.append(f"target: error <= {err(self.get('target_error'))}")
        lines.append(f"{'method':<17} {'variant':<22} {'budget':>6} {'vectors':>7} "
                     f"{'error':>8} {'agree':>8} {'seconds':>8}  status")
        for r in self.rows:
            lines.append(f"{r['method']:<17} {r['variant'][:22]:<22} {r['budget']:>6d} "
                         f"{r['n_vectors']:>7d} {err(r['val_error']):>8} "
                         f"{_pct(r['agreement']):>8} {_num(r['seconds']):>8}  {r['status']}"
                         + (f": {r['reason']}" if r["reason"] else ""))
        lines += list(self.get("messages", []))
        total = self.get("total_seconds", float("nan"))
        if total is not None and np.isfinite(total):
            lines.append(f"total time: {total:.1f} s")
        return "\n".join(lines)

    def __str__(self):
        return self.table()

    def plot(self, path=None, title=None):
        """Validation error against kernel evaluations per prediction, one point per
        candidate (chosen ringed), the original machine as a dashed line. Returns the
        figure, or the path when ``path`` is given."""
        plt = _plt()
        fig, ax = plt.subplots(figsize=(6.0, 4.0))
        markers = {"chosen": "*", "ok": "o", "reference": "s", "refused": "x",
                   "screened": "v"}
        colours, seen = {}, set()
        pct = 1.0 if self.get("kind") == "regressor" else 100.0  # RMSE is not a fraction
        for i, r in enumerate(self.rows):
            if not np.isfinite(r["val_error"]) or r["n_vectors"] <= 0:
                continue
            colour = colours.setdefault(r["method"], f"C{len(colours) % 10}")
            label = r["method"] if r["method"] not in seen else None
            seen.add(r["method"])
            ax.plot(r["n_vectors"], pct * r["val_error"], markers.get(r["status"], "o"),
                    color=colour, ms=12 if r["status"] == "chosen" else 6, label=label)
            if i == self.get("chosen", -1):
                ax.plot(r["n_vectors"], pct * r["val_error"], "o", ms=16, mfc="none",
                        mec="k", label="chosen")
        full = self.get("full_error", float("nan"))
        if np.isfinite(full):
            ax.axhline(pct * full, color="0.3", ls="--", lw=1.0,
                       label=f"original ({self.get('full_n_vectors', 0)} vectors)")
        if self.get("mode") == "tolerance" and np.isfinite(self.get("target_error", np.nan)):
            ax.axhline(100 * self["target_error"], color="C3", ls=":", lw=1.0, label="target")
        ax.set_xlabel("kernel evaluations per prediction")
        what = self.get("metric", "error") + ("" if pct == 1.0 else " (%)")
        ax.set_ylabel(f"{what} on the {self.get('selection', 'validation')}"[:60])
        ax.set_title(title or "sparsekm.compress: candidates", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
        return fig if path is None else _save(fig, path)
