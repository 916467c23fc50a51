"""More figures carry what they were given: contour levels within the component's values,
reference curves and denoised points where they are, lower-bound markers at their values,
panels laid out two per row; and a saved figure is closed."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.contour import ContourSet  # noqa: E402

from sparsekm import plotting  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_a_saved_figure_is_closed(tmp_path):
    before = len(plt.get_fignums())
    plotting.plot_error_curves([1, 2], {"a": [1.0, 2.0]}, path=tmp_path / "f.png")
    assert len(plt.get_fignums()) == before


def test_component_contours_lie_within_the_components_values():
    from sklearn.datasets import make_moons

    from sparsekm.models import KernelPCA

    X = make_moons(40, noise=0.05, random_state=0)[0] / 2
    kpca = KernelPCA(n_components=2).fit(X)
    fig = plotting.plot_component_contours(kpca, X, n_components=2, resolution=15)
    gx, gy = np.meshgrid(np.linspace(-1, 1, 15), np.linspace(-0.5, 1, 15))
    F = kpca.transform(np.c_[gx.ravel(), gy.ravel()])
    sets = [c for ax in fig.axes for c in ax.collections if isinstance(c, ContourSet)]
    assert len(sets) == 2
    for k, cs in enumerate(sets):
        levels = np.asarray(cs.levels)
        inside = levels[(levels >= F[:, k].min()) & (levels <= F[:, k].max())]
        assert len(inside) >= 8  # about 12 lines across the component's range


def test_decision_boundary_panels_two_per_row_with_spares_hidden():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    panels = [{"title": f"p{i}", "full": lambda G: G[:, 0], "approx": lambda G: G[:, 1],
               "basis": X[:2]} for i in range(3)]
    fig = plotting.decision_boundaries(panels, X, y, resolution=20)
    assert len(fig.axes) == 4 and not fig.axes[3].axison
    assert [ax.get_title() for ax in fig.axes[:3]] == ["p0", "p1", "p2"]


def test_a_reference_curve_is_drawn_through_its_points():
    X = np.random.default_rng(1).normal(size=(10, 2))
    t = np.linspace(0, np.pi, 30)
    curve = np.c_[np.cos(t), np.sin(t)]
    fig = plotting.plot_denoising_2d([("d", X, X)], reference=curve)
    grey = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 30]
    assert len(grey) == 1
    np.testing.assert_array_equal(np.c_[grey[0].get_xdata(), grey[0].get_ydata()], curve)


def test_denoised_points_are_drawn_only_where_given():
    X = np.random.default_rng(2).normal(size=(7, 2))
    Z = X * 0.5
    fig = plotting.plot_denoising_2d([("noisy", X, None), ("denoised", X, Z)], lines=False)
    markers = [[ln for ln in ax.get_lines() if ln.get_marker() == "o"] for ax in fig.axes[:2]]
    assert markers[0] == []
    np.testing.assert_array_equal(np.c_[markers[1][0].get_xdata(), markers[1][0].get_ydata()],
                                  Z)


def test_lower_bound_markers_sit_on_their_values():
    fig = plotting.randomized_error_vs_bound(["a", "b", "c"], [1.0, 2.0, 3.0],
                                             [4.0, 8.0, 9.0], lower=[0.5, 1.5, 2.5])
    (marks,) = fig.axes[0].collections
    offsets = np.asarray(marks.get_offsets())
    np.testing.assert_allclose(offsets[:, 1], [0.5, 1.5, 2.5])
    bars = [p.get_x() + p.get_width() / 2 for p in fig.axes[0].patches[:3]]  # measured bars
    np.testing.assert_allclose(offsets[:, 0], bars)
