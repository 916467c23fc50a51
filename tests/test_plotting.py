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


# -- figures carry the data they were given ----------------------------------------------
def _curve(**kw):
    from sparsekm.compression import CompressCurve

    base = dict(n_vectors=[8, 2, 4], budget=[8, 2, 4], error=[0.05, 0.20, 0.08],
                full_error=0.04, full_budget=30, target_error=0.06, chosen=0, met=True)
    return CompressCurve(**{**base, **kw})


@pytest.mark.parametrize("as_dict", [False, True])
def test_compress_curve_draws_the_walk_sorted_by_budget_in_percent(as_dict):
    import dataclasses

    curve = _curve()
    fig = plotting.compress_curve(dataclasses.asdict(curve) if as_dict else curve)
    ax = fig.axes[0]
    walk = [ln for ln in ax.get_lines() if ln.get_label() == "reduced (validation)"][0]
    np.testing.assert_array_equal(walk.get_xdata(), [2, 4, 8])
    np.testing.assert_allclose(walk.get_ydata(), [20.0, 8.0, 5.0])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["reduced (validation)", "full machine (30 evaluations)", "tolerance",
                      "chosen: 8"]
    hlines = {ln.get_label(): ln.get_ydata()[0] for ln in ax.get_lines()
              if ln.get_label() in ("tolerance", "full machine (30 evaluations)")}
    assert hlines == {"tolerance": pytest.approx(6.0),
                      "full machine (30 evaluations)": pytest.approx(4.0)}
    assert ax.get_xscale() == "log" and ax.get_title() == "compress (prefix search)"


def test_compress_curve_without_a_chosen_size_draws_no_ring():
    fig = plotting.compress_curve(_curve(chosen=-1, met=False), title="t")
    ax = fig.axes[0]
    assert not any(ln.get_label().startswith("chosen") for ln in ax.get_lines())
    assert ax.get_title() == "t"


@pytest.mark.parametrize("bad", [None, 3.0, [1, 2], "curve"])
def test_compress_curve_refuses_what_is_no_curve(bad):
    with pytest.raises(TypeError, match="compress_curve needs a CompressCurve"):
        plotting.compress_curve(bad)


@pytest.mark.parametrize("n, ncols, rows", [(1, 10, 1), (10, 10, 1), (11, 10, 2), (7, 3, 3)])
def test_image_grid_lays_out_ceil_n_over_ncols_rows(n, ncols, rows):
    fig = plotting.image_grid(np.arange(n * 4, dtype=float).reshape(n, 4), (2, 2), ncols=ncols)
    assert len(fig.axes) == rows * min(ncols, n)
    assert sum(bool(ax.images) for ax in fig.axes) == n
    np.testing.assert_array_equal(fig.axes[n - 1].images[0].get_array(),
                                  np.arange((n - 1) * 4, n * 4).reshape(2, 2))


def test_image_grid_symmetric_scales_each_tile_around_zero():
    images = np.array([[1.0, -3.0, 0.0, 2.0], [0.5, 0.25, 0.0, 0.0]])
    fig = plotting.image_grid(images, (2, 2), symmetric=True)
    assert [ax.images[0].get_clim() for ax in fig.axes] == [(-3.0, 3.0), (-0.5, 0.5)]


def test_approximation_mse_curves_one_panel_per_entry_and_blank_spares():
    panels = [{"title": f"p{i}", "m": [1, 2, 3],
               "curves": {"greedy": [3.0, 2.0, 1.0], "PCA": [2.5, 1.5, 0.5]}} for i in range(3)]
    fig = plotting.approximation_mse_curves(panels, suptitle="s")
    axes = fig.axes
    assert len(axes) == 4 and not axes[3].axison
    assert [ax.get_title() for ax in axes[:3]] == ["p0", "p1", "p2"]
    np.testing.assert_allclose(axes[1].get_lines()[1].get_ydata(), [2.5, 1.5, 0.5])
    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == ["greedy", "PCA"]


def test_randomized_error_vs_bound_bars_hold_the_values():
    fig = plotting.randomized_error_vs_bound(["a", "b"], [1.0, 2.0], [4.0, 8.0], lower=[0.5, 1])
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert heights == [1.0, 2.0, 4.0, 8.0] and ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]


def test_randomized_subspace_vs_bound_clips_vacuous_bounds_at_ten():
    fig = plotting.randomized_subspace_vs_bound({"K": ([1, 2, 3], [0.1, 0.2, 0.3],
                                                       [0.5, 50.0, 2.0])})
    bound = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "K bound"][0]
    np.testing.assert_allclose(bound.get_ydata(), [0.5, 10.0, 2.0])


def test_randomized_rounding_plot_two_panels_with_fractions():
    rows = [{"label": "x", "nnz": 10, "nnz_bound": 40, "fraction_ok": 0.9},
            {"label": "y", "nnz": 20, "nnz_bound": 80, "fraction_ok": 1.0}]
    fig = plotting.randomized_rounding_plot(rows)
    ax1, ax2 = fig.axes
    assert [p.get_height() for p in ax1.patches] == [10, 20, 40, 80]
    assert [p.get_height() for p in ax2.patches] == [0.9, 1.0]
    assert ax2.get_ylim() == (0.0, 1.05)


@pytest.mark.parametrize("with_accuracy", [False, True])
def test_randomized_projection_plot_panels(with_accuracy):
    acc = [0.8, 0.9] if with_accuracy else None
    fig = plotting.randomized_projection_plot([4, 8], [0.5, 0.9], 0.95, acc, 0.93)
    assert len(fig.axes) == (2 if with_accuracy else 1)
    target = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("theorem")][0]
    assert target.get_ydata()[0] == pytest.approx(0.95)


@pytest.mark.parametrize("n_components, panels", [(2, 3), (5, 6), (8, 9)])
def test_component_contours_one_panel_per_component_after_the_data(n_components, panels):
    from sklearn.datasets import make_moons as moons

    from sparsekm.models import KernelPCA

    X = moons(40, noise=0.05, random_state=0)[0] / 2
    kpca = KernelPCA(n_components=8).fit(X)
    fig = plotting.plot_component_contours(kpca, X, n_components=n_components, resolution=15)
    titled = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titled) == panels and titled[0] == "data"
    assert titled[1] == f"component 1 (eigenvalue {kpca.eigenvalues_[0]:.3g})"


def test_error_curves_take_per_curve_x_values():
    fig = plotting.plot_error_curves({"a": [1, 2], "b": [4, 8, 16]},
                                     {"a": [1.0, 0.5], "b": [3.0, 2.0, 1.0]}, logx=False)
    lines = fig.axes[0].get_lines()
    np.testing.assert_array_equal(lines[1].get_xdata(), [4, 8, 16])
    assert fig.axes[0].get_xscale() == "linear"


@pytest.mark.parametrize("logx, scale", [(True, "log"), (False, "linear")])
def test_error_vs_n_vectors_axis_scale(logx, scale):
    fig = plotting.error_vs_n_vectors({"ours": ([1, 2], [3.0, 2.0])}, logx=logx)
    assert fig.axes[0].get_xscale() == scale


def test_denoising_2d_draws_one_segment_per_point_unless_told_not_to():
    X = np.random.default_rng(1).normal(size=(6, 2))
    with_lines = plotting.plot_denoising_2d([("d", X, X + 1)])
    without = plotting.plot_denoising_2d([("d", X, X + 1)], lines=False)
    assert len(with_lines.axes[0].get_lines()) == len(without.axes[0].get_lines()) + 6


@pytest.mark.parametrize("make", [
    lambda p: plotting.plot_error_curves([1, 2], {"a": [1.0, 2.0]}, path=p),
    lambda p: plotting.error_vs_n_vectors({"a": ([1, 2], [1.0, 2.0])}, path=p),
    lambda p: plotting.randomized_error_vs_bound(["a"], [1.0], [2.0], path=p),
], ids=["error_curves", "error_vs_n_vectors", "error_vs_bound"])
def test_a_path_saves_into_new_folders_and_returns_it(tmp_path, make):
    out = make(tmp_path / "new" / "fig.png")
    assert out == str(tmp_path / "new" / "fig.png")
    assert (tmp_path / "new" / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
