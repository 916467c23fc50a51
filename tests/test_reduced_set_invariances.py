"""What reduced-set selection and construction must not depend on: the order of the
expansion's terms, the scale of its coefficients (with lambda scaled alike), how many
identical outputs share one set, and which of the two L1 solvers runs; and how an L1
budget relates to its lambda."""

import numpy as np
import pytest

from sparsekm import KernelExpansion
from sparsekm.reduced_set import construct, select_backward, select_kpca, select_l1, select_l1_multi

from ._small_cases import rbf_expansion
from ._small_cases import row_set as _rows


@pytest.fixture(scope="module")
def psi():
    return rbf_expansion()


@pytest.mark.parametrize("select", [select_backward, select_kpca], ids=["backward", "kpca"])
def test_a_selection_does_not_depend_on_the_order_of_the_terms(psi, select):
    order = np.random.default_rng(1).permutation(psi.n_terms)
    shuffled = KernelExpansion(psi.vectors[order], psi.coef[order], psi.kernel, 0.0)
    a, b = select(psi, 5), select(shuffled, 5)
    assert _rows(a.expansion.vectors) == _rows(b.expansion.vectors)
    assert b.objective == pytest.approx(a.objective, rel=1e-9)


def test_scaling_the_coefficients_scales_lambda_and_keeps_the_l1_support(psi):
    # ||c alpha - c beta||^2 + (c lambda) sum |c beta| = c^2 (the problem at lambda)
    c = 7.5
    scaled = KernelExpansion(psi.vectors, c * psi.coef, psi.kernel, 0.0)
    for lam in (0.1, 0.5):
        assert sorted(select_l1(scaled, c * lam).support) == sorted(select_l1(psi, lam).support)


def test_scaling_the_coefficients_keeps_the_backward_selection(psi):
    scaled = KernelExpansion(psi.vectors, -3.0 * psi.coef, psi.kernel, 0.0)
    a, b = select_backward(psi, 6), select_backward(scaled, 6)
    assert _rows(a.expansion.vectors) == _rows(b.expansion.vectors)
    assert b.objective == pytest.approx(9.0 * a.objective, rel=1e-9)


def test_the_group_l1_solver_with_one_output_is_the_lasso(psi):
    # eq. 70-73 with a single output is eq. 66: FISTA and coordinate descent agree
    one = KernelExpansion(psi.vectors, psi.coef[:, None], psi.kernel, np.zeros(1))
    for lam in (0.05, 0.3, 1.0):
        assert sorted(select_l1_multi(one, lam).support) == sorted(select_l1(psi, lam).support)


def test_identical_outputs_share_the_set_of_one(psi):
    two = KernelExpansion(psi.vectors, np.column_stack([psi.coef, psi.coef]), psi.kernel,
                          np.zeros(2))
    shared = construct(two, 3, shared=True, random_state=0)
    single = construct(psi, 3, random_state=0)
    np.testing.assert_allclose(shared.objective, [single.objective] * 2, rtol=1e-5)
    np.testing.assert_allclose(np.sort(shared.expansion.vectors, axis=0),
                               np.sort(single.expansion.vectors, axis=0), atol=1e-3)


def test_an_l1_budget_is_met_exactly_and_its_lambda_gives_it_back(psi):
    for k in (2, 5, 9):
        res = select_l1(psi, n_vectors=k)
        assert len(res.support) == k
        if not res.info.get("completed"):  # a support on the path: lambda reproduces it
            again = select_l1(psi, res.info["lam"])
            assert sorted(again.support) == sorted(res.support)
