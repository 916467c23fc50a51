"""Reduced-set inputs that are refused (with what to do instead) and the shapes of
multi-output results: a shared selection for Psi and -Psi is the selection for Psi,
separate constructions are block-diagonal, shared coefficients are linear across
proportional outputs, and an all-zero expansion reduces to nothing without a warning."""

import warnings

import numpy as np
import pytest

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF, Laplacian
from sparsekm.reduced_set import (
    ReducedSetWarning,
    approximation_error,
    construct,
    reduce_expansion,
    select_backward,
    select_kpca,
    select_l1,
    select_l1_multi,
)

from ._small_cases import rbf_expansion
from ._small_cases import row_set as _rows


@pytest.fixture(scope="module")
def psi():
    return rbf_expansion()


def _outputs(psi, *scales):
    a = np.ravel(psi.coef)
    return KernelExpansion(psi.vectors, np.column_stack([s * a for s in scales]), psi.kernel,
                           np.zeros(len(scales)))


# -- refusals -------------------------------------------------------------------------------
def test_l1_weights_must_be_positive_one_per_vector(psi):
    for c in (-np.ones(14), np.r_[0.0, np.ones(13)], np.ones(5)):
        with pytest.raises(ValueError, match="c must hold 14 positive weights"):
            select_l1(psi, 0.1, c=c)


def test_inverse_weights_are_mean_over_each_coefficient(psi):
    a = np.abs(np.ravel(psi.coef))
    assert sorted(select_l1(psi, 0.3, c="inverse").support) == sorted(
        select_l1(psi, 0.3, c=a.mean() / a).support)


def test_l1_takes_exactly_one_of_lambda_and_a_budget(psi):
    for kw in (dict(lam=0.1, n_vectors=3), {}):
        with pytest.raises(ValueError, match="needs exactly one of lam and n_vectors"):
            select_l1(psi, **kw)


def test_single_output_l1_points_several_outputs_to_the_group_version(psi):
    with pytest.raises(ValueError, match="use select_l1_multi"):
        select_l1(_outputs(psi, 1, -1), 0.1)


def test_distances_between_expansions_of_different_kernels_are_refused(psi):
    for other in (RBF(0.5), Laplacian(0.6)):
        with pytest.raises(ValueError, match=r"different kernels: RBF\(gamma=0.6\) and"):
            approximation_error(psi, KernelExpansion(psi.vectors, psi.coef, other, 0.0))


def test_distances_between_different_input_dimensions_are_refused(psi):
    flat = KernelExpansion(psi.vectors[:, :2], psi.coef, psi.kernel, 0.0)
    with pytest.raises(ValueError, match="different numbers of features: 3 and 2"):
        approximation_error(psi, flat)


def test_what_is_no_expansion_is_a_type_error(psi):
    with pytest.raises(TypeError, match="approximation_error needs a sparsekm.KernelExpansion"):
        approximation_error(psi, np.ones((3, 3)))


def test_the_torch_backend_without_torch_names_the_extra(psi):
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("torch is installed")
    with pytest.raises(ImportError, match=r"backend='torch' needs PyTorch: pip install "
                                          r"'sparsekm\[torch\]'"):
        construct(psi, 2, backend="torch")


# -- multi-output shapes --------------------------------------------------------------------
@pytest.mark.parametrize("select", [select_backward, select_kpca], ids=["backward", "kpca"])
def test_a_shared_selection_for_psi_and_minus_psi_is_the_selection_for_psi(psi, select):
    # both outputs have the same error for every kept set: the sum is twice one
    shared, single = select(_outputs(psi, 1, -1), 5), select(psi, 5)
    assert _rows(shared.expansion.vectors) == _rows(single.expansion.vectors)
    np.testing.assert_allclose(shared.objective, [single.objective] * 2, rtol=1e-8)


def test_separate_constructions_are_block_diagonal(psi):
    result = construct(_outputs(psi, 1, -0.5), 3, shared=False, random_state=0)
    coef = np.asarray(result.expansion.coef)
    assert coef.shape == (6, 2)
    assert ((coef != 0).sum(axis=0) == 3).all() and ((coef != 0).sum(axis=1) == 1).all()


def test_proportional_outputs_get_proportional_shared_coefficients(psi):
    result = construct(_outputs(psi, 1, 2), 3, shared=True, random_state=0)
    coef = np.asarray(result.expansion.coef)
    np.testing.assert_allclose(coef[:, 1], 2 * coef[:, 0], rtol=1e-9)
    np.testing.assert_allclose(result.relative_objective[1], result.relative_objective[0],
                               rtol=1e-9)


def test_sharing_is_moot_for_one_output(psi):
    a = reduce_expansion(psi, 4, method="construct", shared=True, random_state=0)
    b = reduce_expansion(psi, 4, method="construct", shared=False, random_state=0)
    np.testing.assert_array_equal(a.expansion.vectors, b.expansion.vectors)


def test_a_penalty_that_keeps_nothing_keeps_the_single_best_vector(psi):
    two = _outputs(psi, 1, 0.5)
    K = psi.kernel(psi.vectors, psi.vectors)
    A = np.asarray(two.coef)
    # error of keeping only x_i (Prop. 8 per output): sum_k ||Psi_k||^2 - (K A)_ik^2 / K_ii
    err = np.einsum("ik,ik->k", A, K @ A)[None, :] - (K @ A) ** 2 / np.diag(K)[:, None]
    with pytest.warns(ReducedSetWarning, match="no vector was selected; keeping the single best"):
        result = select_l1_multi(two, 1e6)
    assert result.support.tolist() == [int(np.argmin(err.sum(axis=1)))]


def test_an_all_zero_expansion_reduces_to_zero_error_quietly(psi):
    zero = KernelExpansion(psi.vectors, np.zeros(psi.n_terms), psi.kernel, 0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = construct(zero, 2, random_state=0)
    assert result.objective == 0.0 and result.norm2 == 0.0
    X = np.random.default_rng(0).normal(size=(4, 3))
    np.testing.assert_allclose(result.expansion.decision_function(X), 0.25)
