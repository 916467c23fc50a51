"""scikit-learn compatible estimators: thin shells over sparsekm's functions.

Every estimator listed in ``__all__`` is checked with
``sklearn.utils.estimator_checks.parametrize_with_checks`` in ``tests/test_common.py``.
"""

from .kernel_pca import KernelPCA, linear_pca_denoise
from .reduced_set import ReducedSetClassifier, ReducedSetRegressor, reduce_kernel_pca
from .slmc import (
    RSVM,
    SLMC,
    ModifiedRS,
    ModifiedRSVM,
    SparseKFD,
    SparseLargeMarginClassifier,
)

__all__: list[str] = [
    "KernelPCA",
    "linear_pca_denoise",
    "ReducedSetClassifier",
    "ReducedSetRegressor",
    "reduce_kernel_pca",
    "SparseLargeMarginClassifier",
    "SLMC",
    "SparseKFD",
    "RSVM",
    "ModifiedRSVM",
    "ModifiedRS",
]
