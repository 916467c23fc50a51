"""The USPS reduced-set reproductions' helpers (``sparsekm.reproduce.reduced_set``) on
small expansions: the elimination paths equal the direct selections (Pythagoras makes a
continued run exact), paths are nested with Proposition-8 coefficients, the lambda search
finds its target, and the size and error bookkeeping follows the papers' rules."""

import numpy as np
import pytest

from sparsekm import KernelExpansion
from sparsekm import reduced_set as solvers
from sparsekm.reproduce import reduced_set as rs

from ._small_cases import rbf_expansion
from ._small_cases import row_set as _rows


@pytest.fixture(scope="module")
def psi():
    return rbf_expansion()


def test_a_continued_elimination_is_pythagorean(psi):
    # Psi - Psi' is orthogonal to the span of Psi''s vectors, so for a further reduction
    # Psi'' of Psi': ||Psi - Psi''||^2 = ||Psi - Psi'||^2 + ||Psi' - Psi''||^2
    first = solvers.select_backward(psi, 9).expansion
    second = solvers.select_backward(first, 5).expansion
    total = solvers.approximation_error(psi, second)
    assert total == pytest.approx(solvers.approximation_error(psi, first)
                                  + solvers.approximation_error(first, second), rel=1e-9)


def test_the_backward_path_equals_the_direct_selections(psi):
    path = rs._backward_path(psi, [9, 5, 3])
    for n in (9, 5, 3):
        direct = solvers.select_backward(psi, n).expansion
        Z, beta = path[n]
        assert _rows(Z) == _rows(direct.vectors)
        np.testing.assert_allclose(np.ravel(beta), np.ravel(
            solvers.optimal_coefficients(psi, direct.vectors)), rtol=1e-8, atol=1e-10)


def test_the_backward_path_takes_its_sizes_in_any_order(psi):
    a, b = rs._backward_path(psi, [3, 9, 5]), rs._backward_path(psi, [9, 5, 3])
    for n in (3, 5, 9):
        np.testing.assert_array_equal(a[n][0], b[n][0])


def test_uncapped_phase_1_is_constructs_phase_1_as_far_as_construct_goes(psi):
    direct = solvers.construct(psi, 4, random_state=0).expansion.vectors
    longer = rs._phase1_uncapped(psi, 20, 0)  # past the 14 terms of psi
    assert longer.shape == (20, 3)
    np.testing.assert_allclose(longer[:4], direct, atol=1e-5)


def test_the_kernel_pca_path_is_nested_with_optimal_coefficients(psi):
    path = rs._kpca_path(psi, [10, 6, 3])
    assert sorted(path) == [3, 6, 10]
    assert _rows(path[3][0]) <= _rows(path[6][0]) <= _rows(path[10][0]) <= _rows(psi.vectors)
    for n, (Z, beta) in path.items():
        assert len(Z) == n
        # Proposition 8 against the original Psi: K^z beta = K^zx alpha
        Kz = psi.kernel(Z, Z)
        Kzx = psi.kernel(Z, psi.vectors)
        np.testing.assert_allclose(Kz @ np.ravel(beta), Kzx @ np.ravel(psi.coef),
                                   rtol=1e-8, atol=1e-10)


def test_a_size_at_or_above_the_expansion_keeps_it(psi):
    path = rs._kpca_path(psi, [20, 14])
    for n in (20, 14):
        np.testing.assert_array_equal(path[n][0], psi.vectors)


def test_the_l1_counter_counts_what_select_l1_keeps(psi):
    counter = rs._L1Counts(psi)
    for lam in (0.01, 0.1, 1.0):
        kept = solvers.select_l1(psi, lam, c="inverse", tol=1e-6, max_iter=10_000).support
        assert counter.count(lam) == len(kept)


class _Count:
    """A support size that falls as lambda grows: round(20 / (1 + lambda)), and a log."""

    def __init__(self):
        self.calls = []

    def count(self, lam):
        self.calls.append(lam)
        return int(round(20 / (1 + lam)))


def test_the_lambda_search_reaches_a_reachable_average():
    counters, memo = [_Count(), _Count()], {}
    lam, avg = rs._search_lambda(counters, 10, memo)
    assert avg == 10 and round(20 / (1 + lam)) == 10
    assert memo[lam] == 10


def test_the_lambda_search_reuses_what_it_has_tried():
    counters, memo = [_Count()], {}
    rs._search_lambda(counters, 10, memo)
    before = len(counters[0].calls)
    lam, avg = rs._search_lambda(counters, 10, memo)  # the same target again: nothing new
    assert len(counters[0].calls) == before and avg == 10
    lam, avg = rs._search_lambda(counters, 7, memo)  # a new target, from the memo's brackets
    assert avg == 7
    assert len(set(counters[0].calls)) == len(counters[0].calls)  # no lambda counted twice


def test_an_unreachable_average_gives_the_closest_and_then_the_larger_lambda():
    class Jump:  # the count jumps from 12 to 8 at lambda = 1: 10 cannot be reached
        def count(self, lam):
            return 12 if lam < 1.0 else 8

    lam, avg = rs._search_lambda([Jump()], 10, {})
    assert avg == 8 and lam >= 1.0


def test_sizes_at_an_equal_fraction_removed():
    # keep round(n * nsv_k / n_ref), at least 1 and at most nsv_k
    assert rs._fraction_sizes([100, 50, 10], 20, 50) == [40, 20, 4]
    assert rs._fraction_sizes([100, 50, 10], 200, 50) == [100, 50, 10]
    assert rs._fraction_sizes([100, 50, 10], 1, 50) == [2, 1, 1]


def test_the_papers_reduction_factor_in_our_units():
    # the paper's SVM had 254 vectors per classifier on average: n at the same factor
    assert rs._eq_factor(25, 254) == 25
    assert rs._eq_factor(25, 508) == 50
    assert rs._eq_factor(10, 127) == 5


def test_the_choice_by_training_objective_takes_the_lowest():
    options = [("a", 0.3, "x"), ("b", 0.1, "y"), ("c", 0.1, "z"), ("d", 0.2, "w")]
    assert rs._lower_is_better_choice(options) == ("b", 0.1, "y")  # first of a tie


def test_binary_errors_count_each_one_vs_rest_machine():
    F = np.array([[1.0, -1.0, -1.0], [0.5, 0.2, -1.0], [-1.0, -1.0, -1.0], [-1.0, -0.5, 2.0]])
    y = np.array([0, 1, 2, 2])
    # machine 0 wrongly says yes on row 1; machine 1 right everywhere (row 1 yes);
    # machine 2 misses row 2
    assert rs._binary_errors(F, y) == [1, 0, 1]


def test_blocks_become_one_block_diagonal_expansion(psi):
    rng = np.random.default_rng(2)
    Z1, b1 = rng.normal(size=(3, 3)), rng.normal(size=3)
    Z2, b2 = rng.normal(size=(2, 3)), rng.normal(size=2)
    E = KernelExpansion(psi.vectors, np.column_stack([psi.coef, psi.coef]), psi.kernel,
                        np.array([0.5, -0.5]))
    joint = rs._blocks_to_expansion(E, [(Z1, b1), (Z2, b2)])
    X = rng.normal(size=(4, 3))
    for k, (Z, b) in enumerate([(Z1, b1), (Z2, b2)]):
        alone = KernelExpansion(Z, b, psi.kernel, E.intercept[k])
        np.testing.assert_allclose(joint.decision_function(X)[:, k],
                                   alone.decision_function(X), rtol=1e-12)
