"""Figures (matplotlib, Agg backend: no display needed).

Shared helpers live here; each method adds its own figure functions below.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = [
    "image_grid",
    "savefig",
    "approximation_mse_curves",
    "decision_boundaries",
    "plot_component_contours",
    "plot_denoising_2d",
    "plot_error_curves",
    "error_vs_n_vectors",
    "randomized_error_vs_bound",
    "randomized_subspace_vs_bound",
    "randomized_rounding_plot",
    "randomized_projection_plot",
    "compress_curve",
]


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def savefig(fig, path, dpi=120):
    """Save ``fig`` to ``path`` (folders created), close it and return the path as str."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    _plt().close(fig)
    return str(path)

def _label_axes(ax, xlabel, ylabel, title, logx):
    """Axis labels, a small title and (``logx``) a base-2 log x axis with plain tick labels."""
    if logx:
        from matplotlib.ticker import FuncFormatter

        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)



def image_grid(images, image_shape, *, titles=None, ncols=10, cmap=None, suptitle=None,
               path=None, symmetric=False, row_labels=None, center=None):
    """Show rows of ``images`` as a grid of ``image_shape`` pictures (e.g. 16x16 digits).

    Parameters
    ----------
    images : array-like of shape (n_images, prod(image_shape))
    image_shape : tuple of int
    titles : list of str, optional
        One caption per image (e.g. the coefficient of a reduced-set vector).
    ncols : int
    cmap : str, optional
        Colour map; default ``"gray_r"``, or ``"RdGy"`` with ``center`` (white at the
        centre, dark above it, red below).
    symmetric : bool
        Use a colour scale symmetric around 0 for each image on its own (for
        eigenvector images).
    center : float, optional
        One colour scale shared by all images, symmetric around ``center`` (e.g. the
        blank-paper value of digit images): ``center +- max |image - center|`` over
        all images (its 99th percentile, so that a few outlying pixels do not wash
        out the rest; they are drawn in the end colours), with a colour bar. Tiles
        then compare: a faint vector looks faint. Without it each image is scaled
        on its own.
    row_labels : list of str, optional
        One label per row of the grid, written left of the row.
    path : str or Path, optional
        Save the figure there and return the path; otherwise return the figure.
    """
    if symmetric and center is not None:
        raise ValueError("image_grid: give symmetric=True (each image on its own scale) or "
                         "center (one scale shared by all images), not both.")
    plt = _plt()
    images = np.asarray(images, dtype=float)
    n = images.shape[0]
    ncols = max(1, min(ncols, n))
    nrows = int(np.ceil(n / ncols))
    # Cell height follows the image's aspect so that no spare height collects under the title.
    cell_w = 1.2
    cell_h = cell_w * image_shape[0] / image_shape[1] + (0.25 if titles is not None else 0.08)
    extra_w = 0.9 if row_labels is not None else 0.0
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(cell_w * ncols + extra_w,
                                      cell_h * nrows + (0.45 if suptitle else 0.0)))
    shared = None
    if center is not None:
        center = float(center)
        v = float(np.percentile(np.abs(images - center), 99)) if images.size else 0.0
        shared = dict(cmap=cmap or "RdGy", vmin=center - (v or 1.0), vmax=center + (v or 1.0))
    for i, ax in enumerate(axes.flat):
        ax.set_axis_off()
        if i >= n:
            continue
        img = images[i].reshape(image_shape)
        if shared is not None:
            im = ax.imshow(img, **shared)
        elif symmetric:
            v = np.abs(img).max() or 1.0
            ax.imshow(img, cmap="RdBu_r", vmin=-v, vmax=v)
        else:
            ax.imshow(img, cmap=cmap or "gray_r")
        if titles is not None:
            ax.set_title(titles[i], fontsize=7)
    if row_labels is not None:
        for r, label in enumerate(row_labels[:nrows]):
            axes[r, 0].text(-0.08, 0.5, label, transform=axes[r, 0].transAxes, ha="right",
                            va="center", fontsize=10)
    if shared is not None and n:
        fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.6, aspect=30, pad=0.01,
                     extend="both")
    if suptitle:
        fig.suptitle(suptitle, fontsize=min(12, max(9, 0.5 * ncols)), wrap=True)
    return savefig(fig, path) if path is not None else fig


# -- Training-set approximation (Franc & Hlaváč) -------------------------------------
def approximation_mse_curves(panels, *, path=None, suptitle=None):
    """Figure 1 of Franc & Hlaváč: mse against the number of basis vectors.

    Parameters
    ----------
    panels : list of dict
        Each with ``"title"``, ``"m"`` (array of basis sizes) and ``"curves"``, a
        dict ``label -> mse array`` (e.g. ``{"greedy": ..., "PCA": ...}``).
    """
    plt = _plt()
    ncols = min(2, len(panels))
    nrows = int(np.ceil(len(panels) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 3.6 * nrows), squeeze=False)
    styles = ["-", "--", ":", "-."]
    for ax, panel in zip(axes.flat, panels, strict=False):
        for i, (label, values) in enumerate(panel["curves"].items()):
            ax.plot(panel["m"], values, styles[i % 4], label=label)
        ax.set_title(panel["title"], fontsize=9)
        ax.set_xlabel("number of basis vectors m")
        ax.set_ylabel("mse (mean se(x))")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_axis_off()
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    return savefig(fig, path) if path is not None else fig


# -- Randomized kernels (issue 7: Achlioptas, McSherry & Schölkopf) ----------------------
def randomized_error_vs_bound(labels, measured, bounds, *, lower=None, path=None,
                              title="||K_hat - K|| vs Füredi–Komlós bound 4 sigma sqrt(m)"):
    """Bar chart of measured ``||E_K||`` beside Theorem 1's bound (log scale)."""
    plt = _plt()
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(labels)), 3.6))
    ax.bar(x - 0.2, measured, 0.4, label="measured ||E_K||")
    ax.bar(x + 0.2, bounds, 0.4, label="4 sigma sqrt(m)")
    if lower is not None:
        ax.scatter(x - 0.2, lower, marker="_", s=300, color="k",
                   label="sigma_rms sqrt(m) (lower bound)")
    ax.set_xticks(x, labels, rotation=20, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("spectral norm")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return savefig(fig, path) if path is not None else fig


def randomized_subspace_vs_bound(curves, *, path=None,
                                 title="Theorem 2: subspace distance vs bound"):
    """Lines of measured ``||F_hat^T F_perp||`` (solid) and Theorem 2's bound (dashed).

    ``curves`` maps a label to ``(ells, distances, bounds)``.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for i, (label, (ells, dist, bound)) in enumerate(curves.items()):
        color = f"C{i}"
        ax.plot(ells, dist, "o-", color=color, ms=3, label=f"{label} measured")
        ax.plot(ells, np.minimum(bound, 10.0), "--", color=color, label=f"{label} bound")
    from matplotlib.ticker import MaxNLocator

    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("number of components l")
    ax.set_ylabel("sin of largest principal angle")
    ax.set_title(title + " (bounds >= 1 are vacuous; clipped at 10)", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    return savefig(fig, path) if path is not None else fig


def randomized_rounding_plot(rows, *, path=None, title="Theorem 5: randomized rounding"):
    """Non-zero terms vs Theorem 5's bound and the fraction meeting its guarantee.

    ``rows``: list of dicts with ``label``, ``nnz``, ``nnz_bound``, ``fraction_ok``.
    """
    plt = _plt()
    labels = [r["label"] for r in rows]
    x = np.arange(len(rows))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(max(7.0, 1.2 * len(rows)), 3.6))
    ax1.bar(x - 0.2, [r["nnz"] for r in rows], 0.4, label="non-zero terms")
    ax1.bar(x + 0.2, [r["nnz_bound"] for r in rows], 0.4, label="bound 4cm/(eps T)")
    ax1.set_xticks(x, labels, rotation=45, ha="right", fontsize=6)
    ax1.set_yscale("log")
    ax1.legend(fontsize=7)
    ax2.bar(x, [r["fraction_ok"] for r in rows], 0.5)
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.set_ylim(0.0, 1.05)
    ax2.set_xticks(x, labels, rotation=45, ha="right", fontsize=6)
    ax1.set_ylabel("non-zero terms (log scale)")
    ax2.set_ylabel("fraction")
    ax1.set_title("non-zero terms vs Theorem 5 bound", fontsize=8)
    ax2.set_title("fraction of (x, feature) meeting (1 +- eps) or both trivial", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return savefig(fig, path) if path is not None else fig


def decision_boundaries(panels, X, y, *, path=None, suptitle=None, resolution=200):
    """Figures 2-3 of Franc & Hlaváč: full (solid) vs approximated (dashed) boundaries.

    Parameters
    ----------
    panels : list of dict
        Each with ``"title"``, ``"full"`` and ``"approx"`` (callables mapping an
        (n, 2) array to decision values) and ``"basis"`` (array (m, 2) of the
        basis points, drawn as big circles).
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,)
    """
    plt = _plt()
    X = np.asarray(X, dtype=float)
    pad = 0.1 * (X.max(axis=0) - X.min(axis=0))
    lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], resolution),
                         np.linspace(lo[1], hi[1], resolution))
    grid = np.column_stack([gx.ravel(), gy.ravel()])
    ncols = min(2, len(panels))
    nrows = int(np.ceil(len(panels) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 4.2 * nrows), squeeze=False)
    classes = np.unique(y)
    for k, (ax, panel) in enumerate(zip(axes.flat, panels, strict=False)):
        for c, marker, color in zip(classes, ("o", "x"), ("tab:blue", "tab:red"), strict=False):
            pts = X[y == c]
            ax.scatter(pts[:, 0], pts[:, 1], s=10, marker=marker, c=color, linewidths=0.8,
                       alpha=0.7, label=f"class {c:g}")
        if k == 0:
            from matplotlib.lines import Line2D

            handles = ax.get_legend_handles_labels()[0] + [
                Line2D([], [], color="k", lw=1.5, label="full training set"),
                Line2D([], [], color="g", lw=1.5, ls="--", label="approximated"),
                Line2D([], [], marker="o", ms=10, mfc="none", mec="k", ls="none",
                       label="basis vectors")]
            ax.legend(handles=handles, fontsize=7, loc="lower left")
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
        ax.contour(gx, gy, panel["full"](grid).reshape(gx.shape), levels=[0.0], colors="k",
                   linestyles="solid", linewidths=1.5)
        ax.contour(gx, gy, panel["approx"](grid).reshape(gx.shape), levels=[0.0], colors="g",
                   linestyles="dashed", linewidths=1.5)
        B = np.asarray(panel["basis"], dtype=float)
        ax.scatter(B[:, 0], B[:, 1], s=140, facecolors="none", edgecolors="k", linewidths=1.3)
        ax.set_title(panel["title"], fontsize=9)
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
    for ax in list(axes.flat)[len(panels):]:
        ax.set_axis_off()
    if suptitle:
        fig.suptitle(suptitle + "  (solid: full training set, dashed: approximated; "
                     "circles: basis vectors)", fontsize=9)
    fig.tight_layout()
    return savefig(fig, path) if path is not None else fig


def randomized_projection_plot(dims, fractions, target, accuracy=None, exact_accuracy=None, *,
                               path=None, title="Theorem 6: random projections"):
    """Fraction of pairs within ``(1 +- eps)`` and kernel-machine accuracy vs ``s``."""
    plt = _plt()
    ncols = 2 if accuracy is not None else 1
    fig, axes = plt.subplots(1, ncols, figsize=(5.0 * ncols, 3.6), squeeze=False)
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax = axes[0, 0]
    ax.plot(dims, fractions, "o-", label="measured")
    ax.axhline(target, color="k", ls="--", label="theorem: 1 - 1/n^beta (all pairs)")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(plain)
    ax.set_xlabel("projected dimension s")
    ax.set_ylabel("fraction of pairs within 1 +- eps")
    ax.legend(fontsize=7)
    if accuracy is not None:
        ax = axes[0, 1]
        ax.plot(dims, accuracy, "o-", label="projected RBF")
        if exact_accuracy is not None:
            ax.axhline(exact_accuracy, color="k", ls="--", label="exact RBF")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(plain)
        ax.set_xlabel("projected dimension s")
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    return savefig(fig, path) if path is not None else fig


def plot_component_contours(kpca, X, *, n_components=8, grid=(-1.0, 1.0, -0.5, 1.0),
                            resolution=120, path=None):
    """Lines of constant feature value of the first kernel PCA components (fig. 4).

    Parameters
    ----------
    kpca : fitted sparsekm.models.KernelPCA on 2-D data
    X : array-like of shape (n_samples, 2)
        Data shown as dots (the training set).
    n_components : int
        Number of components drawn (one panel each, after a panel with the data).
    grid : (xmin, xmax, ymin, ymax)
    """
    plt = _plt()
    X = np.asarray(X, dtype=float)
    x0, x1, y0, y1 = grid
    gx, gy = np.meshgrid(np.linspace(x0, x1, resolution), np.linspace(y0, y1, resolution))
    F = kpca.transform(np.c_[gx.ravel(), gy.ravel()])
    n = min(n_components, F.shape[1])
    ncols = 3
    nrows = int(np.ceil((n + 1) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.6 * nrows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.set_xticks([])
        ax.set_yticks([])
        if i > n:
            ax.set_axis_off()
            continue
        if i == 0:
            ax.set_title("data", fontsize=8)
        else:
            ax.contour(gx, gy, F[:, i - 1].reshape(gx.shape), levels=12, linewidths=0.6,
                       cmap="viridis")
            ax.set_title(f"component {i} (eigenvalue {kpca.eigenvalues_[i - 1]:.3g})", fontsize=8)
        ax.plot(X[:, 0], X[:, 1], "k.", markersize=1.5)
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
    return savefig(fig, path) if path is not None else fig


def plot_denoising_2d(panels, *, ncols=3, reference=None, path=None, lines=True):
    """Noisy points (small), their denoised versions (big) and the moves between them.

    Parameters
    ----------
    panels : list of (title, X_noisy, Z)
        One panel each; ``Z`` may be ``None`` to show the data only.
    reference : array-like of shape (n_points, 2), optional
        The noise-free truth in every panel: a curve (drawn as a grey line) or, with at
        most 20 rows, a set of source points (drawn as black crosses).
    lines : bool
        Draw a segment from each noisy point to its denoised version (figs. 5-7).
    """
    plt = _plt()
    n = len(panels)
    points = reference is not None and len(reference) <= 20
    ncols = max(1, min(ncols, n))
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows + 0.3),
                             squeeze=False, layout="constrained")
    for ax in axes.flat[n:]:
        ax.set_axis_off()
    for ax, (title, Xn, Z) in zip(axes.flat, panels, strict=False):
        Xn = np.asarray(Xn, dtype=float)
        if reference is not None:
            ref = np.asarray(reference, dtype=float)
            if points:
                ax.plot(ref[:, 0], ref[:, 1], "x", color="k", markersize=9, mew=2, zorder=5)
            else:
                ax.plot(ref[:, 0], ref[:, 1], "-", color="0.75", linewidth=1.0)
        ax.plot(Xn[:, 0], Xn[:, 1], ".", color="0.4", markersize=2)
        if Z is not None:
            Z = np.asarray(Z, dtype=float)
            if lines:
                segs = np.stack([Xn, Z], axis=1)
                for s in segs:
                    ax.plot(s[:, 0], s[:, 1], "-", color="tab:blue", linewidth=0.4, alpha=0.6)
            ax.plot(Z[:, 0], Z[:, 1], "o", color="tab:red", markersize=3)
        ax.set_title(title, fontsize=8)
        if ax is axes.flat[n - 1] and any(p[2] is not None for p in panels):
            from matplotlib.lines import Line2D

            handles = [Line2D([], [], marker=".", color="0.4", ls="none", label="noisy"),
                       Line2D([], [], marker="o", ms=4, color="tab:red", ls="none",
                              label="denoised")]
            if reference is not None:
                handles.append(Line2D([], [], marker="x", color="k", ls="none", mew=2,
                                      label="true sources") if points else
                               Line2D([], [], color="0.75", label="noise-free curve"))
            fig.legend(handles=handles, loc="outside lower center", ncol=len(handles),
                       fontsize=8)
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xticks([])
        ax.set_yticks([])
    return savefig(fig, path) if path is not None else fig


def plot_error_curves(ns, curves, *, xlabel="number of components n", ylabel="MSE",
                      title=None, path=None, logx=True):
    """Error against the number of components (fig. 10), one line per entry of ``curves``.

    Parameters
    ----------
    ns : dict of label -> array of n, or one array shared by all curves
    curves : dict of label -> array of errors
    """
    plt = _plt()
    outside = len(curves) > 4
    fig, ax = plt.subplots(figsize=(8.0 if outside else 5.2, 3.6), layout="constrained")
    for label, err in curves.items():
        x = ns[label] if isinstance(ns, dict) else ns
        ax.plot(x, err, "o-", markersize=3, label=label)
    _label_axes(ax, xlabel, ylabel, title, logx)
    ax.grid(alpha=0.3)
    if outside:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    else:
        ax.legend(fontsize=7)
    return savefig(fig, path) if path is not None else fig


# -- Error against the number of expansion vectors, with the paper's points -------------
def error_vs_n_vectors(curves, *, paper=None, baselines=None, xlabel="number of vectors",
                       ylabel="test error (%)", title=None, path=None, logx=True):
    """Our error curves (lines) with the paper's numbers overlaid (open markers).

    Parameters
    ----------
    curves : dict of label -> (x, error)
        Our measurements, one line each.
    paper : dict of label -> (x, error), optional
        The paper's points, drawn as large open markers without lines.
    baselines : dict of label -> float, optional
        Horizontal reference lines (e.g. the full SVM's error, ours and the paper's).
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for i, (label, (x, err)) in enumerate(curves.items()):
        ax.plot(x, err, "o-", color=f"C{i}", markersize=4, label=label)
    markers = ["s", "D", "^", "v"]
    for i, (label, (x, err)) in enumerate((paper or {}).items()):
        ax.plot(x, err, markers[i % 4], markersize=9, markerfacecolor="none",
                markeredgewidth=1.5, color="k" if i == 0 else f"C{i + len(curves)}", ls="none",
                label=label)
    for i, (label, value) in enumerate((baselines or {}).items()):
        ax.axhline(value, color="0.4", ls=("--", ":", "-.")[i % 3], lw=1.0, label=label)
    _label_axes(ax, xlabel, ylabel, title, logx)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return savefig(fig, path) if path is not None else fig


# -- The error-budget curve walked by sparsekm.compress ---------------------------------
def compress_curve(curve, *, path=None, title=None):
    """Validation error against kernel evaluations per prediction, as walked by
    :func:`sparsekm.compress`.

    Parameters
    ----------
    curve : CompressCurve, its dictionary, or a model with ``compress_curve_``
        The walked sizes (points, joined in budget order), the full machine's error
        (dashed line at its budget), the tolerance (dotted line) and the returned
        model (large ring). ``compress_curve_`` is what files written by earlier
        versions of :func:`sparsekm.compress` hold; a model with ``compress_report_``
        (what :func:`sparsekm.compress` returns now) is plotted by
        :meth:`CompressReport.plot <sparsekm.compression.CompressReport.plot>`.
    path : str or Path, optional
        Save the figure there (and return the path); otherwise return the figure.
    title : str, optional
    """
    from .compression import CompressCurve, CompressReport

    if not hasattr(curve, "compress_curve_") and hasattr(curve, "compress_report_"):
        return CompressReport(curve.compress_report_).plot(path, title)
    curve = getattr(curve, "compress_curve_", curve)
    if isinstance(curve, dict):
        curve = CompressCurve(**curve)
    if not isinstance(curve, CompressCurve):
        raise TypeError("compress_curve needs a CompressCurve or a model returned by "
                        f"sparsekm.compress; got {type(curve).__name__}.")
    plt = _plt()
    budget, error = curve.sorted()
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    ax.plot(budget, 100 * error, "o-", markersize=4, label="reduced (validation)")
    ax.axhline(100 * curve.full_error, color="0.3", ls="--", lw=1.0,
               label=f"full machine ({curve.full_budget} evaluations)")
    ax.axhline(100 * curve.target_error, color="C3", ls=":", lw=1.0, label="tolerance")
    if curve.chosen >= 0:
        ax.plot(curve.budget[curve.chosen], 100 * curve.error[curve.chosen], "o", ms=12,
                mfc="none", mec="C3", mew=1.5, label=f"chosen: {curve.budget[curve.chosen]}")
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter

    for axis_fmt in (ax.xaxis.set_major_formatter, ax.xaxis.set_minor_formatter):
        axis_fmt(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("kernel evaluations per prediction")
    ax.set_ylabel("validation error (%)")
    ax.set_title(title or f"compress ({curve.search} search)", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return savefig(fig, path) if path is not None else fig
