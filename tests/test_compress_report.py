"""compress's report and prefixes on inputs whose answer is known: the table's text, the
plot's points and lines, the old curve's dictionary, and construct_prefixes' reduced sets
(Proposition-8 coefficients of a growing prefix, exact copies beyond the terms)."""

import json
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from sparsekm import KernelExpansion  # noqa: E402
from sparsekm.compression import CompressCurve, CompressReport, construct_prefixes  # noqa: E402
from sparsekm.kernels import RBF  # noqa: E402
from sparsekm.reduced_set import optimal_coefficients, reduce_expansion  # noqa: E402

NAN = float("nan")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _row(method="construct", variant="", budget=4, n_vectors=4, val_error=0.125,
         agreement=0.9, seconds=NAN, status="ok", reason=""):
    return dict(method=method, variant=variant, budget=budget, n_vectors=n_vectors,
                val_error=val_error, agreement=agreement, seconds=seconds, status=status,
                reason=reason)


def _report(**kw):
    base = dict(mode="budget", budget=4, full_error=0.05, full_n_vectors=30,
                selection="validation data", chosen=0, messages=[], total_seconds=NAN,
                rows=[_row(status="chosen"), _row("kmeans-svm", "C=1", 4, 4, 0.25, 0.75)])
    return CompressReport({**base, **kw})


def test_table_header_names_the_original_and_what_errors_were_measured_on():
    lines = _report().table().splitlines()
    assert lines[0] == ("original machine: 30 distinct vectors, error 5.00 % on the "
                        "validation data")
    assert lines[1].split() == ["method", "variant", "budget", "vectors", "error", "agree",
                                "seconds", "status"]
    assert len(lines) == 4 and str(_report()) == _report().table()


@pytest.mark.parametrize("field, value, text", [
    ("val_error", 0.125, "12.50 %"), ("val_error", 0.0, "0.00 %"), ("val_error", 1.0,
                                                                       "100.00 %"),
    ("val_error", NAN, "–"), ("agreement", 0.5, "50.00 %"), ("agreement", NAN, "–"),
    ("seconds", 1.23456, "1.23"), ("seconds", 1234.5, "1.23e+03"), ("seconds", NAN, "–"),
])
def test_table_cells_in_percent_or_three_digits_with_a_dash_for_missing(field, value, text):
    line = _report(rows=[_row(**{field: value})]).table().splitlines()[2]
    assert text in line.split("  ") or f" {text} " in f" {line} "


@pytest.mark.parametrize("status, reason, tail", [
    ("chosen", "", "chosen"), ("refused", "needs training data", "refused: needs training data"),
    ("skipped", "time limit", "skipped: time limit"),
])
def test_table_row_ends_with_its_status_and_reason(status, reason, tail):
    line = _report(rows=[_row(status=status, reason=reason)]).table().splitlines()[2]
    assert line.endswith(tail)


def test_table_in_tolerance_mode_states_the_target_and_appends_messages_and_time():
    rep = _report(mode="tolerance", target_error=0.07, messages=["warning: a", "note: b"],
                  total_seconds=12.34)
    lines = rep.table().splitlines()
    assert lines[1] == "target: error <= 7.00 %"
    assert lines[-3:] == ["warning: a", "note: b", "total time: 12.3 s"]


def test_a_regressor_report_prints_rmse_as_numbers_not_percent():
    rep = _report(kind="regressor", metric="RMSE", full_error=0.25,
                  rows=[_row(val_error=0.5)])
    lines = rep.table().splitlines()
    assert lines[0].endswith("RMSE 0.25 on the validation data")
    assert " 0.5 " in lines[2] and "50.00 %" not in lines[2]


def test_variant_is_cut_at_22_characters():
    line = _report(rows=[_row(variant="x" * 30)]).table().splitlines()[2]
    assert "x" * 22 in line and "x" * 23 not in line


def test_plot_draws_finite_rows_in_percent_and_the_original_as_a_line():
    rows = [_row(status="chosen", n_vectors=4, val_error=0.10),
            _row("kmeans-svm", n_vectors=8, val_error=0.20),
            _row("slmc", n_vectors=6, val_error=NAN, status="failed"),
            _row("uniform-svm", n_vectors=0, val_error=0.3, status="refused")]
    fig = _report(rows=rows).plot(title="t")
    ax = fig.axes[0]
    points = [(ln.get_xdata()[0], ln.get_ydata()[0], ln.get_label()) for ln in ax.get_lines()
              if len(ln.get_xdata()) == 1]
    assert points == [(4, pytest.approx(10.0), "construct"), (4, pytest.approx(10.0), "chosen"),
                      (8, pytest.approx(20.0), "kmeans-svm")]
    original = [ln for ln in ax.get_lines() if ln.get_label() == "original (30 vectors)"]
    assert original and original[0].get_ydata()[0] == pytest.approx(5.0)
    assert ax.get_title() == "t" and ax.get_ylabel() == "error (%) on the validation data"


@pytest.mark.parametrize("mode, has_target", [("tolerance", True), ("budget", False)])
def test_plot_draws_the_target_only_in_tolerance_mode(mode, has_target):
    ax = _report(mode=mode, target_error=0.07).plot().axes[0]
    target = [ln for ln in ax.get_lines() if ln.get_label() == "target"]
    assert bool(target) == has_target
    if has_target:
        assert target[0].get_ydata()[0] == pytest.approx(7.0)


def test_plot_to_a_path_writes_a_png(tmp_path):
    out = _report().plot(tmp_path / "sub" / "r.png")
    assert out == str(tmp_path / "sub" / "r.png")
    assert (tmp_path / "sub" / "r.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("budget, error, want_b, want_e", [
    ([8, 2, 4], [0.1, 0.3, 0.2], [2, 4, 8], [0.3, 0.2, 0.1]),
    ([4, 4, 1], [0.2, 0.1, 0.5], [1, 4, 4], [0.5, 0.2, 0.1]),  # ties keep the walk's order
    ([], [], [], []),
])
def test_curve_sorted_by_budget(budget, error, want_b, want_e):
    b, e = CompressCurve(budget=budget, error=error, n_vectors=budget).sorted()
    np.testing.assert_array_equal(b, want_b)
    np.testing.assert_array_equal(e, want_e)


def test_curve_dictionary_is_json_and_rebuilds_the_curve():
    curve = CompressCurve(n_vectors=[np.int64(2)], budget=[np.int64(2)],
                          error=[np.float32(0.25)], full_error=0.1, full_budget=np.int64(9),
                          target_error=0.12, chosen=0, met=False, search="refit")
    d = json.loads(json.dumps(curve.as_dict()))
    assert d == {"n_vectors": [2], "budget": [2], "error": [0.25], "full_error": 0.1,
                 "full_budget": 9, "target_error": 0.12, "chosen": 0, "met": False,
                 "search": "refit"}
    assert CompressCurve(**d) == CompressCurve(**curve.as_dict())
    assert math.isnan(CompressCurve().full_error) and CompressCurve().chosen == -1


# -- construct_prefixes ------------------------------------------------------------------
@pytest.fixture(scope="module")
def psi():
    rng = np.random.default_rng(0)
    return KernelExpansion(rng.normal(size=(12, 2)), rng.normal(size=12), RBF(0.5), 0.3)


@pytest.fixture(scope="module")
def prefix(psi):
    return construct_prefixes(psi, 6, n_init=2, max_iter=50, random_state=0)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 6])
def test_a_prefix_carries_the_proposition_8_coefficients_of_its_vectors(psi, prefix, m):
    small = prefix(m)
    assert small.n_terms == m and small.intercept == psi.intercept
    Z = np.asarray(small.vectors)
    np.testing.assert_allclose(small.coef, optimal_coefficients(psi, Z), rtol=1e-8,
                               atol=1e-10)
    if m > 1:  # the first m - 1 vectors are the previous prefix's
        np.testing.assert_array_equal(Z[:-1], np.asarray(prefix(m - 1).vectors))


def test_prefix_errors_never_grow_with_m(psi, prefix):
    errors = [psi.distance2(prefix(m)) for m in range(1, 7)]
    assert np.all(np.diff(errors) <= 1e-9 * psi.norm2())
    assert errors[-1] < errors[0]


@pytest.mark.parametrize("m", [12, 20])
def test_a_prefix_with_every_term_is_the_expansion_itself(psi, prefix, m):
    small = prefix(m)
    np.testing.assert_array_equal(small.vectors, psi.vectors)
    np.testing.assert_array_equal(small.coef, psi.coef)


@pytest.mark.parametrize("m", [2, 4])
def test_a_prefix_equals_the_construction_of_that_size(psi, prefix, m):
    """Documented: up to rounding, prefix(m) = reduce_expansion(psi, m, "construct")."""
    full = reduce_expansion(psi, m, method="construct", n_init=2, max_iter=50, random_state=0)
    X = np.random.default_rng(1).normal(size=(25, 2))
    np.testing.assert_allclose(prefix(m).decision_function(X),
                               full.expansion.decision_function(X), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, float("nan")])
def test_prefix_sizes_are_positive_integers(psi, prefix, bad):
    with pytest.raises(ValueError, match=r"'m' parameter of prefix must be an int >= 1"):
        prefix(bad)
    with pytest.raises(ValueError, match=r"'n_max' parameter of construct_prefixes"):
        construct_prefixes(psi, bad)


def test_an_empty_report_still_renders():
    rep = CompressReport({})
    assert rep.rows == []
    lines = rep.table().splitlines()
    assert lines[0] == "original machine: 0 distinct vectors, error – on the validation"
    assert len(lines) == 2  # the header of an empty table


@pytest.mark.parametrize("kind, scale, label", [
    ("regressor", 1.0, "RMSE on the validation data"),
    ("classifier", 100.0, "error (%) on the validation data")])
def test_plot_scale_follows_what_the_report_measures(kind, scale, label):
    metric = "RMSE" if kind == "regressor" else "error"
    rep = _report(kind=kind, metric=metric, rows=[_row(status="chosen", val_error=0.25)])
    ax = rep.plot().axes[0]
    assert ax.get_lines()[0].get_ydata()[0] == pytest.approx(0.25 * scale)
    assert ax.get_ylabel() == label


def test_a_regressor_target_is_printed_as_a_number():
    rep = _report(kind="regressor", metric="RMSE", mode="tolerance", target_error=0.3)
    assert rep.table().splitlines()[1] == "target: error <= 0.3"
