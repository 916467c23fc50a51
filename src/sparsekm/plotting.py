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


# -- kernel PCA and pre-images (issue 3) ---------------------------------------------------


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
        A curve or set of points drawn in grey in every panel (the true sources).
    lines : bool
        Draw a segment from each noisy point to its denoised version (figs. 5-7).
    """
    plt = _plt()
    n = len(panels)
    ncols = max(1, min(ncols, n))
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_axis_off()
    for ax, (title, Xn, Z) in zip(axes.flat, panels, strict=False):
        Xn = np.asarray(Xn, dtype=float)
        if reference is not None:
            ref = np.asarray(reference, dtype=float)
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
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for label, err in curves.items():
        x = ns[label] if isinstance(ns, dict) else ns
        ax.plot(x, err, "o-", markersize=3, label=label)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return savefig(fig, path) if path is not None else fig
