"""Figure functions: what a reader needs is on the figure (labels, legends, panels)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from sklearn.datasets import make_moons  # noqa: E402

import sparsekm  # noqa: E402
from sparsekm import plotting  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def test_every_figure_function_is_public():
    public = {n for n in vars(plotting) if callable(getattr(plotting, n)) and not n.startswith("_")
              and getattr(getattr(plotting, n), "__module__", "") == plotting.__name__}
    assert public == set(plotting.__all__)


def test_image_grid_titles_row_labels_and_no_spare_height(tmp_path):
    rng = np.random.default_rng(0)
    fig = plotting.image_grid(rng.normal(size=(25, 64)), (8, 8), ncols=10,
                              titles=[f"{v:+.2f}" for v in rng.normal(size=25)],
                              row_labels=["class 0", "class 1", "class 2"], suptitle="vectors")
    axes = fig.axes
    assert len(axes) == 30  # 3 rows x 10 columns, the last 5 empty
    assert sum(ax.get_title() != "" for ax in axes) == 25
    labels = [t.get_text() for ax in axes for t in ax.texts]
    assert labels == ["class 0", "class 1", "class 2"]
    assert not any(ax.images for ax in axes[25:])
    # cell height follows the 8x8 aspect: about (1.2 + title) per row, not more
    w, h = fig.get_size_inches()
    assert h == pytest.approx(3 * (1.2 + 0.25) + 0.45)
    path = plotting.image_grid(np.ones((2, 4)), (2, 2), path=tmp_path / "g.png")
    assert (tmp_path / "g.png").stat().st_size > 0 and path.endswith("g.png")


def test_error_vs_n_vectors_overlays_paper_points():
    fig = plotting.error_vs_n_vectors(
        {"ours": ([2, 4, 8], [5.0, 5.5, 6.0])}, paper={"paper": ([2, 4], [4.8, 5.1])},
        baselines={"full SVM": 4.3}, xlabel="reduction factor", title="t")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "reduction factor" and ax.get_ylabel() == "test error (%)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ours", "paper", "full SVM"]
    paper_line = [ln for ln in ax.get_lines() if ln.get_label() == "paper"][0]
    assert paper_line.get_linestyle() == "None"  # points only
    np.testing.assert_allclose(paper_line.get_ydata(), [4.8, 5.1])


def test_denoising_2d_legend_and_source_points():
    X = np.random.default_rng(0).normal(size=(20, 2))
    sources = np.array([[0.0, 0.0], [1.0, 1.0]])
    fig = plotting.plot_denoising_2d([("noisy", X, None), ("denoised", X, X * 0.5)],
                                     reference=sources)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts == ["noisy", "denoised", "true sources"]
    curve = np.c_[np.cos(np.linspace(0, 3, 50)), np.sin(np.linspace(0, 3, 50))]
    fig = plotting.plot_denoising_2d([("d", X, X)], reference=curve)
    assert [t.get_text() for t in fig.legends[0].get_texts()][-1] == "noise-free curve"


def test_decision_boundaries_have_legend_and_axis_labels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    panel = {"title": "p", "full": lambda G: G[:, 0], "approx": lambda G: G[:, 0] + 0.1,
             "basis": X[:3]}
    fig = plotting.decision_boundaries([panel, panel], X, y, resolution=30)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "x1" and ax.get_ylabel() == "x2"
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == ["class -1", "class 1", "full training set", "approximated", "basis vectors"]


def test_error_curves_put_many_legends_outside():
    ns = [1, 2, 4]
    curves = {f"c{i}": [3.0, 2.0, 1.0] for i in range(6)}
    fig = plotting.plot_error_curves(ns, curves)
    legend = fig.axes[0].get_legend()
    assert legend is not None and len(legend.get_texts()) == 6
    assert fig.get_size_inches()[0] == pytest.approx(8.0)


def test_image_grid_shared_scale_around_the_background():
    """Issue 26: with ``center`` every tile uses one colour scale, symmetric around the
    background value, so that faint and strong vectors compare (and a colour bar)."""
    rng = np.random.default_rng(0)
    images = -1.0 + rng.uniform(0, 2, size=(12, 64)) * rng.uniform(0.1, 1.0, size=(12, 1))
    fig = plotting.image_grid(images, (8, 8), ncols=6, center=-1.0,
                              titles=[str(i) for i in range(12)])
    ims = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(ims) == 12
    clims = {im.get_clim() for im in ims}
    assert len(clims) == 1  # one scale for all tiles
    lo, hi = clims.pop()
    assert (lo + hi) / 2 == pytest.approx(-1.0)  # symmetric around the background
    assert hi - (-1.0) == pytest.approx(np.percentile(np.abs(images + 1.0), 99))
    assert len(fig.axes) == 12 + 1  # the tiles and one colour bar
    # without center each tile keeps its own scale
    fig = plotting.image_grid(images, (8, 8), ncols=6)
    assert len({ax.images[0].get_clim() for ax in fig.axes if ax.images}) > 1


def test_plotting_compress_curve_takes_what_compress_returns(tmp_path):
    """sparsekm.plotting.compress_curve said it takes 'a model returned by
    sparsekm.compress' but raised TypeError on one (compress now keeps a report, not a
    curve); it plots the report now, also after save/load."""
    from sklearn.svm import SVC

    from sparsekm.plotting import compress_curve

    X, y = make_moons(300, noise=0.25, random_state=0)
    svc = SVC(C=10, gamma=1.0).fit(X[:150], y[:150])
    # 5 vectors of 26 lose about 5 points of validation accuracy: compress says so
    with pytest.warns(UserWarning, match="points above the original's"):
        small = sparsekm.compress(svc, X[150:], y[150:], n_vectors=5, method="construct",
                                  random_state=0, n_init=2, max_iter=50)
    out = compress_curve(small, path=tmp_path / "c.png")
    assert str(out).endswith("c.png") and (tmp_path / "c.png").stat().st_size > 0
    sparsekm.save(small, tmp_path / "m.skm")
    compress_curve(sparsekm.load(tmp_path / "m.skm"), path=tmp_path / "d.png")
    assert (tmp_path / "d.png").stat().st_size > 0


def test_image_grid_refuses_two_colour_scales():
    """image_grid(symmetric=True, center=...) drew with center's shared scale and ignored
    symmetric in silence."""
    from sparsekm.plotting import image_grid

    with pytest.raises(ValueError, match="symmetric=True .* or center"):
        image_grid(np.zeros((2, 4)), (2, 2), symmetric=True, center=0.0)
