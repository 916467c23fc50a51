"""``plotting.decision_boundaries`` draws the zero sets of the functions it is given, the
basis points where they are, and the data with a tenth of its range around it."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.contour import ContourSet  # noqa: E402

from sparsekm import plotting  # noqa: E402


@pytest.fixture
def panel_axes():
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    X = rng.uniform([-1.0, -2.0], [3.0, 2.0], size=(80, 2))
    y = (X[:, 0] > 0.5).astype(float)
    basis = X[:3]
    fig = plotting.decision_boundaries(
        [{"title": "lines", "full": lambda G: G[:, 0] - 0.5, "approx": lambda G: G[:, 1] - 0.2,
          "basis": basis}], X, y, resolution=101)
    yield fig.axes[0], X, basis
    plt.close("all")


def _zero_set(ax, color):
    sets = [c for c in ax.collections if isinstance(c, ContourSet)]
    (cs,) = [c for c in sets if matplotlib.colors.same_color(c.get_edgecolor()[0], color)]
    return np.vstack([seg for seg in cs.allsegs[0]])


def test_the_solid_line_is_where_the_full_function_is_zero(panel_axes):
    ax, _, _ = panel_axes
    pts = _zero_set(ax, "k")
    np.testing.assert_allclose(pts[:, 0], 0.5, atol=1e-9)  # linear: exact between grid points
    assert np.ptp(pts[:, 1]) > 4.0  # across the whole height of the data


def test_the_dashed_line_is_where_the_approximation_is_zero(panel_axes):
    ax, _, _ = panel_axes
    pts = _zero_set(ax, "g")
    np.testing.assert_allclose(pts[:, 1], 0.2, atol=1e-9)
    assert np.ptp(pts[:, 0]) > 4.0


def test_basis_circles_sit_on_the_basis_points_and_limits_pad_a_tenth(panel_axes):
    ax, X, basis = panel_axes
    offsets = [np.asarray(c.get_offsets()) for c in ax.collections
               if not isinstance(c, ContourSet)]
    assert any(o.shape == basis.shape and np.allclose(o, basis) for o in offsets)
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = 0.1 * (hi - lo)
    np.testing.assert_allclose(ax.get_xlim(), (lo[0] - pad[0], hi[0] + pad[0]))
    np.testing.assert_allclose(ax.get_ylim(), (lo[1] - pad[1], hi[1] + pad[1]))
