"""Approximations of the training set (greedy basis) and randomized kernels."""

from .greedy import GreedyBasis, greedy_basis, pivoted_cholesky
from .nystroem import nystroem_features, nystroem_normalization
from .randomized import (
    ProjectedKernel,
    QuantizedGram,
    RandomProjection,
    ThreadedCSROperator,
    davis_kahan_residual_bound,
    estimate_error_norm,
    gram_error_norm,
    orthogonal_iteration,
    quantize_gram,
    randomized_rounding,
    sparsify_gram,
    sparsify_quantize_gram,
    theorem5_s,
    theorem6_s,
)
from .ridge import (
    RidgeOnLandmarks,
    nystroem_landmarks,
    nystroem_map,
    nystroem_ridge,
    ridge_on_landmarks,
)

__all__: list[str] = [
    "GreedyBasis",
    "greedy_basis",
    "pivoted_cholesky",
    "nystroem_features",
    "nystroem_normalization",
    "ProjectedKernel",
    "QuantizedGram",
    "RandomProjection",
    "ThreadedCSROperator",
    "davis_kahan_residual_bound",
    "estimate_error_norm",
    "gram_error_norm",
    "orthogonal_iteration",
    "quantize_gram",
    "randomized_rounding",
    "sparsify_gram",
    "sparsify_quantize_gram",
    "RidgeOnLandmarks",
    "nystroem_landmarks",
    "nystroem_map",
    "nystroem_ridge",
    "ridge_on_landmarks",
    "theorem5_s",
    "theorem6_s",
]
