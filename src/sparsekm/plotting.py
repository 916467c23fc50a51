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
