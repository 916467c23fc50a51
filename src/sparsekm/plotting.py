"""Figures (matplotlib, Agg backend: no display needed).

Shared helpers live here; each method adds its own figure functions below.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["image_grid", "savefig"]


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


def image_grid(images, image_shape, *, titles=None, ncols=10, cmap="gray_r", suptitle=None,
               path=None, symmetric=False):
    """Show rows of ``images`` as a grid of ``image_shape`` pictures (e.g. 16x16 digits).

    Parameters
    ----------
    images : array-like of shape (n_images, prod(image_shape))
    image_shape : tuple of int
    titles : list of str, optional
        One caption per image (e.g. the coefficient of a reduced-set vector).
    ncols : int
    symmetric : bool
        Use a colour scale symmetric around 0 (for eigenvector images).
    path : str or Path, optional
        Save the figure there and return the path; otherwise return the figure.
    """
    plt = _plt()
    images = np.asarray(images, dtype=float)
    n = images.shape[0]
    ncols = max(1, min(ncols, n))
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(1.2 * ncols, 1.35 * nrows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.set_axis_off()
        if i >= n:
            continue
        img = images[i].reshape(image_shape)
        if symmetric:
            v = np.abs(img).max() or 1.0
            ax.imshow(img, cmap="RdBu_r", vmin=-v, vmax=v)
        else:
            ax.imshow(img, cmap=cmap)
        if titles is not None:
            ax.set_title(titles[i], fontsize=7)
    if suptitle:
        fig.suptitle(suptitle, fontsize=9)
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
    for ax, panel in zip(axes.flat, panels, strict=False):
        for c, marker, color in zip(classes, ("o", "x"), ("tab:blue", "tab:red"), strict=False):
            pts = X[y == c]
            ax.scatter(pts[:, 0], pts[:, 1], s=10, marker=marker, c=color, linewidths=0.8,
                       alpha=0.7)
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
